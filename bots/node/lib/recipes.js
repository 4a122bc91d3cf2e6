'use strict';
/**
 * What the bot knows of the game: the cards, the recipes, and a prediction of
 * how the oven resolves from its public cards alone (docs/rules.md R-COMP-*, R-RES-*).
 *
 * Card ids are the wire's stable strings (R-COMP-5). Counts are plain objects
 * keyed by ingredient, in the canonical order of INGREDIENTS.
 */

/** The ingredient kinds in canonical order (R-COMP-1). */
const INGREDIENTS = Object.freeze(['salami', 'pineapple', 'mushroom', 'pepper', 'olive']);

/** Each colour's personal ingredient (R-COMP-2). */
const PERSONAL = Object.freeze({
  red: 'salami',
  yellow: 'pineapple',
  brown: 'mushroom',
  green: 'pepper',
  purple: 'olive',
});

/** The Bombastica's size: at least this many ingredient cards of any kinds (R-RES-5). */
const BOMBASTICA_SIZE = 15;

/** Returns a count of zero for every ingredient kind. */
function emptyCounts() {
  return Object.fromEntries(INGREDIENTS.map((kind) => [kind, 0]));
}

/** Returns a copy of `counts` (IngredientCounts from the wire, or null) with every kind present. */
function countsOf(counts) {
  const copy = emptyCounts();
  for (const kind of INGREDIENTS) copy[kind] = (counts && counts[kind]) || 0;
  return copy;
}

/** Returns the total number of cards in `counts`. */
function total(counts) {
  return INGREDIENTS.reduce((sum, kind) => sum + counts[kind], 0);
}

/** Returns true when `card` is an ingredient card id. */
function isIngredient(card) {
  return INGREDIENTS.includes(card);
}

/**
 * Returns the recipe of an order card id, or null for a card that is not an order.
 *
 * A recipe is `{kind: 'standard', needs}` (`<colour>-<x>`: 1 personal + 4 x;
 * `<colour>-mixed`: 1 of each), `{kind: 'bombastica'}`, or
 * `{kind: 'minimale' | 'monotoni', personal}`.
 */
function recipeOf(order) {
  const dash = order.indexOf('-');
  const colour = order.slice(0, Math.max(dash, 0));
  if (!Object.hasOwn(PERSONAL, colour)) return null;
  const personal = PERSONAL[colour];
  const name = order.slice(dash + 1);
  if (name === 'mixed') {
    return { kind: 'standard', needs: Object.fromEntries(INGREDIENTS.map((k) => [k, 1])) };
  }
  if (isIngredient(name) && name !== personal) {
    const needs = emptyCounts();
    needs[personal] = 1;
    needs[name] = 4;
    return { kind: 'standard', needs };
  }
  if (name === 'bombastica') return { kind: 'bombastica' };
  if (name === 'minimale' || name === 'monotoni') return { kind: name, personal };
  return null;
}

/**
 * Returns the ingredients that `order` takes from `table` when the table alone
 * covers it, or null when it does not.
 *
 * Where the owner would choose a kind, this picks one: the Minimale's "?" is the
 * first of the least plentiful non-zero other kinds (R-RES-6), the Monotoni's "J"
 * the first of the most plentiful other kinds (R-RES-7).
 */
function takenBy(order, table) {
  const recipe = recipeOf(order);
  if (recipe === null) return null;
  if (recipe.kind === 'standard') {
    return INGREDIENTS.every((kind) => table[kind] >= recipe.needs[kind]) ? recipe.needs : null;
  }
  if (recipe.kind === 'bombastica') {
    return total(table) >= BOMBASTICA_SIZE ? countsOf(table) : null;
  }
  if (table[recipe.personal] < 1) return null;
  const others = INGREDIENTS.filter((kind) => kind !== recipe.personal);
  let chosen = null;
  if (recipe.kind === 'minimale') {
    for (const kind of others) {
      if (table[kind] > 0 && (chosen === null || table[kind] < table[chosen])) chosen = kind;
    }
    if (chosen === null || table[chosen] < 3) return null;
  } else {
    for (const kind of others) {
      if (chosen === null || table[kind] > table[chosen]) chosen = kind;
    }
    if (table[chosen] < 6) return null;
  }
  const taken = emptyCounts();
  taken[recipe.personal] = 1;
  taken[chosen] = recipe.kind === 'minimale' ? 3 : 6;
  return taken;
}

/**
 * Returns the table left after revealing `oven` (card ids, first played first)
 * as R-RES-1..3 do, assuming no owner adds cards from hand: each order revealed
 * takes its ingredients when the table at that moment covers it, else fails and
 * takes nothing.
 */
function tableAfter(oven) {
  const table = emptyCounts();
  for (const card of oven) {
    if (isIngredient(card)) {
      table[card] += 1;
      continue;
    }
    const taken = takenBy(card, table);
    if (taken !== null) for (const kind of INGREDIENTS) table[kind] -= taken[kind];
  }
  return table;
}

/**
 * Returns true when the public oven suffices for `order` played on top of it
 * now, after `count` cards of `ingredient` (null for none): the orders already in
 * the oven are resolved first, then the rest of the table must cover the recipe.
 */
function ovenSuffices(oven, order, ingredient = null, count = 0) {
  const cards = [...oven];
  for (let i = 0; i < count; i += 1) cards.push(ingredient);
  return takenBy(order, tableAfter(cards)) !== null;
}

module.exports = {
  INGREDIENTS,
  PERSONAL,
  countsOf,
  emptyCounts,
  isIngredient,
  ovenSuffices,
  recipeOf,
  tableAfter,
  takenBy,
  total,
};
