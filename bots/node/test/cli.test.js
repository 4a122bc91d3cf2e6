'use strict';
// The command line: settings, defaults, and the errors that name the bad input.

const test = require('node:test');
const assert = require('node:assert/strict');
const { settingsFrom } = require('../bot');

test('a seat token may begin with a dash', () => {
  assert.equal(settingsFrom(['--server', 'h:1', '--token', '-Zx9'], {}).token, '-Zx9');
  assert.equal(settingsFrom(['--server=h:1', '--token=-Zx9'], {}).token, '-Zx9');
});

test('settings come from the environment when not on the command line', () => {
  const settings = settingsFrom([], { MAMMAMIA_SERVER: 'h:2', MAMMAMIA_SEAT_TOKEN: 't' });
  assert.equal(settings.server, 'h:2');
  assert.equal(settings.token, 't');
  assert.equal(settings.name, 'node-bot');
  assert.equal(settings.retryForMs, 60000);
});

test('the ladder needs a name, a seat needs a token', () => {
  assert.throws(() => settingsFrom(['--server', 'h:1', '--ladder'], {}), /--name/);
  assert.throws(() => settingsFrom(['--server', 'h:1'], {}), /--token/);
  assert.throws(() => settingsFrom(['--token', 't'], {}), /--server/);
  const ladder = settingsFrom(['--server', 'h:1', '--ladder', '--name', 'nb', '--matches', '3'], {});
  assert.equal(ladder.matches, 3);
  assert.equal(ladder.key, undefined);
});

test('bad numbers are named', () => {
  assert.throws(() => settingsFrom(['--server', 'h:1', '--token', 't', '--retry-for', 'soon'], {}),
    /--retry-for must be a non-negative number, not "soon"/);
});

test('--version names the ladder version; without it, a hash of the bot\'s code', () => {
  const given = settingsFrom(['--server', 'h:1', '--ladder', '--name', 'n', '--version', 'v2'], {});
  assert.equal(given.version, 'v2');
  const hashed = settingsFrom(['--server', 'h:1', '--ladder', '--name', 'n'], {});
  assert.match(hashed.version, /^[0-9a-f]{12}$/);
  assert.throws(() => settingsFrom(['--server', 'h:1', '--ladder', '--name', 'n', '--version', 'a b'], {}), /--version/);
  assert.throws(() => settingsFrom(['--server', 'h:1', '--token', 't', '--version', 'v2'], {}), /--ladder/);
});
