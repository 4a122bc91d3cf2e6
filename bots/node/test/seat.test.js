'use strict';
// The seat's Play stream against a scripted server: which decisions it answers,
// how it answers a refusal, where it resumes, and the end it returns.

const test = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');
const { fitNote, follow } = require('../lib/seat');

const NO_CARDS = { salami: 0, pineapple: 0, mushroom: 0, pepper: 0, olive: 0 };
const PASS = { turn: { pass: true, ingredient: '', count: 0, order: '', draw: 'DRAW_SOURCE_SUPPLY' } };
const PLAY = { turn: { pass: false, ingredient: 'salami', count: 1, order: '', draw: 'DRAW_SOURCE_SUPPLY' } };

function decision(id) {
  return {
    decision_id: id,
    kind: 'DECISION_KIND_TURN',
    view: { round: 1, oven: [], hand: { ...NO_CARDS, salami: 1 }, hand_orders: [], deciding: '' },
    options: [PLAY, PASS],
    default_in_ms: 5000,
  };
}

function snapshot(sequence, { open = null, status = 'MATCH_STATUS_RUNNING', history = [] } = {}) {
  return { sequence, event: 'snapshot', snapshot: { view: {}, match_id: 'm', decision: open, status, history } };
}

const asked = (id) => ({ sequence: 0, event: 'decision', decision: decision(id) });
const turnTaken = (sequence) => ({ sequence, event: 'turn', turn: { seat: 0 } });
const actResult = (id, refusal = 'REFUSAL_UNSPECIFIED') => ({
  sequence: 0,
  event: 'act_result',
  act_result: { decision_id: id, accepted: refusal === 'REFUSAL_UNSPECIFIED', refusal, rule: '', message: '' },
});
const ended = {
  sequence: 0,
  event: 'match_ended',
  match_ended: {
    status: 'MATCH_STATUS_FINISHED', winners: [1], delivered: [0, 2], ranks: [2, 1],
    view: { phase: 'PHASE_OVER', winners: [1] }, reason: '',
  },
};

/** Returns a fake Seat client whose Play call records what the bot sends. */
function fakeServer() {
  const call = new EventEmitter();
  call.sent = [];
  call.write = (message) => call.sent.push(message);
  call.end = () => {};
  call.cancel = () => {};
  const push = (...events) => call.emit('data', { events });
  return { client: { Play: () => call }, call, push };
}

function start(client, progress = { lastSequence: 0 }) {
  const lines = [];
  const log = { info: (event, f) => lines.push([event, f]), warn: (event, f) => lines.push([event, f]) };
  const signal = new AbortController().signal;
  const end = follow({ client, metadata: null, progress, log, signal, trace: () => {} });
  return { end, lines, progress };
}

const acts = (call) => call.sent.filter((m) => m.act).map((m) => [m.act.decision_id, m.act.option]);

test('the snapshot\'s open decision and every decision event are answered', async () => {
  const { client, call, push } = fakeServer();
  const { end } = start(client, { lastSequence: 4 });
  assert.deepEqual(call.sent[0], { observe: { after_sequence: 4, batch_ms: 1000 } });
  push(snapshot(7, { open: decision('d3') }));
  push(actResult('d3'), turnTaken(8), asked('d4'));
  push(actResult('d4'), ended);
  assert.deepEqual(acts(call), [['d3', 0], ['d4', 0]]);
  const result = await end;
  assert.equal(result.status, 'finished');
  assert.deepEqual(result.winners, [1]);
  assert.deepEqual(result.ranks, [2, 1]);
  assert.equal(result.view.phase, 'PHASE_OVER');
});

test('an illegal or missing option is answered again with another; other refusals close', async () => {
  const { client, call, push } = fakeServer();
  const { end, lines } = start(client);
  push(snapshot(0), asked('d1'));
  push(actResult('d1', 'REFUSAL_ILLEGAL'));
  push(actResult('d1', 'REFUSAL_NO_SUCH_OPTION')); // both options tried: nothing left
  push(asked('d2'));
  push(actResult('d2', 'REFUSAL_DEFAULTED'));
  push(ended);
  assert.deepEqual(acts(call), [['d1', 0], ['d1', 1], ['d2', 0]]);
  assert.equal(lines.filter(([event]) => event === 'answer_refused').length, 3);
  await end;
});

test('a deadline passed for the seat closes its decision, live or missed', async () => {
  const { client, call, push } = fakeServer();
  const { end, lines } = start(client);
  const passed = (sequence, id, seat = 1) => ({
    sequence, event: 'deadline_passed',
    deadline_passed: { seat, decision_id: id, reason: 'DEADLINE_REASON_LATE', strikes: 1, autopilot: false },
  });
  const first = snapshot(2, { open: decision('d3'), history: [passed(1, 'd1')] });
  first.snapshot.view = { seat: 1 };
  push(first);
  push(passed(3, 'd2', 0), passed(4, 'd3'));
  push(actResult('d3', 'REFUSAL_ILLEGAL')); // too late: no second answer
  push(ended);
  assert.deepEqual(acts(call), [['d3', 0]]);
  assert.deepEqual(lines.filter(([event]) => event === 'deadline_passed').map(([, f]) => f.decision), ['d1', 'd3']);
  await end;
});

test('the highest sequence seen, the snapshot\'s included, is where to resume', async () => {
  const { client, push } = fakeServer();
  const { end, progress } = start(client, { lastSequence: 2 });
  push(snapshot(9, { history: [turnTaken(3), turnTaken(9)] }));
  assert.equal(progress.lastSequence, 9);
  push(turnTaken(10), asked('d5'));
  assert.equal(progress.lastSequence, 10);
  client.Play().emit('end');
  assert.equal(await end, null);
});

test('a note is cut at 1024 bytes of UTF-8, at a character boundary', () => {
  assert.equal(fitNote('first option'), 'first option');
  assert.equal(fitNote('é'.repeat(600)), 'é'.repeat(512));
  assert.equal(Buffer.byteLength(fitNote('a' + 'é'.repeat(600)), 'utf8'), 1023);
});
