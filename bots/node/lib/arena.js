'use strict';
/**
 * The wire contract, loaded at run time from the project's .proto files (no
 * generated code), and the gRPC plumbing shared by the seat and ladder loops.
 */

const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

/** The root of the project's .proto files (imports are relative to it). */
const PROTO_ROOT = path.resolve(__dirname, '..', '..', '..', 'protos');

/** The contract file, relative to PROTO_ROOT. */
const PROTO_FILE = 'mammamia/v1/arena.proto';

// Field names as in the .proto (decision_id), enums as their names, uint64 as
// Number (sequence numbers stay far below 2^53), and `oneofs` names the member
// set (`event.event === 'decision'`), which is how the loops dispatch.
const LOADER_OPTIONS = Object.freeze({
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
});

/** Returns the `mammamia.v1` package: service constructors (Seat, Ladder, ...) and types. */
function loadArena() {
  const definition = protoLoader.loadSync(PROTO_FILE, LOADER_OPTIONS);
  return grpc.loadPackageDefinition(definition).mammamia.v1;
}

/**
 * Returns channel credentials: plaintext by default, TLS with the system's roots
 * when `tls`, or TLS trusting the PEM certificates in the file `ca`.
 */
function channelCredentials({ tls = false, ca = null } = {}) {
  if (ca) return grpc.credentials.createSsl(fs.readFileSync(ca));
  if (tls) return grpc.credentials.createSsl();
  return grpc.credentials.createInsecure();
}

/** Returns call metadata holding one key (`seat-token`, `bot-key`, ...). */
function metadataWith(key, value) {
  const metadata = new grpc.Metadata();
  metadata.set(key, value);
  return metadata;
}

/** Returns a promise of a unary call's response; rejects with the call's status error. */
function unary(client, method, request, metadata = new grpc.Metadata()) {
  return new Promise((resolve, reject) => {
    client[method](request, metadata, (error, response) => (error ? reject(error) : resolve(response)));
  });
}

// Statuses after which the same call may succeed later: the server restarting,
// the connection dropping, the server draining or shedding load.
const RETRYABLE = new Set([
  grpc.status.CANCELLED,
  grpc.status.UNKNOWN,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.ABORTED,
  grpc.status.INTERNAL,
  grpc.status.UNAVAILABLE,
]);

/** Returns true when a failed call is worth retrying after a pause. */
function isRetryable(error) {
  return error !== null && typeof error === 'object' && RETRYABLE.has(error.code);
}

/** Returns the name of a gRPC status code (e.g. 'UNAVAILABLE'). */
function statusName(code) {
  return Object.keys(grpc.status).find((name) => grpc.status[name] === code) || String(code);
}

/**
 * Returns a promise that resolves after `ms` milliseconds, or at once when
 * `signal` aborts.
 */
function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal && signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      if (signal) signal.removeEventListener('abort', done);
      resolve();
    }
    if (signal) signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Returns the pauses between reconnection attempts: exponential from 100 ms,
 * capped at 2 s, with jitter so that many bots do not retry in step.
 */
function backoffMs(attempt) {
  const base = Math.min(2000, 100 * 2 ** attempt);
  return Math.round(base * (0.5 + Math.random() / 2));
}

module.exports = {
  PROTO_FILE,
  PROTO_ROOT,
  backoffMs,
  channelCredentials,
  grpc,
  isRetryable,
  loadArena,
  metadataWith,
  sleep,
  statusName,
  unary,
};
