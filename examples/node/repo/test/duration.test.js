'use strict';

const assert = require('node:assert/strict');
const { describe, it } = require('node:test');

const { formatDuration, parseDuration } = require('../src/duration');

// Node 20's JUnit report names no file: the top-level block is named after this one.
describe('duration', () => {
  describe('parseDuration', () => {
    it('reads one unit', () => {
      assert.equal(parseDuration('45s'), 45_000);
    });

    it('adds up several units', () => {
      assert.equal(parseDuration('1h30m'), 5_400_000);
    });

    it('reads fractions', () => {
      assert.equal(parseDuration('1.5h'), 5_400_000);
    });

    it('reads milliseconds', () => {
      assert.equal(parseDuration('250ms'), 250);
    });

    it('reads milliseconds after other units', () => {
      assert.equal(parseDuration('1m30s250ms'), 90_250);
    });

    it('rejects what is not a duration', () => {
      for (const text of ['', 'soon', '10', '5 min', '1h 30m']) {
        assert.throws(() => parseDuration(text), SyntaxError, text);
      }
    });
  });

  describe('formatDuration', () => {
    it('writes the largest units first', () => {
      assert.equal(formatDuration(5_400_000), '1h30m');
      assert.equal(formatDuration(90_061_001), '1d1h1m1s1ms');
    });

    it('writes zero as 0s', () => {
      assert.equal(formatDuration(0), '0s');
    });

    it('round-trips through parseDuration', () => {
      for (const ms of [1, 999, 1_000, 61_000, 3_600_250, 90_061_001]) {
        assert.equal(parseDuration(formatDuration(ms)), ms);
      }
    });
  });
});
