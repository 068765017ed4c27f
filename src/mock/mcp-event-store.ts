import type { EventId, EventStore, StreamId } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

interface StoredEvent {
  readonly streamId: StreamId;
  readonly message: JSONRPCMessage;
}

// One session's history; a long benchmark run must not grow it without end, and a client
// that fell further behind than this simply misses the oldest events.
const eventLimit = 1000;

/**
 * One session's SSE events, kept so a client that reconnects with `Last-Event-ID` is sent
 * what it missed on that stream. Ids are `<streamId>#<n>`, n increasing across the session,
 * so the stream an id belongs to is readable from the id even after it was evicted.
 */
export class McpEventStore implements EventStore {
  #next = 0;
  // Insertion-ordered: replay walks it from the client's last event onwards.
  #events = new Map<EventId, StoredEvent>();
  // Requests whose answer a fault throws away: a resuming client must not get it back either.
  readonly #lost = new Set<string>();

  /** The answer to request `requestId` is not kept (it gets an id, so the stream goes on). */
  lose(requestId: string): void {
    this.#lost.add(requestId);
  }

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    this.#next += 1;
    const id = `${streamId}#${this.#next}`;
    const answers = 'id' in message && ('result' in message || 'error' in message) ? String(message.id) : undefined;
    if (answers !== undefined && this.#lost.delete(answers)) return id;
    this.#events.set(id, { streamId, message });
    if (this.#events.size > eventLimit) {
      const oldest = this.#events.keys().next().value;
      if (oldest !== undefined) this.#events.delete(oldest);
    }
    return id;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return streamOf(eventId);
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const streamId = streamOf(lastEventId);
    const after = sequenceOf(lastEventId);
    if (streamId === undefined || after === undefined) return '';
    for (const [id, event] of this.#events) {
      // A priming event (an empty message) marks a position; there is nothing in it to resend.
      if (event.streamId !== streamId || (sequenceOf(id) ?? 0) <= after || !('jsonrpc' in event.message)) continue;
      await send(id, event.message);
    }
    return streamId;
  }
}

function streamOf(eventId: EventId): StreamId | undefined {
  const hash = eventId.lastIndexOf('#');
  return hash <= 0 ? undefined : eventId.slice(0, hash);
}

function sequenceOf(eventId: EventId): number | undefined {
  const n = Number(eventId.slice(eventId.lastIndexOf('#') + 1));
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}
