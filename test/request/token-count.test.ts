import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { countInputTokens } from '../../src/request/token-count.js';

// The gateway's own count_tokens answer: the text of the system prompt, every message
// block and every tool definition, counted with o200k; an image or a document a fixed count.

describe('counting a count_tokens request with o200k', () => {
  it('one user message "hello world" is its two tokens', async () => {
    assert.equal(await countInputTokens({ model: 'gpt', messages: [{ role: 'user', content: 'hello world' }] }), 2);
  });

  it('counts the system prompt, text, tool use and tool result blocks, thinking and tool definitions; an image is 1600', async () => {
    const tool = {
      name: 'get_weather',
      description: 'Current weather',
      input_schema: { type: 'object', properties: { city: { type: 'string' } } },
    };
    const body = {
      model: 'gpt',
      system: [{ type: 'text', text: 'You are terse.' }],
      tools: [tool],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather in Paris?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo'.repeat(1000) } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Call the tool.', signature: 'sig' },
            { type: 'tool_use', id: 'tu_1', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: [{ type: 'text', text: 'Sunny, 21 °C' }] }] },
      ],
    };
    const expected =
      countTokens('You are terse.') +
      countTokens(JSON.stringify(tool)) +
      countTokens('Weather in Paris?') +
      1600 +
      countTokens('Call the tool.') +
      countTokens('get_weather') +
      countTokens(JSON.stringify({ city: 'Paris' })) +
      countTokens('Sunny, 21 °C');
    assert.equal(await countInputTokens(body), expected);
  });

  it('a text larger than one slice is counted in slices, within a token per slice of the whole', async () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(5000);
    const counted = await countInputTokens({ model: 'gpt', messages: [{ role: 'user', content: text }] });
    const whole = countTokens(text);
    assert.ok(Math.abs(counted - whole) <= Math.ceil(text.length / (64 * 1024)), `${counted} vs ${whole}`);
  });
});
