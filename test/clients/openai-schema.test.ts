import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPENAI_SPEC_MISSING, openaiSchema, parseSseEvents, type SseEvent } from '../support/openai-schema.js';

// The harness that checks bodies and stream events against OpenAI's published schema, checked
// itself: it must pass what is valid and fail what is not, naming where.

const schema = openaiSchema();

const usage = {
  input_tokens: 3,
  input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
  output_tokens: 4,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 7,
};
const message = {
  id: 'msg_1',
  type: 'message',
  status: 'completed',
  role: 'assistant',
  content: [{ type: 'output_text', text: 'Hi.', annotations: [], logprobs: [] }],
};
/** A minimal Response: the fields the spec requires, and usage. */
const response = {
  id: 'resp_1',
  object: 'response',
  created_at: 1_700_000_000,
  status: 'completed',
  error: null,
  incomplete_details: null,
  instructions: null,
  model: 'gpt-test',
  tools: [],
  output: [message],
  parallel_tool_calls: true,
  metadata: {},
  tool_choice: 'auto',
  temperature: 1,
  top_p: 1,
  usage,
};

function sse(type: string, data: Record<string, unknown>, sequence: number): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence, ...data })}\n\n`;
}

/** created, one text delta, completed: the shortest stream worth checking. */
function minimalStream(sequence: readonly number[] = [0, 1, 2]): SseEvent[] {
  const at = { item_id: 'msg_1', output_index: 0, content_index: 0 };
  return parseSseEvents(
    sse('response.created', { response: { ...response, status: 'in_progress', output: [], usage: undefined } }, sequence[0] as number) +
      sse('response.output_text.delta', { ...at, delta: 'Hi.', logprobs: [] }, sequence[1] as number) +
      sse('response.completed', { response }, sequence[2] as number),
  );
}

describe('the OpenAI schema harness', { skip: schema === null ? OPENAI_SPEC_MISSING : false }, () => {
  it('a minimal valid Response passes', () => {
    assert.deepEqual(schema!.validate('Response', response), []);
  });

  it('a bad status and a missing usage field fail, each naming its path', () => {
    const { output_tokens: _, ...short } = usage;
    const problems = schema!.validate('Response', { ...response, status: 'weird', usage: short });
    assert.ok(
      problems.some((p) => p.startsWith('/status ')),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) => p.startsWith('/usage ') && p.includes('output_tokens')),
      problems.join('\n'),
    );
  });

  it("an output item is checked against the branch its type picks, and only that branch's errors are told", () => {
    const call = { id: 'fc_1', type: 'function_call', call_id: 'call_1', arguments: '{}', status: 'completed' };
    const problems = schema!.validate('Response', { ...response, output: [call] });
    assert.deepEqual(problems, ["/output/0 must have required property 'name'"]);
  });

  it('the event types map to their components as the spec’s stream union declares them', () => {
    assert.equal(schema!.responsesEventComponent('response.output_text.delta'), 'ResponseTextDeltaEvent');
    assert.equal(schema!.responsesEventComponent('response.completed'), 'ResponseCompletedEvent');
    assert.equal(schema!.responsesEventComponent('response.no_such_event'), undefined);
  });

  it('a minimal valid event sequence passes', () => {
    assert.deepEqual(schema!.validateResponsesStream(minimalStream()), []);
  });

  it('a gap in sequence_number fails at the event after it', () => {
    const problems = schema!.validateResponsesStream(minimalStream([0, 2, 3]));
    assert.ok(
      problems.some((p) => p.startsWith('event 1 (response.output_text.delta): sequence_number is 2, expected 1')),
      problems.join('\n'),
    );
  });

  it('an event whose data breaks its component, or whose SSE name differs from its type, fails', () => {
    const events = minimalStream();
    const delta = events[1] as SseEvent;
    const broken = { ...(delta.data as Record<string, unknown>), delta: 42 };
    const problems = schema!.validateResponsesStream([
      events[0] as SseEvent,
      { event: 'response.other', data: broken },
      events[2] as SseEvent,
    ]);
    assert.ok(problems.includes('event 1 (response.output_text.delta): /delta must be string'), problems.join('\n'));
    assert.ok(problems.includes('event 1 (response.output_text.delta): SSE event name is response.other'), problems.join('\n'));
  });
});
