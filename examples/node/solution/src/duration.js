'use strict';

// Milliseconds in one of each unit a duration string may use.
const UNITS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

// One number and its unit, read where the last one ended ("1h30m" is two parts). "ms" is
// tried before "m": the first alternative that matches wins, and "250ms" is not 250m + "s".
const PART = /(\d+(?:\.\d+)?)(ms|m|s|h|d)/y;

/** The milliseconds that "1h30m", "45s" or "1.5h" stand for; throws a SyntaxError on anything else. */
function parseDuration(text) {
  if (text === '') {
    throw new SyntaxError('empty duration');
  }
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < text.length) {
    const at = PART.lastIndex;
    const part = PART.exec(text);
    if (part === null) {
      throw new SyntaxError(`not a duration: ${JSON.stringify(text)} (at ${at})`);
    }
    total += Number(part[1]) * UNITS[part[2]];
  }
  return total;
}

/** `ms` written with the largest units first, as parseDuration reads it: 5400000 -> "1h30m". */
function formatDuration(ms) {
  if (!Number.isInteger(ms) || ms < 0) {
    throw new RangeError(`not a whole, non-negative number of milliseconds: ${ms}`);
  }
  if (ms === 0) {
    return '0s';
  }
  let rest = ms;
  let text = '';
  for (const [unit, size] of Object.entries(UNITS)) {
    if (rest >= size) {
      text += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  return text;
}

module.exports = { parseDuration, formatDuration };
