import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { vectorFromBase64 } from '../../cache/index.js';
import type { Exchange } from '../exchange.js';

// Semantic mode's embedding: the last user turn, embedded by one of this gateway's own
// routes (`semantic.embedding_route`). The call is a request to the listener the request
// came in on, as its caller (its own credential): it gets the route's chain, failover
// included, and is billed to the caller's team as a row of its own with endpoint `cache`.
// It carries a header with this process's secret, which marks it as the cache's own call:
// the cache leaves it alone (an embedding looked up in the cache would be another call).

const CACHE_CALL_HEADER = 'x-switchyard-cache-call';
const CACHE_CALL_TOKEN = randomBytes(24).toString('base64url');

/** Whether a request is the cache's embedding call, made by this process. */
export function isCacheCall(x: Exchange): boolean {
  return x.req.headers[CACHE_CALL_HEADER] === CACHE_CALL_TOKEN;
}

/** An embedding's answer is read up to this many bytes. */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** Why an embedding could not be had: the lookup is then exact only (a miss, counted as the cache's error). */
export class EmbeddingFailed extends Error {
  override readonly name = 'EmbeddingFailed';
}

/** The vector of `text` by `route`, asked of this gateway as the caller of `x`, within `timeoutMs`. */
export async function embed(x: Exchange, route: string, text: string, timeoutMs: number): Promise<Float32Array> {
  const socket = x.req.socket;
  const host = socket.localAddress ?? '127.0.0.1';
  const url = `http://${host.includes(':') ? `[${host.replace(/^::ffff:/, '')}]` : host}:${socket.localPort}/v1/embeddings`;
  const headers: Record<string, string> = { 'content-type': 'application/json', [CACHE_CALL_HEADER]: CACHE_CALL_TOKEN };
  for (const name of ['authorization', 'x-api-key']) {
    const value = x.req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  headers['x-request-id'] = `${x.requestId.slice(0, 100)}.cache`;
  const signal = AbortSignal.timeout(timeoutMs);
  let body: string;
  try {
    const answer = await request(url, {
      method: 'POST',
      headers,
      // base64: the little-endian float32 bytes, a quarter of the JSON numbers' size and one decode.
      body: JSON.stringify({ model: route, input: text, encoding_format: 'base64' }),
      signal,
    });
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of answer.body as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > MAX_ANSWER_BYTES) throw new EmbeddingFailed(`the embedding route ${route} answered more than ${MAX_ANSWER_BYTES} bytes`);
      chunks.push(chunk);
    }
    body = Buffer.concat(chunks).toString('utf8');
    if (answer.statusCode >= 300) throw new EmbeddingFailed(`the embedding route ${route} answered ${answer.statusCode}`);
  } catch (err) {
    if (err instanceof EmbeddingFailed) throw err;
    if (signal.aborted) throw new EmbeddingFailed(`the embedding route ${route} did not answer within ${timeoutMs} ms`);
    throw new EmbeddingFailed(`the embedding route ${route} could not be asked (${(err as { code?: string }).code ?? 'network error'})`);
  }
  return vectorOf(body, route);
}

function vectorOf(body: string, route: string): Float32Array {
  try {
    const json = JSON.parse(body) as { data?: Array<{ embedding?: unknown }> };
    const v = json.data?.[0]?.embedding;
    // An upstream that ignores encoding_format answers numbers; both are taken.
    if (typeof v === 'string') {
      const decoded = vectorFromBase64(v);
      if (decoded !== null && decoded.length > 0 && decoded.every(Number.isFinite)) return decoded;
    }
    if (Array.isArray(v) && v.length > 0 && v.every((n) => typeof n === 'number' && Number.isFinite(n))) return Float32Array.from(v);
  } catch {
    // fall through
  }
  throw new EmbeddingFailed(`the embedding route ${route} answered something that is not an embedding`);
}
