'use strict';
/**
 * Plays one seat of one match: Join, then the Play stream (answers go up the
 * stream that brings the decisions), reconnecting after a dropped connection
 * and resuming after the last sequence number seen, until the match ends. The
 * seat's stream is followed by `followCall`, on a Play call or, for a ladder
 * bot, on a PlayMatches call taken with a `sit` (lib/table.js).
 */

const crypto = require('node:crypto');
const { backoffMs, isRetryable, metadataWith, sleep, statusName, unary } = require('./arena');
const { choose, describe } = require('./policy');
const { matchLog } = require('./search');

/**
 * The batching bound the seat's streams ask for (ObserveRequest.batch_ms,
 * SitRequest.batch_ms), as the Python SDK's: the bot reads the others' turns only
 * when it is asked, so they may wait for its next decision (or a second) instead
 * of costing the server a message each.
 */
const BATCH_MS = 1000;

/**
 * Returns what a seat keeps between its calls: the highest sequence seen, whether
 * a server has taken the seat for this process (a Join after that is a rejoin),
 * the reconnection budget, the match log, and its client seed.
 */
function seatProgress() {
  return {
    lastSequence: 0,
    joined: false,
    failingSince: null,
    attempt: 0,
    history: matchLog(),
    // Entropy of the seat's own, mixed into the deal with the server's committed
    // seed (docs/fairness.md): the server cannot then choose the deal alone. Kept
    // with the seat, so that a Join after a `sit` gives the same one.
    clientSeed: crypto.randomBytes(16).toString('hex'),
  };
}

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
 * delivered, ranks, view}` (status 'finished' or 'aborted', `view` the seat's
 * final view, from MatchEnded), or null when `signal` stopped it
 * first. Rejects with a SeatError when the server refuses the seat (bad token,
 * unknown match: statuses that no retry can change) or stays unreachable for
 * `retryForMs`. `chooser(decision, history)`, when given, decides instead of the
 * default policy (and may be async; `history` is the match log seen so far).
 * `progress` (from seatProgress) resumes a seat already played elsewhere, e.g. on
 * a PlayMatches call that failed mid-match.
 */
async function playSeat({
  arena, target, credentials, token, name, log, signal, retryForMs = 60000, trace = () => {},
  chooser = null, progress = seatProgress(),
}) {
  const client = new arena.Seat(target, credentials);
  const metadata = metadataWith('seat-token', token);
  try {
    while (!signal.aborted) {
      let failure = 'stream closed before the match ended';
      try {
        const joined = await unary(client, 'Join', { name, client_seed: progress.clientSeed }, metadata);
        const seatLog = log.bind({ match: joined.match_id, seat: joined.seat });
        seatLog.info(progress.joined ? 'rejoined' : 'joined', {
          colour: joined.colour, players: joined.players, after_sequence: progress.lastSequence,
        });
        progress.joined = true;
        const end = await follow({
          client, metadata, progress, log: seatLog, signal, trace, chooser,
        });
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
 * Returns a promise of the match's end on a new Play call of the seat
 * (`metadata` holds its token), as followCall's.
 */
function follow({ client, metadata, progress, log, signal, trace, chooser = null }) {
  const call = client.Play(metadata);
  // A status that comes after the match has ended (or after a cancel) tells nothing:
  // without a listener it would be thrown as an uncaught 'error' event.
  call.on('error', () => {});
  return followCall({
    call,
    first: { observe: { after_sequence: progress.lastSequence, batch_ms: BATCH_MS } },
    closeAtEnd: true,
    progress, log, signal, trace, chooser,
  });
}

/**
 * Returns a promise of the match's end (`{status, winners, delivered, ranks,
 * view}`, `view` the seat's final view), or of null when the stream closed
 * before the end or `signal` aborted (the call is cancelled then); rejects with
 * the stream's status error when it broke, or with an Error when a decision
 * could not be answered (the call is cancelled). `first` is the message that
 * starts the seat's stream on `call` (`observe` on Play, `sit` on PlayMatches);
 * `closeAtEnd` closes the call at the match's end (Play), else it is left open
 * for the next seat (PlayMatches), with no listener of this match left on it.
 * `trace(direction, message)` sees every message; `chooser` as for playSeat.
 */
function followCall({
  call, first, closeAtEnd, progress, log, signal, trace, chooser = null,
}) {
  progress.history ??= matchLog();
  return new Promise((resolve, reject) => {
    const send = (message) => {
      trace('sent', message);
      call.write(message);
    };
    // The seat's open decision, as far as this stream knows, and the options sent
    // for it: only one decision of a match is open at a time.
    let open = null; // {decision, tried: [option indices]}
    let mySeat = null; // from the snapshot's view
    let settled = false;

    const settle = (outcome, value) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      // A PlayMatches call outlives the match: the next seat's follower listens then.
      call.off('data', onData);
      call.off('error', onError);
      call.off('end', onEnd);
      outcome(value);
    };
    const onAbort = () => {
      call.cancel();
      settle(resolve, null);
    };
    signal.addEventListener('abort', onAbort, { once: true });

    const answer = (index, reason, extra = {}) => {
      const { decision } = open;
      open.tried.push(index);
      // The reason goes up as the answer's private note, for the bot's owner alone.
      send({ act: { decision_id: decision.decision_id, option: index, note: fitNote(reason) } });
      log.info('decision', {
        decision: decision.decision_id,
        kind: decision.kind === 'DECISION_KIND_RESOLVE' ? 'resolve' : 'turn',
        round: decision.view.round,
        option: index,
        of: decision.options.length,
        choice: describe(decision.options[index]),
        reason,
        default_in_ms: decision.default_in_ms,
        ...extra,
      });
    };

    const decide = (decision) => {
      open = { decision, tried: [] };
      if (chooser === null) {
        const { index, reason } = choose(decision);
        answer(index, reason);
        return;
      }
      // A chooser that takes its time: answer only if the decision is still this
      // stream's open one, and with the default policy if the chooser fails.
      const started = Date.now();
      Promise.resolve()
        .then(() => chooser(decision, progress.history.events))
        .catch((error) => {
          log.warn('search_failed', { decision: decision.decision_id, error: error.message });
          return choose(decision);
        })
        .then(({ index, reason, playouts }) => {
          if (settled || open === null || open.decision !== decision) return;
          answer(index, reason, { playouts, search_ms: Date.now() - started });
        });
    };

    const onActResult = (result) => {
      const mine = open !== null && open.decision.decision_id === result.decision_id;
      if (result.accepted) {
        if (mine) open = null;
        return;
      }
      log.warn('answer_refused', {
        decision: result.decision_id, refusal: result.refusal, rule: result.rule || null,
        message: result.message,
      });
      // An option that does not exist or is not legal now leaves the decision open:
      // answer with an option not tried yet. Any other refusal means it is closed.
      if (mine && REFUSALS_LEAVING_OPEN.has(result.refusal)) {
        const untried = open.decision.options.findIndex((_, i) => !open.tried.includes(i));
        if (untried >= 0) {
          answer(untried, 'previous answer refused');
          return;
        }
      }
      if (mine) open = null;
    };

    // The server decided for this seat: the decision is closed.
    const onDeadlinePassed = (passed) => {
      if (passed.seat !== mySeat) return;
      log.warn('deadline_passed', {
        decision: passed.decision_id, reason: passed.reason, strikes: passed.strikes,
        autopilot: passed.autopilot,
      });
      if (open !== null && open.decision.decision_id === passed.decision_id) open = null;
    };

    const handle = (event) => {
      // Any message proves the connection: the reconnection budget starts afresh.
      progress.failingSince = null;
      progress.attempt = 0;
      if (event.sequence > progress.lastSequence) progress.lastSequence = event.sequence;
      progress.history.add(event);
      switch (event.event) {
        case 'snapshot': {
          const { snapshot } = event;
          log.info('snapshot', {
            status: statusWord(snapshot.status), sequence: event.sequence,
            missed: snapshot.history.length, open_decision: snapshot.decision?.decision_id,
          });
          mySeat = snapshot.view.seat;
          open = null;
          progress.joined = true; // the server has taken the seat: a Join now is a rejoin
          for (const missed of snapshot.history) {
            if (missed.event === 'deadline_passed') onDeadlinePassed(missed.deadline_passed);
          }
          if (snapshot.decision) decide(snapshot.decision);
          break;
        }
        case 'decision':
          decide(event.decision);
          break;
        case 'act_result':
          onActResult(event.act_result);
          break;
        case 'deadline_passed':
          onDeadlinePassed(event.deadline_passed);
          break;
        case 'match_ended': {
          const ended = event.match_ended;
          const result = {
            status: statusWord(ended.status),
            winners: ended.winners,
            delivered: ended.delivered,
            ranks: ended.ranks,
          };
          log.info('match_ended', { ...result, reason: ended.reason || null });
          if (closeAtEnd) {
            call.end();
            call.cancel();
          }
          settle(resolve, { ...result, view: ended.view });
          break;
        }
        default:
          break; // turns, rounds and resolutions: the next decision's view has them
      }
    };

    // Each message carries one or more events, in order (SeatEvents).
    function onData(message) {
      trace('received', message);
      try {
        for (const event of message.events) {
          if (settled) break;
          handle(event);
        }
      } catch (error) {
        call.cancel();
        settle(reject, error);
      }
    }
    function onError(error) {
      settle(reject, error);
    }
    function onEnd() {
      settle(resolve, null);
    }
    call.on('data', onData);
    call.on('error', onError);
    call.on('end', onEnd);
    send(first);
  });
}

/** Refusals after which the decision stays open (answer again before the default). */
/** The most bytes of UTF-8 a note keeps on the server (ActRequest.note). */
const NOTE_LIMIT = 1024;

/** Returns `text` cut to NOTE_LIMIT bytes of UTF-8, at a character boundary. */
function fitNote(text) {
  const note = String(text ?? '');
  if (Buffer.byteLength(note, 'utf8') <= NOTE_LIMIT) return note;
  let cut = '';
  for (const ch of note) {
    if (Buffer.byteLength(cut + ch, 'utf8') > NOTE_LIMIT) break;
    cut += ch;
  }
  return cut;
}

const REFUSALS_LEAVING_OPEN = new Set(['REFUSAL_ILLEGAL', 'REFUSAL_NO_SUCH_OPTION']);

/** Returns a MatchStatus name as a word: 'MATCH_STATUS_FINISHED' as 'finished'. */
function statusWord(status) {
  return status.replace('MATCH_STATUS_', '').toLowerCase();
}

module.exports = {
  fitNote,
  BATCH_MS, SeatError, follow, followCall, playSeat, seatProgress,
};
