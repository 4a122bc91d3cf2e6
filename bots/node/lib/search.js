'use strict';
/**
 * The `--search` policy: flat Monte Carlo over the Rules service.
 *
 * For a decision with more than one option, it repeats, until its time is up:
 * sample one complete game the seat cannot tell from the real one (Determinize,
 * from the decision's view and the match log seen so far), then play each option
 * out to the end on that sample with a built-in policy (Playout with
 * `first_option`), and release the sample. The options still in the running are
 * played on the same samples, so their results differ by the option, not by the
 * luck of the deal. Without a sample (no time for one), it answers as the
 * default policy would.
 */

const { choose } = require('./policy');

/** The defaults: time per decision, the playout policy, and the share of the deadline used. */
const DEFAULTS = Object.freeze({ budgetMs: 200, policy: 'greedy', deadlineShare: 0.5 });

/** Log events that belong in the match log the service reads (the numbered ones). */
const LOGGED = new Set(['turn', 'round_started', 'round_ended', 'resolved', 'deadline_passed']);

/**
 * Returns a history keeper: `add(event)` takes every SeatEvent of the stream (the
 * snapshot's `history` too) and keeps each numbered game event once, in order;
 * `events` is the log so far.
 */
function matchLog() {
  const events = [];
  let last = 0;
  const keep = (event) => {
    if (event.sequence > last && LOGGED.has(event.event)) {
      events.push(event);
      last = event.sequence;
    }
  };
  return {
    events,
    add(event) {
      if (event.event === 'snapshot') event.snapshot.history.forEach(keep);
      else keep(event);
    },
  };
}

/**
 * Returns `chooser(decision, history)` resolving to `{index, reason, playouts}`:
 * flat Monte Carlo through `rules` (from connectRules) within `budgetMs` per
 * decision (and never more than `deadlineShare` of the time the server gives),
 * playing out with `policy`. `seed` starts the samples' seeds.
 *
 * The first sample plays out every option; each later one only the better half
 * of those still in the running (sequential halving, a pass at a time, down to
 * two), the default policy's choice always among them. An option's value is its
 * mean over samples of pizzas beyond the best opponent's, plus half a point for
 * ranking first: a finer signal than the rank alone.
 */
function searchChooser({ rules, budgetMs = DEFAULTS.budgetMs, policy = DEFAULTS.policy,
  deadlineShare = DEFAULTS.deadlineShare, seed = 1, now = () => Date.now(), inFlight = 4 }) {
  let nextSeed = seed;
  return async (decision, history) => {
    const { options, view } = decision;
    if (options.length === 1) return { index: 0, reason: 'only option', playouts: 0 };
    const fallback = choose(decision);
    const end = now() + Math.min(budgetMs, Math.max(1, (decision.default_in_ms || budgetMs) * deadlineShare));
    const me = view.seat;
    const stats = options.map((_, index) => ({ index, n: 0, value: 0, rank: 0 }));
    const knowledge = { view, history };
    let running = stats;
    let playouts = 0;
    while (now() < end) {
      const sampled = await rules.call('Determinize', { knowledge, seed: nextSeed, count: 1 });
      const playoutSeed = nextSeed;
      nextSeed += 1;
      const handle = sampled.states[0].handle;
      try {
        // A few calls in flight at once, so the service never waits for the network.
        for (let i = 0; i < running.length && now() < end; i += inFlight) {
          const batch = running.slice(i, i + inFlight);
          const results = await Promise.all(batch.map((s) => rules.call('Playout', {
            handle, policies: [policy], seed: playoutSeed, first_option: s.index,
          })));
          results.forEach((result, k) => {
            const mine = result.delivered[me];
            const best = Math.max(...result.delivered.filter((_, seat) => seat !== me));
            batch[k].n += 1;
            batch[k].rank += result.ranks[me];
            batch[k].value += mine - best + (result.ranks[me] === 1 ? 0.5 : 0);
          });
          playouts += batch.length;
        }
      } finally {
        await rules.call('Release', { handles: [handle] });
      }
      const measured = running.filter((s) => s.n > 0).sort(better(fallback.index));
      if (measured.length > 2) {
        const kept = measured.slice(0, Math.max(2, Math.ceil(measured.length / 2)));
        if (!kept.some((s) => s.index === fallback.index) && stats[fallback.index].n > 0) {
          kept.push(stats[fallback.index]);
        }
        running = kept;
      } else if (measured.length > 0) {
        running = measured;
      }
    }
    const measured = stats.filter((s) => s.n > 0);
    if (measured.length === 0) return { ...fallback, playouts };
    // The winner: the best of the last ones in the running (they have the most samples).
    const best = running.filter((s) => s.n > 0).sort(better(fallback.index))[0] || measured[0];
    return {
      index: best.index,
      reason: `value ${(best.value / best.n).toFixed(2)}, mean rank ${(best.rank / best.n).toFixed(2)} over ${best.n} samples`,
      playouts,
    };
  };
}

/** Returns a sort order: higher mean value first, then the default choice, then earlier. */
function better(preferred) {
  return (a, b) => {
    const va = a.value / a.n;
    const vb = b.value / b.n;
    if (va !== vb) return vb - va;
    if ((a.index === preferred) !== (b.index === preferred)) return a.index === preferred ? -1 : 1;
    return a.index - b.index;
  };
}

module.exports = { DEFAULTS, matchLog, searchChooser };
