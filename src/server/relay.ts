import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { openaiErrorBody } from '../errors.js';
import { type TokenUsage, usageFromJson, usageFromSseTail } from '../providers/index.js';

// Relays one upstream response to the client as it arrives: each chunk is written as soon
// as it is read, the upstream is paused while the client's socket is full, and nothing is
// buffered whole (only a bounded copy is kept to read the token usage at the end).

/** Upstream headers that describe the upstream connection, not the response. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection']);

const MAX_USAGE_BODY_BYTES = 1024 * 1024;
const SSE_TAIL_BYTES = 16 * 1024;

export type RelayOutcome = 'complete' | 'partial' | 'aborted';

export interface RelayResult {
  readonly outcome: RelayOutcome;
  readonly usage: TokenUsage | null;
  /** performance.now() when the first body byte was written, or null. */
  readonly firstByteAt: number | null;
}

export function responseHeaders(upstream: IncomingHttpHeaders, attribution: Record<string, string>): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  for (const name in upstream) {
    if (HOP_BY_HOP.has(name) || name.startsWith('x-switchyard-')) continue;
    headers[name] = upstream[name];
  }
  return Object.assign(headers, attribution);
}

export function relay(
  res: ServerResponse,
  upstream: Dispatcher.ResponseData,
  attribution: Record<string, string>,
  providerName: string,
  signal: AbortSignal,
): Promise<RelayResult> {
  const contentType = upstream.headers['content-type'];
  const isSse = typeof contentType === 'string' && contentType.startsWith('text/event-stream');
  res.writeHead(upstream.statusCode, responseHeaders(upstream.headers, attribution));
  // A stream's client should see it start at once, not with the first token.
  if (isSse) res.flushHeaders();

  const body = upstream.body;
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let firstByteAt: number | null = null;

  return new Promise<RelayResult>((resolve) => {
    let settled = false;
    const finish = (outcome: RelayOutcome): void => {
      if (settled) return;
      settled = true;
      res.off('drain', onDrain);
      let usage: TokenUsage | null = null;
      if (outcome === 'complete' && upstream.statusCode < 300) {
        const text = Buffer.concat(kept, keptBytes);
        usage = isSse ? usageFromSseTail(text.toString('utf8')) : usageFromJson(text);
      }
      resolve({ outcome, usage, firstByteAt });
    };
    const onDrain = (): void => {
      body.resume();
    };
    res.on('drain', onDrain);

    body.on('data', (chunk: Buffer) => {
      if (firstByteAt === null) firstByteAt = performance.now();
      if (isSse) {
        kept.push(chunk);
        keptBytes += chunk.length;
        while (keptBytes - (kept[0] as Buffer).length >= SSE_TAIL_BYTES) keptBytes -= (kept.shift() as Buffer).length;
      } else if (keptBytes + chunk.length <= MAX_USAGE_BODY_BYTES) {
        kept.push(chunk);
        keptBytes += chunk.length;
      }
      if (!res.write(chunk)) body.pause();
    });
    body.once('end', () => {
      res.end();
      finish('complete');
    });
    body.once('error', () => {
      if (signal.aborted) {
        finish('aborted');
        return;
      }
      // Bytes may already be with the client: no failover now. A stream ends with an
      // error event the client's SDK understands; a plain body can only be cut short.
      if (isSse && !res.destroyed) {
        res.end(`data: ${openaiErrorBody('stream_interrupted', `the upstream stream from provider ${providerName} was interrupted`)}\n\n`);
      } else {
        res.destroy();
      }
      finish('partial');
    });
    res.once('close', () => {
      if (!res.writableFinished) {
        body.destroy();
        finish('aborted');
      }
    });
  });
}
