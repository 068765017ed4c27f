import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import {
  anthropicRequestToCanonical,
  openaiRequestToCanonical,
  TRANSLATION_POLICY,
  translationPolicyMarkdown,
} from '../../src/providers/index.js';

// docs/providers.md prints the translation policy; this keeps the printed table and the one
// the converters consult equal, and checks the table against the converters themselves.

const ROOT = resolve(import.meta.dirname, '../..');

describe('the translation policy in docs/providers.md', () => {
  it('prints exactly the table the converters consult', () => {
    const doc = readFileSync(resolve(ROOT, 'docs/providers.md'), 'utf8');
    const start = doc.indexOf('<!-- translation-policy:start -->\n');
    const end = doc.indexOf('\n<!-- translation-policy:end -->');
    assert.ok(start >= 0 && end > start, 'docs/providers.md has the translation-policy markers');
    const printed = doc.slice(start + '<!-- translation-policy:start -->\n'.length, end);
    assert.equal(printed, translationPolicyMarkdown(), 'regenerate the block from translationPolicyMarkdown()');
  });

  it('names each field once per direction', () => {
    const keys = TRANSLATION_POLICY.map((r) => `${r.from} ${r.field}`);
    assert.deepEqual(keys.length, new Set(keys).size);
  });

  // Each top-level row, tried: a sample value that asks for something, and what the reader does with it.
  const openaiSamples: Record<string, unknown> = {
    seed: 1,
    frequency_penalty: 0.5,
    presence_penalty: 0.5,
    logit_bias: { '1': 1 },
    store: true,
    prediction: { type: 'content', content: 'x' },
    service_tier: 'flex',
    prompt_cache_key: 'k',
    prompt_cache_retention: '24h',
    verbosity: 'low',
    n: 2,
    logprobs: true,
    top_logprobs: 2,
    modalities: ['text', 'audio'],
    audio: { voice: 'alloy', format: 'wav' },
    web_search_options: {},
    functions: [],
    function_call: 'auto',
  };
  const anthropicSamples: Record<string, unknown> = {
    cache_control: { type: 'ephemeral' },
    top_k: 3,
    service_tier: 'auto',
    inference_geo: 'us',
    speed: 'fast',
    container: 'c',
    mcp_servers: [],
    context_management: {},
  };
  const cases = [
    { from: 'openai' as const, samples: openaiSamples, read: openaiRequestToCanonical, base: { model: 'm', messages: [] } },
    {
      from: 'anthropic' as const,
      samples: anthropicSamples,
      read: anthropicRequestToCanonical,
      base: { model: 'm', max_tokens: 5, messages: [] },
    },
  ];
  for (const { from, samples, read, base } of cases) {
    for (const rule of TRANSLATION_POLICY.filter((r) => r.from === from && r.outcome !== 'mapped' && !r.field.includes('.'))) {
      it(`${from} ${rule.field}: ${rule.outcome}, as the table says`, () => {
        assert.ok(Object.hasOwn(samples, rule.field), `add a sample value for ${rule.field}`);
        const t = read({ ...base, [rule.field]: samples[rule.field] });
        if (rule.outcome === 'dropped') {
          assert.ok(t.ok, `${rule.field} should be dropped, not refused`);
          assert.deepEqual(t.value.dropped, [rule.field]);
        } else {
          assert.equal(t.ok, false, `${rule.field} should be refused`);
          if (!t.ok) assert.equal(t.kind, 'unsupported');
        }
      });
    }
  }
});
