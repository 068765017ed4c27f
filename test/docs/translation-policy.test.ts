import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import {
  anthropicRequestToCanonical,
  canonicalToBedrockRequest,
  canonicalToGeminiRequest,
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
    const keys = TRANSLATION_POLICY.map((r) => `${r.from} ${r.to} ${r.field}`);
    assert.deepEqual(keys.length, new Set(keys).size);
  });

  it('has a Gemini and a Bedrock row for every field of the rows towards the other client protocol', () => {
    for (const from of ['openai', 'anthropic'] as const) {
      const fields = (to: string) => new Set(TRANSLATION_POLICY.filter((r) => r.from === from && r.to === to).map((r) => r.field));
      for (const provider of ['gemini', 'bedrock']) {
        const rows = fields(provider);
        for (const field of fields(from === 'openai' ? 'anthropic' : 'openai'))
          assert.ok(rows.has(field), `${from} ${field} has no ${provider} row`);
      }
    }
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
    for (const rule of TRANSLATION_POLICY.filter(
      (r) => r.from === from && r.to === (from === 'openai' ? 'anthropic' : 'openai') && r.outcome !== 'mapped' && !r.field.includes('.'),
    )) {
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

  // The provider-only protocols' rows, tried end to end: read, then written for such a
  // provider. What the client is told was dropped is what the reader dropped, less what the
  // writer carried, with what the writer dropped.
  const providerSamples: Record<'openai' | 'anthropic', Record<string, unknown>> = {
    openai: { ...openaiSamples, parallel_tool_calls: false, user: 'u', safety_identifier: 'u', metadata: { user_id: 'u' } },
    anthropic: { ...anthropicSamples, metadata: { user_id: 'u' } },
  };
  /** A dropped field the writer lists under another name: the end-user id is one value, whatever carried it. */
  const listedAs: Record<string, string> = { 'openai safety_identifier': 'user', 'openai metadata': 'user' };
  const targets = [
    {
      to: 'gemini' as const,
      write: canonicalToGeminiRequest,
      // Where a carried sampling setting lands in the written body.
      carriedAt: (body: Record<string, unknown>) => body.generationConfig as Record<string, unknown>,
      carriedKey: { seed: 'seed', frequency_penalty: 'frequencyPenalty', presence_penalty: 'presencePenalty', top_k: 'topK' } as Record<
        string,
        string
      >,
    },
    {
      to: 'bedrock' as const,
      write: canonicalToBedrockRequest,
      carriedAt: (body: Record<string, unknown>) => body.additionalModelRequestFields as Record<string, unknown>,
      carriedKey: { top_k: 'top_k' } as Record<string, string>,
    },
  ];
  for (const { to, write, carriedAt, carriedKey } of targets) {
    for (const { from, read, base } of cases) {
      const samples = providerSamples[from];
      const rows = TRANSLATION_POLICY.filter(
        (r) => r.from === from && r.to === to && !r.field.includes('.') && (r.outcome !== 'mapped' || Object.hasOwn(carriedKey, r.field)),
      );
      for (const rule of rows) {
        it(`${from} -> ${to} ${rule.field}: ${rule.outcome}, as the table says`, () => {
          assert.ok(Object.hasOwn(samples, rule.field), `add a sample value for ${rule.field}`);
          // A Claude model id: Bedrock carries Anthropic's own fields for Claude only.
          const canonical = read({
            ...base,
            model: to === 'bedrock' ? 'anthropic.claude-sonnet-4-5' : base.model,
            [rule.field]: samples[rule.field],
          });
          const written = canonical.ok ? write(canonical.value, { client: from }) : canonical;
          if (rule.outcome === 'unable') {
            assert.equal(written.ok, false, `${rule.field} should be refused`);
            if (!written.ok) assert.equal(written.kind, 'unsupported');
            return;
          }
          assert.ok(canonical.ok && written.ok, `${rule.field} should not be refused`);
          const carried = written.value.carried ?? [];
          const dropped = [...new Set([...canonical.value.dropped.filter((f) => !carried.includes(f)), ...written.value.dropped])];
          if (rule.outcome === 'dropped') assert.deepEqual(dropped, [listedAs[`${from} ${rule.field}`] ?? rule.field]);
          else {
            assert.deepEqual(dropped, []);
            assert.equal(carriedAt(written.value.body)[carriedKey[rule.field] as string], samples[rule.field]);
          }
        });
      }
    }
  }
});
