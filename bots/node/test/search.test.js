'use strict';
// The --search chooser against a scripted Rules service (the network is the seam),
// the match log it keeps, and its command-line flags.

const test = require('node:test');
const assert = require('node:assert/strict');
const { matchLog, searchChooser } = require('../lib/search');
const { settingsFrom } = require('../bot');

const PASS = { turn: { pass: true, ingredient: '', count: 0, order: '', draw: 'DRAW_SOURCE_SUPPLY' } };
const PLAY = { turn: { pass: false, ingredient: 'salami', count: 1, order: '', draw: 'DRAW_SOURCE_SUPPLY' } };

function decision(options) {
  return {
    decision_id: 'd1',
    kind: 'DECISION_KIND_TURN',
    view: { seat: 1, round: 1, oven: [], hand: { salami: 1, pineapple: 0, mushroom: 0, pepper: 0, olive: 0 }, hand_orders: [] },
    options,
    default_in_ms: 5000,
  };
}

/** Returns a fake service where option 1 wins for seat 1 and option 0 loses; it records calls. */
function fakeRules() {
  const calls = [];
  let handle = 0;
  return {
    calls,
    call: async (method, request) => {
      calls.push([method, request]);
      if (method === 'Determinize') {
        handle += 1;
        return { states: [{ handle }] };
      }
      if (method === 'Playout') {
        const win = request.first_option === 1;
        return { delivered: win ? [1, 3] : [3, 1], ranks: win ? [2, 1] : [1, 2] };
      }
      return { released: 1, held: 0 };
    },
  };
}

test('the chooser picks the option of the best mean rank and releases every sample', async () => {
  const rules = fakeRules();
  let clock = 0;
  const chooser = searchChooser({ rules, budgetMs: 50, now: () => { clock += 1; return clock; } });
  const history = [{ sequence: 1, event: 'round_started', round_started: { round: 1, first_seat: 0 } }];
  const chosen = await chooser(decision([PLAY, PASS]), history);
  assert.equal(chosen.index, 1);
  assert.ok(chosen.playouts > 0);
  const made = rules.calls.filter(([m]) => m === 'Determinize');
  const released = rules.calls.filter(([m]) => m === 'Release').flatMap(([, r]) => r.handles);
  assert.equal(released.length, made.length);
  assert.deepEqual(made[0][1].knowledge.history, history);
  assert.deepEqual(rules.calls.find(([m]) => m === 'Playout')[1].policies, ['greedy']);
});

test('a lone option is answered without a call', async () => {
  const rules = fakeRules();
  const chosen = await searchChooser({ rules })(decision([PASS]), []);
  assert.equal(chosen.index, 0);
  assert.equal(rules.calls.length, 0);
});

test('the match log keeps each numbered game event once, the snapshot history included', () => {
  const log = matchLog();
  const turn = (sequence) => ({ sequence, event: 'turn', turn: { seat: 0 } });
  log.add({ sequence: 2, event: 'snapshot', snapshot: { history: [turn(1), turn(2)] } });
  log.add(turn(2));
  log.add({ sequence: 0, event: 'decision', decision: {} });
  log.add(turn(3));
  log.add({ sequence: 3, event: 'snapshot', snapshot: { history: [] } });
  assert.deepEqual(log.events.map((e) => e.sequence), [1, 2, 3]);
});

test('the search flags are checked', () => {
  const base = ['--server', 'h:1', '--token', 't'];
  const on = settingsFrom([...base, '--search', '--search-ms', '50', '--rules', 'h:2'], {});
  assert.equal(on.search, true);
  assert.equal(on.searchMs, 50);
  assert.equal(on.rules, 'h:2');
  assert.deepEqual(settingsFrom([...base, '--search'], { MAMMAMIA_RULES_COMMAND: 'python -m mammamia' }).rulesCommand,
    ['python', '-m', 'mammamia']);
  assert.throws(() => settingsFrom([...base, '--search-ms', '50'], {}), /go with --search/);
  assert.throws(() => settingsFrom([...base, '--search', '--search-policy', 'best'], {}), /--search-policy/);
});
