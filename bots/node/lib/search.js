'use strict';
/**
 * The `--search` policy: flat Monte Carlo over the Rules service.
 *
 * For a decision with more than one option, it repeats, until its time is up:
 * sample one complete game the seat cannot tell from the real one (Determinize,
 * from the decision's view and the match log seen so far), then play each option
 * out to the end on that sample with a built-in policy (Playout with
 * `first_option`), and release the sample. Every option is played on the same
 * samples, so their results differ by the option, not by the luck of the deal.
 * It answers with the option of the best mean rank (1 best), ties going to more
 * pizzas, then to the earlier option. Without a sample (the service refused, or
 * no time for one), it falls back to the default policy.
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
 */
function searchChooser({ rules, budgetMs = DEFAULTS.budgetMs, policy = DEFAULTS.policy,
  deadlineShare = DEFAULTS.deadlineShare, seed = 1, now = () => Date.now() }) {
  let nextSeed = seed;
  return async (decision, history) => {
    const { options, view } = decision;
    if (options.length === 1) return { index: 0, reason: 'only option', playouts: 0 };
    const started = now();
    const allowed = Math.min(budgetMs, Math.max(1, (decision.default_in_ms || budgetMs) * deadlineShare));
    const end = started + allowed;
    const me = view.seat;
    const stats = options.map(() => ({ n: 0, rank: 0, pizzas: 0 }));
    const knowledge = { view, history };
    let playouts = 0;
    while (now() < end) {
      const sampled = await rules.call('Determinize', { knowledge, seed: nextSeed, count: 1 });
      nextSeed += 1;
      const handle = sampled.states[0].handle;
      try {
        for (let i = 0; i < options.length && now() < end; i += 1) {
          const result = await rules.call('Playout', {
            handle, policies: [policy], seed: nextSeed, first_option: i,
          });
          const mine = result.delivered[me];
          const best = Math.max(...result.delivered.filter((_, s) => s !== me));
          stats[i].n += 1;
          stats[i].rank += result.ranks[me];
          stats[i].pizzas += mine - best;
          playouts += 1;
        }
      } finally {
        await rules.call('Release', { handles: [handle] });
      }
    }
    const tried = stats.map((s, index) => ({ index, ...s })).filter((s) => s.n > 0);
    if (tried.length < options.length) {
      // Not every option was played out: compare only what was measured, and keep
      // the default policy's choice when nothing was.
      if (tried.length === 0) return { ...choose(decision), playouts };
    }
    const mean = (s) => [s.rank / s.n, -s.pizzas / s.n, s.index];
    const best = tried.reduce((a, b) => (less(mean(b), mean(a)) ? b : a));
    return {
      index: best.index,
      reason: `mean rank ${(best.rank / best.n).toFixed(2)} over ${best.n} samples`,
      playouts,
    };
  };
}

/** Returns true when the array `a` sorts before `b` (element by element). */
function less(a, b) {
  for (let i = 0; i < a.length; i += 1) {
    if (a[i] !== b[i]) return a[i] < b[i];
  }
  return false;
}

module.exports = { DEFAULTS, matchLog, searchChooser };
