import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatIssue, parseConfigText } from '../../src/config/index.js';

// A token limit below governance.default_max_tokens holds no request that sets no output
// cap: every such request is refused (over_limit_capacity). Valid, so a warning, with the
// limit's path, from the same parse that `validate` and a reload run.

const DIGEST = 'a'.repeat(64);

function configWith(governance: string): string {
  return `
server: { listen: 127.0.0.1:8080 }
providers: { east: { type: openai, base_url: 'http://127.0.0.1:9001/v1' } }
routing: { routes: { m: { candidates: [ { provider: east } ] } } }
${governance}
teams:
  small: { rate_limit: { tpm: 3000 }, quota: { tokens_per_day: 1000000 } }
  roomy: { rate_limit: { tpm: 100000 } }
keys:
  - { id: k1, team: small, sha256: '${DIGEST}', tokens_per_day: 2000 }
  - { id: k2, team: roomy, sha256: '${'b'.repeat(64)}', tpm: 4096 }
`;
}

describe('capacity warnings', () => {
  it('a tpm or tokens_per_day below default_max_tokens is a warning naming the limit, the default and the refusal', () => {
    const result = parseConfigText(configWith(''));
    assert.ok(result.ok, JSON.stringify(result));
    const text = result.warnings.map(formatIssue);
    assert.equal(text.length, 2, text.join('\n'));
    assert.match(
      text[0] as string,
      /^teams\.small\.rate_limit\.tpm: 3000 tokens per minute is below governance\.default_max_tokens \(4096\)/,
    );
    assert.match(text[0] as string, /is capped to what the limit holds \(governance\.cap_output\)/);
    assert.match(text[1] as string, /^keys\[0\]\.tokens_per_day: 2000 tokens per day is below governance\.default_max_tokens/);
  });

  it('a default_max_tokens that every limit holds warns about nothing', () => {
    const result = parseConfigText(configWith('governance: { default_max_tokens: 1000 }'));
    assert.ok(result.ok, JSON.stringify(result));
    assert.deepEqual(result.warnings, []);
  });
});
