#!/usr/bin/env node
'use strict';
/**
 * A Mamma Mia! arena bot in Node.js, written against the .proto files alone.
 *
 *   node bots/node/bot.js --server ADDR --token TOKEN
 *   node bots/node/bot.js --server ADDR --ladder --name NAME --key-file FILE
 *
 * See `--help` and docs/protocol.md.
 */

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { channelCredentials, loadArena } = require('./lib/arena');
const { SeatError, playSeat } = require('./lib/seat');
const { playLadder, register } = require('./lib/ladder');
const { logger } = require('./lib/log');
const { connectRules } = require('./lib/rules');
const { DEFAULTS: SEARCH, searchChooser } = require('./lib/search');

const USAGE = `usage: node bots/node/bot.js --server ADDR --token TOKEN [options]
       node bots/node/bot.js --server ADDR --ladder --name NAME [--key-file FILE] [options]

Plays Mamma Mia! on an arena server: one seat of one match (--token), or every
match the ladder assigns (--ladder). It plays an order when the public oven
suffices for it, else its most plentiful ingredient, and bakes when it can.
One line per decision goes to stderr.

options:
  --server ADDR      the server, host:port (env MAMMAMIA_SERVER)
  --token TOKEN      the seat token of one match (env MAMMAMIA_SEAT_TOKEN)
  --name NAME        the bot's name (default: node-bot; the ladder name with --ladder)
  --ladder           enter the ladder and play each assigned match
  --key-file FILE    the file of the ladder bot's secret key: read when it exists,
                     else the name is registered first and its new key written
                     there (readable by its owner alone)
  --key KEY          the key itself (env MAMMAMIA_BOT_KEY), instead of --key-file;
                     without either the name is registered first and its new key
                     printed on stdout
  --matches N        with --ladder: leave the ladder after N assignments
  --version V        with --ladder: the version that enters, rated apart from the
                     name's other versions (default: the first 12 hex digits of the
                     SHA-256 of bot.js and lib/*.js, in that order)
  --tls              connect with TLS, trusting the system's certificates
  --ca FILE          connect with TLS, trusting the PEM certificates in FILE
                     (--tls-ca FILE is the same, as every kit's starter bot spells it)
  --retry-for SEC    give up after SEC seconds without the server (default 60)
  --trace FILE       append every Play message sent and received to FILE, as
                     JSON lines (the messages as decoded, defaults included)
  --search           decide by flat Monte Carlo over a Rules service (sampled
                     deals played out to the end) instead of the default policy
  --search-ms MS     with --search: time per decision (default ${SEARCH.budgetMs}; never
                     more than half the time the server gives)
  --search-policy P  with --search: the playout policy: random, greedy or
                     counter (default ${SEARCH.policy})
  --rules ADDR       with --search: the Rules service, host:port (env
                     MAMMAMIA_RULES); without it the bot starts one with
                     \`mammamia rules-serve\` and stops it when done
  --rules-command C  the command that starts it (default mammamia; env
                     MAMMAMIA_RULES_COMMAND; split at spaces)
  -h, --help         show this help and exit

exit status: 0 when the match finished (with --ladder: when the bot left the
ladder), 1 when the server refused the bot, stayed away or aborted the match,
2 for a bad command line, 130 when interrupted.`;

const OPTIONS = {
  server: { type: 'string' },
  token: { type: 'string' },
  name: { type: 'string' },
  ladder: { type: 'boolean', default: false },
  key: { type: 'string' },
  'key-file': { type: 'string' },
  matches: { type: 'string' },
  version: { type: 'string' },
  tls: { type: 'boolean', default: false },
  ca: { type: 'string' },
  'tls-ca': { type: 'string' },
  'retry-for': { type: 'string' },
  trace: { type: 'string' },
  search: { type: 'boolean', default: false },
  'search-ms': { type: 'string' },
  'search-policy': { type: 'string' },
  rules: { type: 'string' },
  'rules-command': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
};

/**
 * Returns the bot's default ladder version: the first 12 hex digits of the SHA-256
 * of this file and of lib/*.js in name order (their bytes as stored).
 */
function codeVersion() {
  const hash = crypto.createHash('sha256');
  hash.update(fs.readFileSync(__filename));
  const lib = path.join(__dirname, 'lib');
  for (const file of fs.readdirSync(lib).filter((f) => f.endsWith('.js')).sort()) {
    hash.update(fs.readFileSync(path.join(lib, file)));
  }
  return hash.digest('hex').slice(0, 12);
}

