import { createHash } from 'node:crypto';
import type { Exchange } from './exchange.js';
import { readModelRequest, replyInvalid, replyJson, replyTruncated } from './exchange.js';
import { serveModelRequest } from './model-request.js';
import type { MockContext } from './provider-context.js';
import { estimateTokens } from './provider-context.js';

// `POST /v1/embeddings` in OpenAI's shape. A vector is a pure function of its input text
// and dimension count: SHA-256 of the text seeds the components, normalised to length 1,
// so the same input always embeds the same way, on every mock and every run.

const defaultDimensions = 16;
const maxDimensions = 4096;
const maxInputs = 2048;

function vector(text: string, dimensions: number): Float32Array {
  const out = new Float32Array(dimensions);
  let seed = createHash('sha256').update(text).digest();
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    const at = (i % 8) * 4;
    if (i > 0 && at === 0) seed = createHash('sha256').update(seed).digest();
    const v = seed.readUInt32LE(at) / 0xffffffff - 0.5;
    out[i] = v;
    norm += v * v;
  }
  const scale = norm === 0 ? 0 : 1 / Math.sqrt(norm);
  for (let i = 0; i < dimensions; i++) out[i] = (out[i] as number) * scale;
  return out;
}

/** The inputs as texts plus their token count: strings count characters / 4, token arrays their length. */
function inputs(input: unknown): { texts: string[]; tokens: number } | string {
  const list =
    typeof input === 'string' || (Array.isArray(input) && input.length > 0 && input.every((n) => typeof n === 'number')) ? [input] : input;
  if (!Array.isArray(list) || list.length === 0 || list.length > maxInputs)
    return `input must be a string, an array of strings or of token arrays (1 to ${maxInputs})`;
  const texts: string[] = [];
  let tokens = 0;
  for (const item of list) {
    if (typeof item === 'string') {
      texts.push(item);
      tokens += estimateTokens(item.length);
    } else if (Array.isArray(item) && item.every((n) => Number.isInteger(n))) {
      texts.push(item.join(','));
      tokens += item.length;
    } else {
      return 'input items must be strings or arrays of integers';
    }
  }
  return { texts, tokens };
}

function answer(_ctx: MockContext, ex: Exchange, cutAfter: number): void {
  const request = readModelRequest(ex);
  if (request === null) return;
  const { payload } = request;
  const read = inputs(payload.input);
  if (typeof read === 'string') return replyInvalid(ex, 400, read);
  const dimensions = payload.dimensions ?? defaultDimensions;
  if (!Number.isSafeInteger(dimensions) || (dimensions as number) < 1 || (dimensions as number) > maxDimensions) {
    return replyInvalid(ex, 400, `dimensions must be an integer from 1 to ${maxDimensions}`);
  }
  const format = payload.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') return replyInvalid(ex, 400, 'encoding_format must be float or base64');
  const data = read.texts.map((text, index) => {
    const v = vector(text, dimensions as number);
    // base64 is the little-endian float32 bytes, as OpenAI sends them (and its SDK asks for by default).
    const embedding = format === 'base64' ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') : Array.from(v);
    return { object: 'embedding', index, embedding };
  });
  const body = JSON.stringify({
    object: 'list',
    data,
    model: payload.model,
    usage: { prompt_tokens: read.tokens, total_tokens: read.tokens },
  });
  if (cutAfter < 0) return replyJson(ex, 200, body);
  replyTruncated(ex, body);
}

/** `POST /v1/embeddings`. */
export function handleEmbeddings(ctx: MockContext, ex: Exchange): void {
  serveModelRequest(ctx, ex, 'openai', answer);
}
