import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { type KeyInput, keyTableMarkdown, requestKey } from '../../src/cache/index.js';

// The cache key: the same request in another key order or with a default written out is one
// key; anything that changes the answer is another; docs/cache.md shows the code's table.

function input(body: Record<string, unknown>, more: Partial<KeyInput> = {}): KeyInput {
  return {
    operation: 'chat',
    protocol: 'openai',
    route: 'gpt-4o-mini',
    scope: 'team:a',
    namespace: null,
    body,
    headers: {},
    guardrails: '',
    ...more,
  };
}

const base = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi there' }], temperature: 0.2 };

describe('the cache key', () => {
  it('does not depend on key order, defaults written out, stream or the end-user id', () => {
    const k = requestKey(input(base)).key;
    assert.equal(requestKey(input({ temperature: 0.2, messages: [{ content: 'Hi there', role: 'user' }], model: 'x' })).key, k);
    assert.equal(requestKey(input({ ...base, n: 1, top_p: 1, presence_penalty: 0, stop: null })).key, k);
    assert.equal(requestKey(input({ ...base, stream: true, stream_options: { include_usage: true }, user: 'u-1' })).key, k);
  });

  it('changes with every output-affecting field, the route, the scope, the namespace, the protocol and the beta headers', () => {
    const k = requestKey(input(base)).key;
    const others = [
      input({ ...base, temperature: 0.3 }),
      input({ ...base, seed: 1 }),
      input({ ...base, tools: [{ type: 'function', function: { name: 'f' } }] }),
      input({ ...base, tool_choice: 'required' }),
      input({ ...base, response_format: { type: 'json_object' } }),
      input({ ...base, reasoning_effort: 'high' }),
      input({ ...base, parallel_tool_calls: false }),
      input({ ...base, prediction: { type: 'content', content: 'x' } }),
      input({ ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi there', cache_control: { type: 'ephemeral' } }] }] }),
      input(base, { route: 'other' }),
      input(base, { scope: 'team:b' }),
      input(base, { namespace: 'v2' }),
      input(base, { protocol: 'anthropic' }),
      input(base, { operation: 'completions' }),
      input(base, { headers: { 'openai-beta': 'assistants=v2' } }),
      input(base, { headers: { 'anthropic-beta': 'prompt-caching-2024-07-31' } }),
      input(base, { guardrails: 'abc' }),
    ];
    const keys = new Set(others.map((i) => requestKey(i).key));
    assert.equal(keys.size, others.length, 'each variant has a key of its own');
    assert.ok(!keys.has(k));
  });

  it('gives the semantic context without the last user turn, and counts user turns but not a system prompt', () => {
    const a = requestKey(
      input({
        ...base,
        messages: [
          { role: 'system', content: 'S' },
          { role: 'user', content: 'What is X?' },
        ],
      }),
    );
    const b = requestKey(
      input({
        ...base,
        messages: [
          { role: 'system', content: 'S' },
          { role: 'user', content: 'x is what' },
        ],
      }),
    );
    assert.notEqual(a.key, b.key);
    assert.equal(a.semantic?.context, b.semantic?.context);
    assert.equal(a.semantic?.text, 'What is X?');
    assert.equal(a.userTurns, 1);
    const c = requestKey(
      input({
        ...base,
        messages: [
          { role: 'system', content: 'T' },
          { role: 'user', content: 'What is X?' },
        ],
      }),
    );
    assert.notEqual(c.semantic?.context, a.semantic?.context, 'another system prompt is another context');
    const image = requestKey(
      input({ ...base, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:,' } }] }] }),
    );
    assert.equal(image.semantic, null, 'a turn that is not text alone has no semantic lookup');
    const anthropic = requestKey(
      input(
        {
          model: 'c',
          max_tokens: 10,
          messages: [
            { role: 'user', content: 'q' },
            { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'r' }] },
          ],
        },
        { protocol: 'anthropic' },
      ),
    );
    assert.equal(anthropic.userTurns, 1, "a tool's result is not the user's turn");
    assert.equal(anthropic.semantic, null);
  });

  it('is documented in docs/cache.md exactly as the code has it', () => {
    const doc = readFileSync(resolve(import.meta.dirname, '../../docs/cache.md'), 'utf8');
    const start = doc.indexOf('<!-- key-table:start -->');
    const end = doc.indexOf('<!-- key-table:end -->');
    assert.ok(start >= 0 && end > start, 'docs/cache.md has the key table markers');
    assert.equal(doc.slice(start + '<!-- key-table:start -->'.length, end).trim(), keyTableMarkdown());
  });
});
