import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { ANONYMOUS, type Principal } from '../../src/governance/index.js';
import { type ClientSession, ClientSessions, KeySessionsFull } from '../../src/request/mcp/sessions.js';

// The /mcp client sessions on an injected clock: found only by the key that opened them,
// expired after their TTL unless their GET stream is open, bounded by max_entries (the
// idlest goes, an idle one before one that streams), and their stream ended with them.

const ALICE: Principal = { keyId: 'alice', team: 'eng' };
const BOB: Principal = { keyId: 'bob', team: 'eng' };

class Clock {
  nowMs = Date.UTC(2026, 10, 15, 12, 0, 0);
  readonly now = (): number => this.nowMs;
  advance(ms: number): void {
    this.nowMs += ms;
  }
}

/** A GET stream as far as the sessions see one: whether it has ended, and how to end it. */
interface FakeStream {
  writableEnded: boolean;
  ends: number;
  end(): void;
}

function fakeStream(): FakeStream {
  return {
    writableEnded: false,
    ends: 0,
    end() {
      this.writableEnded = true;
      this.ends += 1;
    },
  };
}

function attach(session: ClientSession, stream: FakeStream): void {
  session.stream = stream as unknown as ServerResponse;
}

function sessions(limits: { ttlMs: number; maxEntries: number; maxPerKey?: number }, clock: Clock): ClientSessions {
  return new ClientSessions({ maxPerKey: 1_000_000, ...limits }, clock.now);
}

