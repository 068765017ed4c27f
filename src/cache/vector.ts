import { endianness } from 'node:os';

// The semantic cache's arithmetic and its wire form of a vector. A vector travels as
// little-endian float32 bytes: what an OpenAI-style `encoding_format: base64` embedding
// holds, and what the Redis store keeps, so a vector is never re-encoded as decimal text.

const LITTLE_ENDIAN_HOST = endianness() === 'LE';

/**
 * The dot product of two vectors of the same length. Four running sums instead of one:
 * the additions no longer wait on each other, which halves a semantic lookup's scan.
 */
function dot(a: Float32Array, b: Float32Array): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  const whole = a.length - (a.length % 4);
  let i = 0;
  for (; i < whole; i += 4) {
    s0 += a[i]! * b[i]!;
    s1 += a[i + 1]! * b[i + 1]!;
    s2 += a[i + 2]! * b[i + 2]!;
    s3 += a[i + 3]! * b[i + 3]!;
  }
  for (; i < a.length; i += 1) s0 += a[i]! * b[i]!;
  return s0 + s1 + s2 + s3;
}

/** The Euclidean norm of `v`. */
export function vectorNorm(v: Float32Array): number {
  return Math.sqrt(dot(v, v));
}

/**
 * Cosine similarity of `a` and `b` when both norms are already known (a store computes a
 * stored vector's once, and the query's once per search). 0 when the lengths differ or a
 * norm is 0; clamped to [-1, 1], which float rounding can overshoot.
 */
export function cosineWithNorms(a: Float32Array, normA: number, b: Float32Array, normB: number): number {
  if (a.length !== b.length || normA === 0 || normB === 0) return 0;
  const similarity = dot(a, b) / (normA * normB);
  if (!Number.isFinite(similarity)) return 0;
  return Math.max(-1, Math.min(1, similarity));
}

/** Cosine similarity of `a` and `b`, in [-1, 1]; 0 when the lengths differ or either is all zeros. */
export function cosineSimilarity(a: Float32Array, b: Float32Array): number {
  return cosineWithNorms(a, vectorNorm(a), b, vectorNorm(b));
}

/** `v` as little-endian float32 bytes (a view of `v` itself on a little-endian host). */
export function vectorToBytes(v: Float32Array): Buffer {
  if (LITTLE_ENDIAN_HOST) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  const out = Buffer.allocUnsafe(v.length * 4);
  for (let i = 0; i < v.length; i += 1) out.writeFloatLE(v[i] as number, i * 4);
  return out;
}

/** The vector that little-endian float32 `bytes` hold (a copy), or null when their length is not a multiple of 4. */
export function vectorFromBytes(bytes: Uint8Array): Float32Array | null {
  if (bytes.byteLength % 4 !== 0) return null;
  const out = new Float32Array(bytes.byteLength / 4);
  if (LITTLE_ENDIAN_HOST) {
    new Uint8Array(out.buffer).set(bytes);
    return out;
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < out.length; i += 1) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/** `v` as base64 of its little-endian float32 bytes. */
export function vectorToBase64(v: Float32Array): string {
  return vectorToBytes(v).toString('base64');
}

/** The vector base64 `text` holds as little-endian float32 bytes, or null when it does not decode to a whole number of floats. */
export function vectorFromBase64(text: string): Float32Array | null {
  return vectorFromBytes(Buffer.from(text, 'base64'));
}
