import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { APIError } from 'openai';
import { GREETING, ROUTES, upstreamBodies, useResponsesFixture } from './fixture.js';

// `truncation: "auto"` against a provider that says the rebuilt conversation is too long,
// and `POST /v1/responses/input_tokens`, through a real gateway to real mocks.

const use = useResponsesFixture();

/** What Anthropic answers a prompt longer than the model's context. */
const TOO_LONG = {
  mode: 'status' as const,
  status: 400,
  body: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 250000 tokens > 200000 maximum' } },
};

async function chainOfThree(): Promise<string> {
  const one = await use.client.responses.create({ model: ROUTES.anthropic, input: 'Oldest turn.' });
  const two = await use.client.responses.create({ model: ROUTES.anthropic, previous_response_id: one.id, input: 'Middle turn.' });
  const three = await use.client.responses.create({ model: ROUTES.anthropic, previous_response_id: two.id, input: 'Newest turn.' });
  return three.id;
}

describe('truncation and counting on the Responses API', () => {
  it('truncation: auto drops the oldest turns when the provider says the conversation is too long, and tries again', async () => {
    const last = await chainOfThree();
    use.fx.reset();
    use.fx.mocks.anthropic.addFault({ ...TOO_LONG, count: 1 });
    const res = await use.client.responses.create({
      model: ROUTES.anthropic,
      previous_response_id: last,
      input: 'And now?',
      truncation: 'auto',
    });
    assert.equal(res.output_text, GREETING.anthropic);
    assert.equal(res.truncation, 'auto');
    const bodies = upstreamBodies(use.fx, 'anthropic');
    assert.equal(bodies.length, 2, 'the first try, refused, then the shorter one');
    const first = JSON.stringify(bodies[0]);
    const second = JSON.stringify(bodies[1]);
    assert.ok(first.includes('Oldest turn.'));
    assert.ok(!second.includes('Oldest turn.'), second);
    assert.ok(second.includes('Newest turn.') && second.includes('And now?'), second);
  });

  it('truncation: disabled (the default) answers 400 context_length_exceeded with the provider’s words, and shortens nothing', async () => {
    const last = await chainOfThree();
    use.fx.reset();
    use.fx.mocks.anthropic.addFault({ ...TOO_LONG, count: 1 });
    await assert.rejects(
      use.client.responses.create({ model: ROUTES.anthropic, previous_response_id: last, input: 'And now?' }),
      (err: APIError) => {
        assert.equal(err.status, 400);
        assert.equal(err.code, 'context_length_exceeded');
        assert.match(err.message, /prompt is too long/);
        return true;
      },
    );
    assert.equal(upstreamBodies(use.fx, 'anthropic').length, 1);
  });

  it('input_tokens counts the request with the conversation it continues, and asks no provider', async () => {
    const count = (body: Record<string, unknown>) =>
      fetch(`${use.fx.gw.url}/v1/responses/input_tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer sy-test-alpha1-kkkkkkkk` },
        body: JSON.stringify(body),
      });
    const alone = await count({ model: ROUTES.gemini, input: 'hello world' });
    assert.equal(alone.status, 200);
    assert.equal(alone.headers.get('x-switchyard-estimated'), 'true');
    const a = (await alone.json()) as { object: string; input_tokens: number };
    assert.equal(a.object, 'response.input_tokens');
    assert.equal(a.input_tokens, 2);
    const first = await use.client.responses.create({ model: ROUTES.gemini, input: 'a much longer first question about many things' });
    use.fx.reset();
    const continued = (await (await count({ model: ROUTES.gemini, input: 'hello world', previous_response_id: first.id })).json()) as {
      input_tokens: number;
    };
    assert.ok(continued.input_tokens > a.input_tokens + 5, JSON.stringify(continued));
    assert.equal(upstreamBodies(use.fx, 'gemini').length, 0);
    const unknown = await count({ model: 'no-such-model', input: 'x' });
    assert.equal(unknown.status, 404);
    const notMine = await count({ model: ROUTES.gemini, input: 'x', previous_response_id: 'resp_nobody' });
    assert.equal(notMine.status, 404);
  });
});
