import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { APIError } from 'openai';
import { expectValid, GREETING, ROUTES, upstreamBodies, useResponsesFixture } from './fixture.js';

// The Conversations API served by the gateway from its own store, with the official
// `openai` client: a conversation's life, its items' paging, a response that reads a
// conversation and appends its turn to it, and team ownership.

const use = useResponsesFixture();

const valid = expectValid;

const notFound = (err: APIError): boolean => {
  assert.equal(err.status, 404);
  assert.equal(err.code, 'conversation_not_found');
  return true;
};

const said = (text: string) => ({ type: 'message' as const, role: 'user' as const, content: text });

describe('the Conversations API, served by the gateway', () => {
  it('creates, reads, updates and deletes a conversation; a deleted one is not found', async () => {
    const conv = await use.client.conversations.create({ metadata: { topic: 'demo' }, items: [said('first')] });
    valid('ConversationResource', conv);
    assert.match(conv.id, /^conv_/);
    assert.equal(conv.object, 'conversation');
    assert.deepEqual(conv.metadata, { topic: 'demo' });
    const read = await use.client.conversations.retrieve(conv.id);
    assert.deepEqual(read, conv);
    const updated = await use.client.conversations.update(conv.id, { metadata: { topic: 'changed' } });
    assert.deepEqual(updated.metadata, { topic: 'changed' });
    const deleted = await use.client.conversations.delete(conv.id);
    assert.deepEqual(deleted, { id: conv.id, object: 'conversation.deleted', deleted: true });
    await assert.rejects(use.client.conversations.retrieve(conv.id), notFound);
  });

  it('adds, pages, reads and deletes items, oldest first or newest first', async () => {
    const conv = await use.client.conversations.create({ items: [said('one'), said('two')] });
    const added = await use.client.conversations.items.create(conv.id, { items: [said('three'), said('four')] });
    valid('ConversationItemList', added);
    assert.equal(added.data.length, 2);
    const asc = await use.client.conversations.items.list(conv.id, { order: 'asc', limit: 3 });
    valid('ConversationItemList', {
      object: 'list',
      data: asc.data,
      first_id: asc.data[0]?.id,
      last_id: asc.data.at(-1)?.id,
      has_more: asc.has_more,
    });
    assert.deepEqual(
      asc.data.map((i) => (i.type === 'message' ? JSON.stringify(i.content) : i.type)),
      ['one', 'two', 'three'].map((t) => JSON.stringify([{ type: 'input_text', text: t }])),
    );
    assert.equal(asc.has_more, true);
    const rest = await use.client.conversations.items.list(conv.id, { order: 'asc', after: asc.data.at(-1)?.id as string });
    assert.equal(rest.data.length, 1);
    assert.equal(rest.has_more, false);
    const desc = await use.client.conversations.items.list(conv.id, { limit: 1 });
    assert.match(JSON.stringify(desc.data[0]), /four/);
    const first = asc.data[0] as { id: string };
    const item = await use.client.conversations.items.retrieve(first.id, { conversation_id: conv.id });
    assert.equal((item as { id: string }).id, first.id);
    const after = await use.client.conversations.items.delete(first.id, { conversation_id: conv.id });
    assert.equal(after.id, conv.id);
    await assert.rejects(use.client.conversations.items.retrieve(first.id, { conversation_id: conv.id }), notFound);
    const left = await use.client.conversations.items.list(conv.id, { order: 'asc' });
    assert.equal(left.data.length, 3);
  });

  it('a response in a conversation reads its items as context and appends its turn', async () => {
    const conv = await use.client.conversations.create({ items: [said('My favourite colour is teal.')] });
    const one = await use.client.responses.create({
      model: ROUTES.anthropic,
      conversation: conv.id,
      input: 'What is my favourite colour?',
    });
    assert.equal(one.output_text, GREETING.anthropic);
    const sent = JSON.stringify(upstreamBodies(use.fx, 'anthropic').at(-1));
    assert.ok(sent.includes('My favourite colour is teal.'), sent);
    // Appended after the answer was sent; give the store its moment.
    let items = await use.client.conversations.items.list(conv.id, { order: 'asc' });
    for (let i = 0; i < 50 && items.data.length < 3; i += 1) {
      await new Promise((r) => setTimeout(r, 20));
      items = await use.client.conversations.items.list(conv.id, { order: 'asc' });
    }
    assert.equal(items.data.length, 3);
    assert.equal(items.data[2]?.type, 'message');
    assert.match(JSON.stringify(items.data[2]), /Hello from claude-up/);
    // The next turn, on another provider, sees all of it.
    await use.client.responses.create({ model: ROUTES.gemini, conversation: { id: conv.id }, input: 'And again?' });
    const next = JSON.stringify(upstreamBodies(use.fx, 'gemini').at(-1));
    for (const t of ['My favourite colour is teal.', 'What is my favourite colour?', GREETING.anthropic, 'And again?']) {
      assert.ok(next.includes(t), `${t} in ${next}`);
    }
  });

  it("another team's conversation is not found, and a response naming it reaches no provider", async () => {
    const conv = await use.client.conversations.create({ items: [said('private')] });
    const other = use.fx.client('beta1');
    await assert.rejects(other.conversations.retrieve(conv.id), notFound);
    await assert.rejects(other.conversations.items.list(conv.id), notFound);
    await assert.rejects(other.conversations.delete(conv.id), notFound);
    use.fx.reset();
    await assert.rejects(other.responses.create({ model: ROUTES.anthropic, conversation: conv.id, input: 'peek' }), notFound);
    assert.equal(upstreamBodies(use.fx, 'anthropic').length, 0);
    assert.equal((await use.client.conversations.retrieve(conv.id)).id, conv.id);
  });

  it('bad input is a 400 naming the field', async () => {
    await assert.rejects(
      use.client.conversations.create({ metadata: { k: 'v'.repeat(600) } }),
      (err: APIError) => err.status === 400 && err.param === 'metadata.k',
    );
    await assert.rejects(
      use.client.responses.create({ model: ROUTES.anthropic, conversation: 'conv_x', previous_response_id: 'resp_y', input: 'hi' }),
      (err: APIError) => err.status === 400 && err.param === 'conversation',
    );
    const conv = await use.client.conversations.create({});
    await assert.rejects(
      use.client.conversations.items.list(conv.id, { limit: 1000 }),
      (err: APIError) => err.status === 400 && err.param === 'limit',
    );
  });
});
