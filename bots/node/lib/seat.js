'use strict';
/**
 * Plays one seat of one match: Join, then the Play stream (answers go up the
 * stream that brings the decisions), reconnecting after a dropped connection
 * and resuming after the last sequence number seen, until the match ends.
 */

const { backoffMs, grpc, isRetryable, metadataWith, sleep, statusName, unary } = require('./arena');
const { choose, describe } = require('./policy');

/** An error that ends the seat: the server refused it for good, or it stayed unreachable. */
class SeatError extends Error {
  constructor(message, code = null) {
    super(message);
    this.name = 'SeatError';
    this.code = code;
  }
}

/**
 * Returns the end of the match for this seat, `{match, seat, status, winners,
 * delivered, ranks}` (status a MatchStatus name), or null when `signal` stopped it
 * first. Rejects with a SeatError when the server refuses the seat (bad token,
 * unknown match: statuses that no retry can change) or stays unreachable for
 * `retryForMs`.
 */
async function playSeat({
  arena, target, credentials, token, name, log, signal, retryForMs = 60000, trace = () => {},
}) {
  const client = new arena.Seat(target, credentials);
  const metadata = metadataWith('seat-token', token);
  const progress = { lastSequence: 0, joined: false, failingSince: null, attempt: 0 };
  try {
    while (!signal.aborted) {
      let failure = 'stream closed before the match ended';
      try {
        const joined = await unary(client, 'Join', { name }, metadata);
        const seatLog = log.bind({ match: joined.match_id, seat: joined.seat });
        seatLog.info(progress.joined ? 'rejoined' : 'joined', {
          colour: joined.colour, players: joined.players, after_sequence: progress.lastSequence,
        });
        progress.joined = true;
        const end = await follow({ client, metadata, progress, log: seatLog, signal, trace });
        if (end !== null) return { match: joined.match_id, seat: joined.seat, ...end };
      } catch (error) {
        if (error instanceof SeatError || error.code === undefined) throw error; // not a gRPC status
        if (!isRetryable(error)) {
          throw new SeatError(`${statusName(error.code)}: ${error.details || error.message}`, error.code);
        }
        failure = `${statusName(error.code)}: ${error.details || error.message}`;
      }
      if (signal.aborted) break;

      // Reconnect after a pause; give up when the server stays away too long.
      progress.failingSince ??= Date.now();
      if (Date.now() - progress.failingSince > retryForMs) {
        throw new SeatError(`gave up after ${Math.round(retryForMs / 1000)} s without the server (${failure})`);
      }
      const pauseMs = backoffMs(progress.attempt);
      progress.attempt += 1;
      log.warn('reconnecting', { reason: failure, pause_ms: pauseMs, after_sequence: progress.lastSequence });
      await sleep(pauseMs, signal);
    }
    return null;
  } finally {
    client.close();
  }
}

/**
 * Returns a promise of the match's end (`{status, winners, delivered, ranks}`),
 * or of null when the stream closed before the end or `signal` aborted; rejects
 * with the stream's status error when it broke, or with an Error when a decision
 * could not be answered. `trace(direction, message)` sees every message.
 */
function follow({ client, metadata, progress, log, signal, trace }) {
  return new Promise((resolve, reject) => {
    const call = client.Play(metadata);
    const send = (message) => {
      trace('sent', message);
      call.write(message);
    };
    const answered = new Map(); // decision id -> option indices sent on this stream
    const decisions = new Map(); // decision id -> the request, until its answer is accepted
    let overView = null; // a snapshot of a finished game, if the stream shows one
    let settled = false;

    const settle = (outcome, value) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      outcome(value);
    };
    const onAbort = () => {
      call.cancel();
      settle(resolve, null);
    };
    signal.addEventListener('abort', onAbort, { once: true });

    const answer = (decision, index, reason) => {
      const indices = answered.get(decision.decision_id) || [];
      answered.set(decision.decision_id, [...indices, index]);
      send({ act: { decision_id: decision.decision_id, option: index } });
      log.info('decision', {
        decision: decision.decision_id,
        kind: decision.kind === 'DECISION_KIND_RESOLVE' ? 'resolve' : 'turn',
        round: decision.view.round,
        option: index,
        of: decision.options.length,
        choice: describe(decision.options[index]),
        reason,
      });
    };

    const handle = (event) => {
      // Any message proves the connection: the reconnection budget starts afresh.
      progress.failingSince = null;
      progress.attempt = 0;
      if (event.sequence > progress.lastSequence) progress.lastSequence = event.sequence;
      switch (event.event) {
        case 'snapshot':
          if (event.snapshot.view.phase === 'PHASE_OVER') overView = event.snapshot.view;
          break;
        case 'decision': {
          // A decision re-sent after a reconnect is still open: answer it again.
          const decision = event.decision;
          if (answered.has(decision.decision_id)) break;
          decisions.set(decision.decision_id, decision);
          const { index, reason } = choose(decision);
          answer(decision, index, reason);
          break;
        }
        case 'act_result':
          onActResult(event.act_result);
          break;
        case 'match_ended': {
          const ended = event.match_ended;
          const result = {
            status: ended.status.replace('MATCH_STATUS_', '').toLowerCase(),
            winners: ended.winners,
            delivered: ended.delivered,
            ranks: ended.ranks,
          };
          log.info('match_ended', result);
          call.end();
          call.cancel();
          settle(resolve, result);
          break;
        }
        default:
          break; // turns, rounds and resolutions: the next decision's view has them
      }
    };

    const onActResult = (result) => {
      const decision = decisions.get(result.decision_id);
      if (result.accepted) {
        decisions.delete(result.decision_id);
        return;
      }
      log.warn('answer_refused', {
        decision: result.decision_id, code: statusName(result.code), message: result.message,
      });
      // An illegal answer leaves the decision open (INVALID_ARGUMENT): answer with
      // an option not tried yet. Anything else (stale, not ours) is closed already.
      if (result.code === grpc.status.INVALID_ARGUMENT && decision) {
        const tried = answered.get(result.decision_id) || [];
        const untried = decision.options.findIndex((_, i) => !tried.includes(i));
        if (untried >= 0) answer(decision, untried, 'previous answer refused');
        return;
      }
      decisions.delete(result.decision_id);
    };

    // Each message carries one or more events, in order (SeatEvents). A decision
    // that numbered events follow in the same message was closed before it was sent.
    call.on('data', (message) => {
      trace('received', message);
      try {
        const lastNumbered = message.events.findLastIndex((event) => event.sequence > 0);
        for (const [i, event] of message.events.entries()) {
          if (settled) break;
          if (event.event === 'decision' && i < lastNumbered) continue;
          handle(event);
        }
      } catch (error) {
        call.cancel();
        settle(reject, error);
      }
    });
    call.on('error', (error) => settle(reject, error));
    call.on('end', () => settle(resolve, overView === null ? null : {
      status: 'finished',
      winners: overView.winners,
      delivered: overView.seats.map((seat) => seat.delivered.length),
      ranks: [],
    }));
    send({ observe: { after_sequence: progress.lastSequence } });
  });
}

module.exports = { SeatError, playSeat };
