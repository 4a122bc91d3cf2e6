'use strict';
/**
 * Plays on the ladder: registers the bot's name when it has no key yet, enters
 * the ladder (Ladder.Enter) and plays every Assignment with the seat loop while
 * staying on the stream for the next one.
 */

const { backoffMs, isRetryable, metadataWith, sleep, statusName, unary } = require('./arena');
const { SeatError, playSeat } = require('./seat');

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
 * Returns the number of assigned matches played once the bot has left the
 * ladder: when `leave` aborts (matches in progress are played to their end),
 * after `matches` assignments when that is set, or when `quit` aborts (matches
 * in progress are dropped). Rejects with a SeatError when the server refuses the
 * bot (unknown name or wrong key) or stays unreachable for `retryForMs`.
 */
async function playLadder({
  arena, target, credentials, name, key, log, leave, quit, matches = 0, retryForMs = 60000,
  trace = () => {}, chooser = null,
}) {
  const client = new arena.Ladder(target, credentials);
  const metadata = metadataWith('bot-key', key);
  const leaving = new AbortController();
  const stopLeaving = () => leaving.abort();
  leave.addEventListener('abort', stopLeaving, { once: true });
  quit.addEventListener('abort', stopLeaving, { once: true });
  const running = new Set();
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
    const game = playSeat({
      arena, target: host, credentials, token: assignment.seat_token, name, log: seatLog, signal: quit, retryForMs,
      trace, chooser,
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
          const call = client.Enter({ name }, metadata);
          const onLeave = () => {
            call.cancel();
            resolve();
          };
          leaving.signal.addEventListener('abort', onLeave, { once: true });
          call.on('data', (assignment) => {
            failingSince = null;
            attempt = 0;
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
    client.close();
  }
}

module.exports = { playLadder, register };