describe('client sessions', () => {
  it('open gives a fresh session that find returns to the key that opened it, touched', () => {
    const clock = new Clock();
    const all = sessions({ ttlMs: 60_000, maxEntries: 10 }, clock);
    const s = all.open(ALICE, '2025-06-18', 'inspector');
    assert.match(s.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual([s.principal, s.protocolVersion, s.clientName], [ALICE, '2025-06-18', 'inspector']);
    assert.deepEqual([s.openedAtMs, s.lastSeenMs, s.stream, s.eventSeq, s.toldDigest], [clock.nowMs, clock.nowMs, null, 0, null]);
    assert.equal(s.bindings.size, 0);
    assert.notEqual(all.open(ALICE, '2025-06-18', null).id, s.id, 'every session has its own id');
    clock.advance(5_000);
    assert.equal(all.find(s.id, ALICE), s);
    assert.equal(s.lastSeenMs, clock.nowMs, 'found is touched');
    assert.equal(all.find('no-such-session', ALICE), undefined);
    all.closeAll();
  });

  it("another key's session id is as unknown as a missing one, and stays open for its own key", () => {
    const clock = new Clock();
    const all = sessions({ ttlMs: 60_000, maxEntries: 10 }, clock);
    const s = all.open(ALICE, '2025-11-25', null);
    assert.equal(all.find(s.id, BOB), undefined);
    assert.equal(all.find(s.id, ANONYMOUS), undefined);
    assert.equal(all.find(s.id, ALICE), s);
    const open = all.open(ANONYMOUS, '2025-11-25', null);
    assert.equal(all.find(open.id, ANONYMOUS), open, "an open gateway's anonymous caller finds its own");
    assert.equal(all.find(open.id, ALICE), undefined);
    all.closeAll();
  });

  it('an idle session expires after its TTL; one whose GET stream is open does not', () => {
    const clock = new Clock();
    const all = sessions({ ttlMs: 60_000, maxEntries: 10 }, clock);
    const idle = all.open(ALICE, '2025-06-18', null);
    const streaming = all.open(ALICE, '2025-06-18', null);
    attach(streaming, fakeStream());
    clock.advance(59_999);
    assert.equal(all.find(idle.id, ALICE), idle, 'one millisecond short of the TTL');
    clock.advance(60_000);
    assert.equal(all.find(idle.id, ALICE), undefined, 'a TTL after its last use');
    assert.equal(all.find(streaming.id, ALICE), streaming, 'an open stream is not idle');
    assert.equal(all.size, 1);
    all.closeAll();
  });

  it('past max_entries a new session drops the idlest, an idle one before one that streams', () => {
    const clock = new Clock();
    const all = sessions({ ttlMs: 600_000, maxEntries: 3 }, clock);
    const streaming = all.open(ALICE, '2025-06-18', null);
    attach(streaming, fakeStream());
    clock.advance(1);
    const older = all.open(ALICE, '2025-06-18', null);
    clock.advance(1);
    const newer = all.open(ALICE, '2025-06-18', null);
    clock.advance(1);
    // A use makes `older` the latest: `newer` is now the idlest without a stream.
    assert.equal(all.find(older.id, ALICE), older);
    const fourth = all.open(ALICE, '2025-06-18', null);
    assert.equal(all.size, 3);
    assert.equal(all.find(newer.id, ALICE), undefined, 'the idlest idle session went');
    for (const kept of [streaming, older, fourth]) assert.equal(all.find(kept.id, ALICE), kept);
    all.closeAll();
  });

  it('when every session streams, the idlest goes anyway, and its stream is ended', () => {
    const clock = new Clock();
    const all = sessions({ ttlMs: 600_000, maxEntries: 2 }, clock);
    const streams = [fakeStream(), fakeStream()];
    const first = all.open(ALICE, '2025-06-18', null);
    attach(first, streams[0] as FakeStream);
    const second = all.open(ALICE, '2025-06-18', null);
    attach(second, streams[1] as FakeStream);
    all.open(ALICE, '2025-06-18', null);
    assert.equal(all.find(first.id, ALICE), undefined);
    assert.equal(streams[0]?.ends, 1);
    assert.equal(all.find(second.id, ALICE), second);
    assert.equal(streams[1]?.ends, 0);
    all.closeAll();
  });

  it('configure with a smaller max_entries evicts at once, idlest first', () => {
    const clock = new Clock();
    const all = sessions({ ttlMs: 600_000, maxEntries: 5 }, clock);
    const opened: ClientSession[] = [];
    for (let i = 0; i < 5; i += 1) {
      opened.push(all.open(ALICE, '2025-06-18', `client-${i}`));
      clock.advance(1);
    }
    all.configure({ ttlMs: 600_000, maxEntries: 2, maxPerKey: 1_000_000 });
    assert.equal(all.size, 2);
    assert.deepEqual(
      [...all.values()].map((s) => s.clientName),
      ['client-3', 'client-4'],
    );
    all.closeAll();
  });

  it('configure with a shorter TTL expires what is now idle for longer', () => {
    const clock = new Clock();
    const all = sessions({ ttlMs: 600_000, maxEntries: 5 }, clock);
    const s = all.open(ALICE, '2025-06-18', null);
    clock.advance(30_000);
    all.configure({ ttlMs: 10_000, maxEntries: 5, maxPerKey: 1_000_000 });
    assert.equal(all.size, 0);
    assert.equal(all.find(s.id, ALICE), undefined);
    all.closeAll();
  });

  it('close ends the GET stream once and forgets the session; an ended stream is not ended again', () => {
    const clock = new Clock();
    const all = sessions({ ttlMs: 60_000, maxEntries: 10 }, clock);
    const s = all.open(ALICE, '2025-06-18', null);
    const stream = fakeStream();
    attach(s, stream);
    all.close(s);
    assert.equal(stream.ends, 1);
    assert.equal(s.stream, null);
    assert.equal(all.find(s.id, ALICE), undefined);
    all.close(s);
    assert.equal(stream.ends, 1, 'closing twice ends nothing more');
    const t = all.open(ALICE, '2025-06-18', null);
    const gone = fakeStream();
    gone.writableEnded = true;
    attach(t, gone);
    all.close(t);
    assert.equal(gone.ends, 0, 'a stream that already ended is left alone');
    all.closeAll();
  });

  it('closeAll ends every session and its stream', () => {
    const clock = new Clock();
    const all = sessions({ ttlMs: 60_000, maxEntries: 10 }, clock);
    const streams = [fakeStream(), fakeStream()];
    const opened = [all.open(ALICE, '2025-06-18', null), all.open(BOB, '2025-06-18', null), all.open(ANONYMOUS, '2025-11-25', null)];
    attach(opened[0] as ClientSession, streams[0] as FakeStream);
    attach(opened[1] as ClientSession, streams[1] as FakeStream);
    all.closeAll();
    assert.equal(all.size, 0);
    assert.deepEqual(
      streams.map((s) => s.ends),
      [1, 1],
    );
    for (const s of opened) assert.equal(all.find(s.id, s.principal), undefined);
  });
});

describe('client sessions per key (max_per_key)', () => {
  it('a key at its cap gives up its own idlest session, never another key s, even when the table is full', () => {
    const clock = new Clock();
    const all = sessions({ ttlMs: 600_000, maxEntries: 5, maxPerKey: 3 }, clock);
    const bobs = [all.open(BOB, '2025-06-18', 'bob-0'), all.open(BOB, '2025-06-18', 'bob-1')];
    clock.advance(1);
    const alices = [0, 1, 2].map((i) => all.open(ALICE, '2025-06-18', `alice-${i}`));
    clock.advance(1);
    all.find((alices[0] as ClientSession).id, ALICE);
    for (let i = 3; i < 20; i += 1) all.open(ALICE, '2025-06-18', `alice-${i}`);
    for (const b of bobs) assert.equal(all.find(b.id, BOB), b, `${b.clientName} survives alice's flood`);
    const left = [...all.values()].filter((s) => s.principal === ALICE).map((s) => s.clientName);
    assert.deepEqual(left, ['alice-17', 'alice-18', 'alice-19']);
    all.closeAll();
  });

  it('a key whose every session is busy is refused; a session that is not busy goes first, idlest first', () => {
    const clock = new Clock();
    const all = sessions({ ttlMs: 600_000, maxEntries: 100, maxPerKey: 3 }, clock);
    const [a, b, c] = [0, 1, 2].map((i) => all.open(ALICE, '2025-06-18', `alice-${i}`)) as [ClientSession, ClientSession, ClientSession];
    a.requests = 1;
    attach(b, fakeStream());
    c.inflight.set(7, { abort() {} } as never);
    assert.throws(() => all.open(ALICE, '2025-06-18', 'alice-3'), KeySessionsFull);
    assert.equal(all.size, 3, 'nothing was evicted for the refused session');
    assert.ok(all.open(BOB, '2025-06-18', 'bob'), 'another key is not held by alice s cap');
    assert.ok(all.open(ANONYMOUS, '2025-06-18', null) && all.open(ANONYMOUS, '2025-06-18', null), 'anonymous callers are not capped');
    a.requests = 0;
    all.open(ALICE, '2025-06-18', 'alice-3');
    assert.equal(all.find(a.id, ALICE), undefined, 'the session with nothing in flight went');
    assert.equal(all.find(b.id, ALICE), b);
    all.closeAll();
  });

  it('configure with a smaller max_per_key ends each key s excess idle sessions at once', () => {
    const clock = new Clock();
    const all = sessions({ ttlMs: 600_000, maxEntries: 100, maxPerKey: 10 }, clock);
    for (let i = 0; i < 4; i += 1) all.open(ALICE, '2025-06-18', `alice-${i}`);
    all.open(BOB, '2025-06-18', 'bob');
    all.configure({ ttlMs: 600_000, maxEntries: 100, maxPerKey: 2 });
    assert.deepEqual(
      [...all.values()].map((s) => s.clientName),
      ['alice-2', 'alice-3', 'bob'],
    );
    all.closeAll();
  });
});
