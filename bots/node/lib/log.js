'use strict';
/**
 * One line per event on stderr: `TIME LEVEL EVENT key=value ...`, values quoted
 * when they hold spaces, so the lines read well and parse with logfmt tools.
 */

/** Returns `value` as a logfmt value. */
function formatValue(value) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /^[^\s"=]+$/.test(text) ? text : JSON.stringify(text);
}

/** Returns a logger whose lines all carry `context` (e.g. the match and seat). */
function logger(context = {}, write = (line) => process.stderr.write(line)) {
  const emit = (level, event, fields = {}) => {
    const pairs = Object.entries({ ...context, ...fields })
      .filter(([, value]) => value !== undefined && value !== null)
      .map(([key, value]) => `${key}=${formatValue(value)}`);
    write(`${new Date().toISOString()} ${level} ${event}${pairs.length ? ' ' : ''}${pairs.join(' ')}\n`);
  };
  return {
    info: (event, fields) => emit('info', event, fields),
    warn: (event, fields) => emit('warn', event, fields),
    error: (event, fields) => emit('error', event, fields),
    bind: (fields) => logger({ ...context, ...fields }, write),
  };
}

module.exports = { logger };