/** An error in the command line: printed with the usage hint, exit status 2. */
class UsageError extends Error {}

/** Returns the checked settings from the command line and environment; throws UsageError. */
function settingsFrom(argv, env) {
  let values;
  try {
    ({ values } = parseArgs({ args: joinValues(argv), options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (error) {
    throw new UsageError(error.message);
  }
  if (values.help) return { help: true };
  const settings = {
    server: values.server || env.MAMMAMIA_SERVER,
    token: values.token || env.MAMMAMIA_SEAT_TOKEN,
    name: values.name,
    ladder: values.ladder,
    key: values.key || env.MAMMAMIA_BOT_KEY,
    keyFile: values['key-file'],
    matches: nonNegative('--matches', values.matches, 0),
    version: values.version,
    retryForMs: nonNegative('--retry-for', values['retry-for'], 60) * 1000,
    tls: values.tls,
    ca: values.ca ?? values['tls-ca'],
    trace: values.trace,
    search: values.search,
    searchMs: nonNegative('--search-ms', values['search-ms'], SEARCH.budgetMs),
    searchPolicy: values['search-policy'] || SEARCH.policy,
    rules: values.rules || env.MAMMAMIA_RULES,
    rulesCommand: (values['rules-command'] || env.MAMMAMIA_RULES_COMMAND || 'mammamia').split(/\s+/).filter(Boolean),
  };
  if (!settings.search && (values['search-ms'] || values['search-policy'] || values.rules)) {
    throw new UsageError('--search-ms, --search-policy and --rules go with --search');
  }
  if (!['random', 'greedy', 'counter'].includes(settings.searchPolicy)) {
    throw new UsageError(`--search-policy must be random, greedy or counter, not ${JSON.stringify(settings.searchPolicy)}`);
  }
  if (!settings.server) throw new UsageError('--server ADDR is required (or MAMMAMIA_SERVER)');
  if (settings.ca && !fs.existsSync(settings.ca)) throw new UsageError(`--ca ${settings.ca}: no such file`);
  if (settings.ladder) {
    if (!settings.name) throw new UsageError('--ladder needs --name NAME');
    if (values.key && settings.keyFile) throw new UsageError('give --key or --key-file, not both');
    if (settings.keyFile) settings.key = undefined; // the file's key, not MAMMAMIA_BOT_KEY
    if (settings.version !== undefined && !/^[A-Za-z0-9._+-]{0,32}$/.test(settings.version)) {
      throw new UsageError(`--version must be up to 32 letters, digits, '-', '_', '.' or '+', not ${JSON.stringify(settings.version)}`);
    }
    settings.version ??= codeVersion();
  } else {
    if (!settings.token) throw new UsageError('--token TOKEN is required (or --ladder)');
    if (settings.matches) throw new UsageError('--matches goes with --ladder');
    if (settings.version !== undefined) throw new UsageError('--version goes with --ladder');
    if (settings.keyFile) throw new UsageError('--key-file goes with --ladder');
    settings.name ??= 'node-bot';
  }
  return settings;
}

/**
 * Returns `argv` with each string option joined to its value (`--token X` as
 * `--token=X`), since seat tokens and keys are URL-safe text that may begin
 * with '-', which parseArgs would otherwise take for an option.
 */
function joinValues(argv) {
  const joined = [];
  for (let i = 0; i < argv.length; i += 1) {
    const option = OPTIONS[argv[i].replace(/^--/, '')];
    if (argv[i].startsWith('--') && option && option.type === 'string' && i + 1 < argv.length) {
      joined.push(`${argv[i]}=${argv[i + 1]}`);
      i += 1;
    } else {
      joined.push(argv[i]);
    }
  }
  return joined;
}

/** Returns `text` as a non-negative number, `fallback` when absent; throws UsageError naming `option`. */
function nonNegative(option, text, fallback) {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) throw new UsageError(`${option} must be a non-negative number, not ${JSON.stringify(text)}`);
  return value;
}

/** Returns `trace(direction, message)`, appending JSON lines to `file` (a no-op without one). */
function tracer(file) {
  if (!file) return () => {};
  const fd = fs.openSync(file, 'a');
  return (direction, message) => {
    fs.writeSync(fd, `${JSON.stringify({ time: new Date().toISOString(), direction, message })}\n`);
  };
}

/**
 * Returns the ladder key held in `file`; when there is no such file, registers
 * `name` and writes its new key there first (created before the name is
 * registered, mode 0600, so that a file that cannot be written costs no name).
 * Rejects with a SeatError when the file cannot be read or written or the server
 * refuses the name.
 */
async function keyFromFile({ arena, target, credentials, name, file, log }) {
  let fd;
  try {
    fd = fs.openSync(file, 'wx', 0o600);
  } catch (error) {
    if (error.code !== 'EEXIST') throw new SeatError(`cannot create --key-file ${JSON.stringify(file)}: ${error.message}`);
    let text;
    try {
      text = fs.readFileSync(file, 'utf8').trim();
    } catch (readError) {
      throw new SeatError(`cannot read --key-file ${JSON.stringify(file)}: ${readError.message}`);
    }
    if (!text) throw new SeatError(`--key-file ${JSON.stringify(file)} is empty: remove it to register the name again`);
    return text;
  }
  let key;
  try {
    ({ key } = await register({ arena, target, credentials, name }));
  } catch (error) {
    fs.closeSync(fd);
    fs.unlinkSync(file); // nothing registered: leave no empty key file
    throw error;
  }
  fs.writeSync(fd, `${key}\n`);
  fs.closeSync(fd);
  log.info('registered', { key_file: file });
  return key;
}

/** Returns the process exit status after playing as `settings` say. */
async function main(settings) {
  const log = logger({ bot: settings.name });
  const arena = loadArena();
  const credentials = channelCredentials(settings);
  const target = settings.server;
  const trace = tracer(settings.trace);
  let rules = null;
  let chooser = null;
  if (settings.search) {
    rules = await connectRules({ address: settings.rules, command: settings.rulesCommand, log });
    chooser = searchChooser({ rules, budgetMs: settings.searchMs, policy: settings.searchPolicy });
    log.info('searching', { rules: rules.address, budget_ms: settings.searchMs, policy: settings.searchPolicy });
  }

  // First signal: leave the ladder and finish the matches in progress (a lone
  // seat stops at once). Second signal: stop everything now.
  const leave = new AbortController();
  const quit = new AbortController();
  let interrupted = false;
  const onSignal = (signal) => {
    interrupted = true;
    log.warn('stopping', { signal });
    if (settings.ladder && !leave.signal.aborted) leave.abort();
    else quit.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    if (!settings.ladder) {
      const end = await playSeat({
        arena, target, credentials, token: settings.token, name: settings.name, log, signal: quit.signal,
        retryForMs: settings.retryForMs, trace, chooser,
      });
      if (end === null) return 130;
      return end.status === 'finished' ? 0 : 1;
    }
    let { key } = settings;
    if (settings.keyFile) {
      key = await keyFromFile({ arena, target, credentials, name: settings.name, file: settings.keyFile, log });
    } else if (!key) {
      ({ key } = await register({ arena, target, credentials, name: settings.name }));
      process.stdout.write(`${JSON.stringify({ name: settings.name, key })}\n`);
      log.info('registered', { note: 'the key on stdout is shown only once' });
    }
    const played = await playLadder({
      arena, target, credentials, name: settings.name, version: settings.version, key, log,
      leave: leave.signal, quit: quit.signal,
      matches: settings.matches, retryForMs: settings.retryForMs, trace, chooser,
    });
    log.info('done', { matches: played });
    return quit.signal.aborted && interrupted ? 130 : 0;
  } catch (error) {
    if (!(error instanceof SeatError)) throw error;
    log.error('stopped', { reason: error.message });
    return 1;
  } finally {
    if (rules !== null) rules.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

if (require.main === module) {
  let settings;
  try {
    settings = settingsFrom(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`node-bot: ${error.message}\n${USAGE.split('\n\n')[0]}\n`);
    process.exit(2);
  }
  if (settings.help) {
    process.stdout.write(`${USAGE}\n`);
  } else {
    main(settings).then((status) => { process.exitCode = status; }, (error) => {
      process.stderr.write(`${error.stack || error}\n`);
      process.exitCode = 1;
    });
  }
}

module.exports = { main, settingsFrom };
