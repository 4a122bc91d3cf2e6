'use strict';
/**
 * The bot's choice: simple, not random, and always one of the options sent.
 *
 * A turn plays an order when the public oven suffices for it (see
 * recipes.ovenSuffices), spending as few cards as it can; otherwise it plays all
 * its cards of its most plentiful ingredient, without an order. Its refill comes
 * from the waiter when no order card would be left in hand, else from the supply.
 * A resolution decision bakes whenever an option bakes, adding the fewest cards
 * from hand; otherwise it declines.
 *
 * Options are wire Actions as proto-loader decodes them (keepCase, enums as
 * strings, oneofs named in `kind`).
 */

const { INGREDIENTS, countsOf, ovenSuffices, total } = require('./recipes');

/**
 * Returns `{index, reason}`: the index into `decision.options` to answer with,
 * and why, for a DecisionRequest of either kind.
 */
function choose(decision) {
  if (decision.options.length === 0) throw new Error(`decision ${decision.decision_id} has no options`);
  if (decision.kind === 'DECISION_KIND_RESOLVE') return chooseResolve(decision);
  return chooseTurn(decision);
}

/** Returns `{index, reason}` for a turn (R-TURN-*). */
function chooseTurn(decision) {
  const { view, options } = decision;
  const turns = options.map((option, index) => ({ index, turn: option.turn })).filter((o) => o.turn);
  if (turns.length === 0) return { index: 0, reason: 'no turn among the options' };
  const hand = countsOf(view.hand);
  const ordersInHand = view.hand_orders.length;
  const wanted = (t) => preferredDraw(ordersInHand - (t.order ? 1 : 0));

  // An order the oven already suffices for: fewest cards spent, then the wanted refill.
  const playable = turns.filter(({ turn }) => turn.order
    && ovenSuffices(view.oven, turn.order, turn.pass ? null : turn.ingredient, turn.count));
  if (playable.length > 0) {
    const best = firstBest(playable, ({ turn }) => [turn.count, drawRank(turn, wanted(turn))]);
    return { index: best.index, reason: `oven suffices for ${best.turn.order}` };
  }

  // Otherwise feed the oven with the most plentiful ingredient, keeping the orders.
  const plentiful = INGREDIENTS.reduce((a, b) => (hand[b] > hand[a] ? b : a));
  const feeding = turns.filter(({ turn }) => !turn.order && !turn.pass && turn.ingredient === plentiful);
  if (feeding.length > 0) {
    const best = firstBest(feeding, ({ turn }) => [-turn.count, drawRank(turn, wanted(turn))]);
    return { index: best.index, reason: `most plentiful ingredient is ${plentiful}` };
  }
  const passes = turns.filter(({ turn }) => turn.pass);
  if (passes.length > 0) {
    const best = firstBest(passes, ({ turn }) => [drawRank(turn, wanted(turn))]);
    return { index: best.index, reason: 'no ingredient in hand' };
  }
  return { index: turns[0].index, reason: 'first option' };
}

/** Returns `{index, reason}` for a resolution decision (R-RES-8). */
function chooseResolve(decision) {
  const { options } = decision;
  const resolves = options.map((option, index) => ({ index, resolve: option.resolve })).filter((o) => o.resolve);
  const bakes = resolves.filter(({ resolve }) => resolve.bake);
  if (bakes.length > 0) {
    const best = firstBest(bakes, ({ resolve }) => [total(countsOf(resolve.hand))]);
    return { index: best.index, reason: `bake ${decision.view.deciding}` };
  }
  const declines = resolves.filter(({ resolve }) => !resolve.bake);
  const index = declines.length > 0 ? declines[0].index : 0;
  return { index, reason: `cannot bake ${decision.view.deciding}` };
}

/** Returns the refill source wanted with `ordersLeft` order cards left in hand. */
function preferredDraw(ordersLeft) {
  return ordersLeft > 0 ? 'DRAW_SOURCE_SUPPLY' : 'DRAW_SOURCE_WAITER';
}

/** Returns 0 when a turn draws from `wanted` (or draws nothing), else 1. */
function drawRank(turn, wanted) {
  return turn.draw === undefined || turn.draw === null || turn.draw === wanted ? 0 : 1;
}

/** Returns the first item with the smallest key (arrays compared element by element). */
function firstBest(items, key) {
  let best = items[0];
  let bestKey = key(best);
  for (const item of items.slice(1)) {
    const k = key(item);
    const i = k.findIndex((value, n) => value !== bestKey[n]);
    if (i >= 0 && k[i] < bestKey[i]) {
      best = item;
      bestKey = k;
    }
  }
  return best;
}

/** Returns a short human description of a wire Action, for the log. */
function describe(action) {
  if (action.turn) {
    const t = action.turn;
    const parts = [t.pass ? 'pass' : `play ${t.count} ${t.ingredient}`];
    if (t.order) parts.push(`order ${t.order}`);
    if (t.draw) parts.push(`draw ${t.draw.replace('DRAW_SOURCE_', '').toLowerCase()}`);
    return parts.join(', ');
  }
  if (action.resolve) {
    const r = action.resolve;
    if (!r.bake) return 'decline';
    const parts = ['bake'];
    if (r.ingredient) parts.push(`as ${r.ingredient}`);
    const hand = countsOf(r.hand);
    const added = INGREDIENTS.filter((kind) => hand[kind] > 0).map((kind) => `${hand[kind]} ${kind}`);
    if (added.length > 0) parts.push(`adding ${added.join(' + ')}`);
    return parts.join(', ');
  }
  return 'unknown action';
}

module.exports = { choose, chooseResolve, chooseTurn, describe };
