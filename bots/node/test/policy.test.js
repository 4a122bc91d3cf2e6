'use strict';
// The bot's choice on hand-made decisions, as the wire delivers them
// (proto-loader objects: keepCase, enums as names, defaults filled in).

const test = require('node:test');
const assert = require('node:assert/strict');
const { choose, describe } = require('../lib/policy');
const { ovenSuffices, recipeOf, tableAfter } = require('../lib/recipes');

const NO_CARDS = { salami: 0, pineapple: 0, mushroom: 0, pepper: 0, olive: 0 };

function turn(ingredient, count, order = '', draw = 'DRAW_SOURCE_SUPPLY') {
  return { turn: { pass: ingredient === null, ingredient: ingredient || '', count, order, draw } };
}

function turnDecision({ oven = [], hand = {}, orders = [], options }) {
  return {
    decision_id: 'd1',
    kind: 'DECISION_KIND_TURN',
    view: { round: 1, oven, hand: { ...NO_CARDS, ...hand }, hand_orders: orders, deciding: '' },
    options,
  };
}

test('recipes follow the card ids', () => {
  assert.deepEqual(recipeOf('green-salami').needs, { salami: 4, pineapple: 0, mushroom: 0, pepper: 1, olive: 0 });
  assert.deepEqual(recipeOf('red-mixed').needs, { salami: 1, pineapple: 1, mushroom: 1, pepper: 1, olive: 1 });
  assert.equal(recipeOf('purple-bombastica').kind, 'bombastica');
  assert.equal(recipeOf('yellow-minimale').personal, 'pineapple');
  assert.equal(recipeOf('mamma-mia'), null);
  assert.equal(recipeOf('red-salami'), null);
  assert.equal(recipeOf('constructor-mixed'), null);
  assert.equal(recipeOf('salami'), null);
});

test('an order in the oven takes its ingredients before a later one', () => {
  const oven = ['salami', 'salami', 'salami', 'salami', 'pepper', 'green-salami', 'salami'];
  assert.deepEqual(tableAfter(oven), { ...NO_CARDS, salami: 1 });
  assert.equal(ovenSuffices(oven, 'red-mixed'), false);
  assert.equal(ovenSuffices(oven.slice(0, 5), 'green-salami'), true);
});

test('the cards played in the same turn count for the order', () => {
  const oven = ['salami', 'salami', 'pepper'];
  assert.equal(ovenSuffices(oven, 'green-salami'), false);
  assert.equal(ovenSuffices(oven, 'green-salami', 'salami', 2), true);
});

test('specials: Bombastica needs 15, Minimale the least plentiful, Monotoni six of one', () => {
  const fifteen = Array(15).fill('olive');
  assert.equal(ovenSuffices(fifteen, 'red-bombastica'), true);
  assert.equal(ovenSuffices(fifteen.slice(1), 'red-bombastica'), false);
  const minimale = ['salami', 'mushroom', 'mushroom', 'mushroom', 'olive', 'olive', 'olive', 'olive'];
  assert.equal(ovenSuffices(minimale, 'red-minimale'), true);
  assert.equal(ovenSuffices([...minimale, 'pepper'], 'red-minimale'), false);
  assert.equal(ovenSuffices(['pepper', ...Array(6).fill('olive')], 'green-monotoni'), true);
  assert.equal(ovenSuffices(['pepper', ...Array(5).fill('olive')], 'green-monotoni'), false);
});

test('a turn plays an order the oven suffices for, spending the fewest cards', () => {
  const decision = turnDecision({
    oven: ['salami', 'salami', 'salami', 'pepper'],
    hand: { salami: 3, olive: 4 },
    orders: ['green-salami', 'green-olive'],
    options: [
      turn('olive', 4),
      turn('olive', 1, 'green-olive'),
      turn('salami', 2, 'green-salami'),
      turn('salami', 1, 'green-salami'),
      turn('salami', 1, 'green-salami', 'DRAW_SOURCE_WAITER'),
    ],
  });
  const { index, reason } = choose(decision);
  assert.equal(index, 3);
  assert.match(reason, /green-salami/);
});

test('without a playable order a turn plays all of its most plentiful ingredient', () => {
  const decision = turnDecision({
    hand: { mushroom: 2, olive: 3 },
    orders: ['red-mixed'],
    options: [
      turn('mushroom', 2),
      turn('olive', 1),
      turn('olive', 3, 'red-mixed'),
      turn('olive', 3, '', 'DRAW_SOURCE_WAITER'),
      turn('olive', 3),
    ],
  });
  assert.equal(choose(decision).index, 4);
});

test('a hand left without orders refills from the waiter', () => {
  const decision = turnDecision({
    hand: { pepper: 5 },
    orders: [],
    options: [turn('pepper', 5), turn('pepper', 5, '', 'DRAW_SOURCE_WAITER')],
  });
  assert.equal(choose(decision).index, 1);
});

test('a hand without ingredients passes', () => {
  const decision = turnDecision({
    orders: ['red-mixed'],
    options: [turn(null, 0, '', 'DRAW_SOURCE_WAITER'), turn(null, 0)],
  });
  assert.equal(choose(decision).index, 1);
});

test('a resolution bakes with the fewest hand cards, or declines', () => {
  const resolve = (bake, hand = {}) => ({ resolve: { bake, ingredient: '', hand: { ...NO_CARDS, ...hand } } });
  const decision = {
    decision_id: 'd2',
    kind: 'DECISION_KIND_RESOLVE',
    view: { deciding: 'red-bombastica' },
    options: [resolve(false), resolve(true, { olive: 3 }), resolve(true, { salami: 1, olive: 1 })],
  };
  assert.equal(choose(decision).index, 2);
  assert.equal(describe(decision.options[2]), 'bake, adding 1 salami + 1 olive');
  assert.equal(choose({ ...decision, options: [resolve(false)] }).index, 0);
});

test('decisions are described for the log', () => {
  assert.equal(describe(turn('salami', 2, 'red-olive')), 'play 2 salami, order red-olive, draw supply');
  assert.equal(describe({ turn: { pass: true, ingredient: '', count: 0, order: '' } }), 'pass');
});
