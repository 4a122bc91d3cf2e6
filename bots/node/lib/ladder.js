'use strict';
/**
 * Plays on the ladder: registers the bot's name when it has no key yet, enters
 * the ladder (Ladder.Enter) and plays every Assignment while staying on the
 * stream for the next one: on the server's PlayMatches call (lib/table.js), one
 * match after another, or with the seat loop (Join and Play) when that call is
 * busy with another match, has failed mid-match, or the server has none.
 */

const {
  backoffMs, grpc, isRetryable, metadataWith, sleep, statusName, unary,
} = require('./arena');
const { SeatError, playSeat, seatProgress } = require('./seat');
const { Table } = require('./table');

/**
 * Returns `{name, key}` for a newly registered bot name; rejects with a
 * SeatError when the server refuses it (ALREADY_EXISTS when the name is taken).
 */
async function register({ arena, target, credentials, name }) {
  const client = new arena.Ladder(target, credentials);
  try {
    return await unary(client, 'Register', { name });
  } catch (error) {
    if (error.code === undefined) throw error;
    throw new SeatError(`cannot register ${JSON.stringify(name)}: ${statusName(error.code)}: ${error.details}`, error.code);
  } finally {
    client.close();
  }
}

/**
 * Returns the end of an assigned seat's match (as playSeat's), or null when
 * `signal` stopped it first. It takes the seat on `table` (the assignment's
 * server's PlayMatches call) when that is free; when the table is busy with
 * another match, the server has no PlayMatches, or the call fails mid-match, it
 * plays the match (resumed from the last sequence the call saw) with Join and
 * Play. Rejects with a SeatError as playSeat does.
 */
async function playAssigned({
  table, arena, credentials, token, name, log, signal, retryForMs, trace, chooser,
}) {
  const progress = seatProgress();
  if (!table.busy && !table.unsupported) {
    try {
      const end = await table.play({ token, name, progress, log, signal, trace, chooser });
      if (end !== null || signal.aborted) return end;
      log.warn('stream_closed', { call: 'PlayMatches', after_sequence: progress.lastSequence });
    } catch (error) {
      if (error.code === undefined) throw error; // not a gRPC status
      if (error.code === grpc.status.UNIMPLEMENTED) {
        // A server older than PlayMatches: a Play call per match from now on.
        table.unsupported = true;
        log.info('play_matches_unsupported', { server: table.target });
      } else if (!isRetryable(error)) {
        throw new SeatError(`${statusName(error.code)}: ${error.details || error.message}`, error.code);
      } else {
        log.warn('connection_lost', {
          call: 'PlayMatches', reason: `${statusName(error.code)}: ${error.details || error.message}`,
          after_sequence: progress.lastSequence,
        });
      }
    }
  }
  // Resumed (or, with the table busy, played) on a Play call of its own.
  return playSeat({
    arena, target: table.target, credentials, token, name, log, signal, retryForMs, trace,
    chooser, progress,
  });
}

/**
 * Returns the number of assigned matches played once the bot has left the
 * ladder: when `leave` aborts (matches in progress are played to their end),
 * after `matches` assignments when that is set, or when `quit` aborts (matches
 * in progress are dropped). Rejects with a SeatError when the server refuses the
 * bot (unknown name or wrong key) or stays unreachable for `retryForMs`. The bot
 * enters as `version` of `name` ('': the ladder's default version).
 */
async function playLadder({
  arena, target, credentials, name, key, log, leave, quit, matches = 0, retryForMs = 60000,
  trace = () => {}, chooser = null, version = '',
}) {
  const client = new arena.Ladder(target, credentials);
  const metadata = metadataWith('bot-key', key);
  const leaving = new AbortController();
  const stopLeaving = () => leaving.abort();
  leave.addEventListener('abort', stopLeaving, { once: true });
  quit.addEventListener('abort', stopLeaving, { once: true });
  const running = new Set();
  // One PlayMatches call per server the assignments name.
  const tables = new Map();
  const tableAt = (host) => {
    if (!tables.has(host)) tables.set(host, new Table({ arena, target: host, credentials, log }));
    return tables.get(host);
  };
  let assigned = 0;
  let played = 0;
  let failingSince = null;
  let attempt = 0;

  const play = (assignment) => {
    assigned += 1;
    const seatLog = log.bind({ match: assignment.match_id, seat: assignment.seat });
    // Another host of the ladder may run the match (host_address): play there, with
    // the same credentials; empty means the server the bot entered through.
    const host = assignment.host_address || target;
    seatLog.info('assigned', { players: assignment.players, assignment: assigned, host });
    const game = playAssigned({
      table: tableAt(host), arena, credentials, token: assignment.seat_token, name, log: seatLog, signal: quit,
      retryForMs, trace, chooser,
    })
      .then((end) => { if (end !== null) played += 1; })
      .catch((error) => seatLog.error('seat_lost', { reason: error.message }))
      .finally(() => running.delete(game));
    running.add(game);
    if (matches > 0 && assigned >= matches) leaving.abort();
  };

  try {
    while (!leaving.signal.aborted) {
      let failure = 'ladder stream closed';
      try {
        await new Promise((resolve, reject) => {
          const call = client.Enter({ name, version }, metadata);
          const onLeave = () => {
            call.cancel();
            resolve();
          };
          leaving.signal.addEventListener('abort', onLeave, { once: true });
          call.on('data', (assignment) => {
            failingSince = null;
            attempt = 0;
            // No match: a notice of why the bot waits (the ladder paused); it stays entered.
            if (!assignment.match_id) {
              log.info('ladder_notice', { notice: assignment.waiting });
              return;
            }
            if (!leaving.signal.aborted) play(assignment);
          });
          call.on('error', (error) => {
            leaving.signal.removeEventListener('abort', onLeave);
            reject(error);
          });
          call.on('end', () => {
            leaving.signal.removeEventListener('abort', onLeave);
            resolve();
          });
        });
        if (!leaving.signal.aborted) log.info('ladder_closed');
      } catch (error) {
        if (leaving.signal.aborted) break;
        if (error.code === undefined) throw error; // not a gRPC status
        if (!isRetryable(error)) {
          throw new SeatError(`ladder refused ${JSON.stringify(name)}: ${statusName(error.code)}: ${error.details}`, error.code);
        }
        failure = `${statusName(error.code)}: ${error.details}`;
      }
      if (leaving.signal.aborted) break;

      // Enter again after a pause; give up when the server stays away too long.
      failingSince ??= Date.now();
      if (Date.now() - failingSince > retryForMs) {
        throw new SeatError(`gave up after ${Math.round(retryForMs / 1000)} s without the ladder (${failure})`);
      }
      const pauseMs = backoffMs(attempt);
      attempt += 1;
      log.warn('reentering', { reason: failure, pause_ms: pauseMs });
      await sleep(pauseMs, leaving.signal);
    }
    log.info('left_ladder', { in_progress: running.size });
    await Promise.all(running);
    return played;
  } finally {
    leave.removeEventListener('abort', stopLeaving);
    quit.removeEventListener('abort', stopLeaving);
    for (const table of tables.values()) table.close();
    client.close();
  }
}

module.exports = { playLadder, register };
