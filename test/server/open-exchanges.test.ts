import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { ControlSlot, Exchange } from '../../src/request/index.js';
import { OpenExchanges } from '../../src/server/open-exchanges.js';

// The requests in progress, for the drain: the list hands out each request's control slot
// and keeps the links itself; the Exchange holds the slot, never a neighbour.

const req = { headers: {}, url: '/v1/chat/completions', method: 'POST' } as unknown as IncomingMessage;
const res = {} as ServerResponse;

describe('the open-requests list', () => {
  it('holds the requests in progress; a removed one leaves, a second removal is a no-op', () => {
    const open = new OpenExchanges();
    const [a, b, c] = [open.add(), open.add(), open.add()];
    assert.equal(open.size, 3);
    open.delete(b);
    open.delete(b);
    assert.equal(open.size, 2);
    assert.deepEqual([...open], [c, a]);
    open.delete(new ControlSlot());
    assert.equal(open.size, 2, 'a slot the list did not hand out is not in it');
  });

  it('the drain may end (and so remove) each request it is given while it walks the list', () => {
    const open = new OpenExchanges();
    const xs = Array.from({ length: 4 }, () => new Exchange(req, res, () => undefined, open.add()));
    const stopped: string[] = [];
    for (const x of xs) x.running.stopAttempt = (why) => stopped.push(why);
    for (const slot of open) {
      slot.interrupt('drain');
      open.delete(slot);
    }
    assert.equal(open.size, 0);
    assert.deepEqual(stopped, ['drain', 'drain', 'drain', 'drain']);
    for (const x of xs) assert.equal(x.stopped, 'drain');
  });
});
