import { createHash } from 'node:crypto';
import type { Exchange } from './exchange.js';
import { readModelRequest, replyInvalid, replyJson, replyTruncated } from './exchange.js';
import { serveModelRequest } from './model-request.js';
import type { MockContext } from './provider-context.js';
import { estimateTokens } from './provider-context.js';

// `POST /v1/embeddings` in OpenAI's shape. A vector is a pure function of its input's words
// and the dimension count, so the same input embeds the same way on every mock and every run,
// and a semantic cache has something meaningful to compare: the text is lower-cased and cut
// into words at anything that is not a letter or a digit, each word adds a pseudo-random unit
// vector seeded by SHA-256 of the word, and the sum is normalised to length 1. The same words
// in another order, case or punctuation embed identically; a question with other words lands
// nearly orthogonal, given enough dimensions (at 16, random vectors overlap too much to tell
// two questions apart, hence the default of 256).

const defaultDimensions = 256;
const maxDimensions = 4096;
const maxInputs = 2048;

// Words almost every question has. At full weight, "What is the capital of France?" and "What
// is the boiling point of water?" would share four of their six or seven words and score about
// 0.6; at a quarter they score below 0.2, while a question that differs only in such words
// (what's / what is) still scores above 0.95.
const functionWordWeight = 0.25;
const functionWords: ReadonlySet<string> = new Set(
  'a an the is are was were be been am do does did of to in on at for by with from and or what which who whom whose how why when where i you we it this that these those my your me can could would should will s t d m re ve ll'.split(
    ' ',
  ),
);

const wordBoundary = /[^\p{L}\p{N}]+/u;

// A word's vector costs dimensions / 8 hashes; texts repeat words, so recent ones are kept.
// Cleared whole when full: the bound matters, not which words survive.
const wordVectorsLimit = 8192;
const wordVectors = new Map<string, Float32Array>();

/** A pseudo-random unit vector, a pure function of `seedText` and `dimensions`. */
function seeded(seedText: string, dimensions: number): Float32Array {
  const out = new Float32Array(dimensions);
  let seed = createHash('sha256').update(seedText).digest();
  for (let i = 0; i < dimensions; i++) {
    const at = (i % 8) * 4;
    if (i > 0 && at === 0) seed = createHash('sha256').update(seed).digest();
    out[i] = seed.readUInt32LE(at) / 0xffffffff - 0.5;
  }
  return normalised(out);
}

function normalised(v: Float32Array): Float32Array {
  let norm = 0;
  for (const x of v) norm += x * x;
  const scale = norm === 0 ? 0 : 1 / Math.sqrt(norm);
  for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) * scale;
  return v;
}

function wordVector(word: string, dimensions: number): Float32Array {
  const key = `${dimensions}:${word}`;
  let v = wordVectors.get(key);
  if (v === undefined) {
    if (wordVectors.size >= wordVectorsLimit) wordVectors.clear();
    v = seeded(word, dimensions);
    wordVectors.set(key, v);
  }
  return v;
}

/** The text's bag of words, projected and normalised; a text without words embeds as a whole. */
function vector(text: string, dimensions: number): Float32Array {
  // Sorted, so that the sum is taken in one order whatever the text's: floating-point addition
  // is not associative, and a reordered question must embed to the very same vector.
  const words = text
    .toLowerCase()
    .split(wordBoundary)
    .filter((w) => w !== '')
    .sort();
  if (words.length === 0) return seeded(text, dimensions);
  const sum = new Float64Array(dimensions);
  for (const word of words) {
    const weight = functionWords.has(word) ? functionWordWeight : 1;
    const v = wordVector(word, dimensions);
    for (let i = 0; i < dimensions; i++) sum[i] = (sum[i] as number) + weight * (v[i] as number);
  }
  return normalised(Float32Array.from(sum));
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
