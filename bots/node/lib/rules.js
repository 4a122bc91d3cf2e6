'use strict';
/**
 * The Rules service (protos/mammamia/v1/rules.proto), loaded at run time like the
 * arena contract: a client of a `mammamia rules-serve` the bot connects to, or
 * starts beside itself and stops when it is done.
 *
 * rules.proto imports arena.proto as `mammamia_pb/arena.proto` (the include path
 * the Python build maps onto protos/mammamia/v1); `proto/mammamia_pb` is a link
 * to that folder, so the same import resolves here.
 */

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { sleep, unary } = require('./arena');

/** The include folder that maps `mammamia_pb/` onto the project's contract. */
const RULES_INCLUDE = path.resolve(__dirname, '..', 'proto');

const LOADER_OPTIONS = Object.freeze({
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [RULES_INCLUDE],
});

/** How long a started service may take to write its port file. */
const START_TIMEOUT_MS = 30000;

/** Returns the `mammamia.v1` package as rules.proto defines it (the Rules service and types). */
function loadRules() {
  const definition = protoLoader.loadSync('mammamia_pb/rules.proto', LOADER_OPTIONS);
  return grpc.loadPackageDefinition(definition).mammamia.v1;
}

/**
 * Returns `{call(method, request), close()}` on a Rules service: the one at
 * `address` when given, else one started with `command` (an argv array, e.g.
 * ['mammamia']) as `COMMAND rules-serve --port 0 --port-file FILE`, stopped by
 * close(). Rejects when a started service does not come up in time.
 */
async function connectRules({ address = null, command = ['mammamia'], log }) {
  let child = null;
  let directory = null;
  if (!address) {
    directory = fs.mkdtempSync(path.join(os.tmpdir(), 'mammamia-rules-'));
    const portFile = path.join(directory, 'port');
    child = spawn(command[0], [...command.slice(1), 'rules-serve', '--port', '0', '--port-file', portFile,
      '--log-format', 'json'], { stdio: ['ignore', 'ignore', 'inherit'] });
    let exited = null;
    child.on('exit', (code) => { exited = code ?? 'signal'; });
    child.on('error', (error) => { exited = error.message; });
    const started = Date.now();
    while (!fs.existsSync(portFile)) {
      if (exited !== null) throw new Error(`rules-serve exited before serving (${exited})`);
      if (Date.now() - started > START_TIMEOUT_MS) {
        child.kill();
        throw new Error(`rules-serve did not start within ${START_TIMEOUT_MS / 1000} s`);
      }
      await sleep(50);
    }
    address = `127.0.0.1:${fs.readFileSync(portFile, 'utf8').trim()}`;
    log.info('rules_started', { address, pid: child.pid });
  }
  const Rules = loadRules().Rules;
  const client = new Rules(address, grpc.credentials.createInsecure());
  return {
    address,
    call: (method, request) => unary(client, method, request),
    close: () => {
      client.close();
      if (child !== null && child.exitCode === null) child.kill('SIGTERM');
      if (directory !== null) fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

module.exports = { connectRules, loadRules };
