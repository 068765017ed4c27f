import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  cosineSimilarity,
  cosineWithNorms,
  vectorFromBase64,
  vectorFromBytes,
  vectorNorm,
  vectorToBase64,
  vectorToBytes,
} from '../../src/cache/vector.js';

const vec = (...xs: number[]): Float32Array => Float32Array.from(xs);

describe('cosine similarity', () => {
  it('is 1 for the same direction, -1 for the opposite, 0 for orthogonal, whatever the lengths', () => {
    assert.equal(cosineSimilarity(vec(1, 2, 3), vec(2, 4, 6)), 1);
    assert.equal(cosineSimilarity(vec(1, 2, 3), vec(-3, -6, -9)), -1);
    assert.equal(cosineSimilarity(vec(1, 0), vec(0, 5)), 0);
    assert.ok(Math.abs(cosineSimilarity(vec(1, 1), vec(1, 0)) - Math.SQRT1_2) < 1e-7);
  });

  it('is 0 when either vector is all zeros or the lengths differ', () => {
    assert.equal(cosineSimilarity(vec(0, 0, 0), vec(1, 2, 3)), 0);
    assert.equal(cosineSimilarity(vec(1, 2, 3), vec(0, 0, 0)), 0);
    assert.equal(cosineSimilarity(vec(1, 2), vec(1, 2, 0)), 0);
    assert.equal(cosineSimilarity(vec(), vec()), 0);
  });

  it('stays within [-1, 1] where float rounding would overshoot', () => {
    const v = Float32Array.from({ length: 1536 }, (_, i) => Math.sin(i) * 0.1 + 1e-3);
    const s = cosineSimilarity(v, Float32Array.from(v));
    assert.ok(s <= 1 && s > 0.999_999, `${s}`);
  });

  it('with norms given is the same as without', () => {
    const a = vec(0.3, -1.2, 4, 0.5);
    const b = vec(1, 1, -2, 7);
    assert.equal(cosineWithNorms(a, vectorNorm(a), b, vectorNorm(b)), cosineSimilarity(a, b));
    assert.equal(vectorNorm(vec(3, 4)), 5);
  });
});

describe('vector bytes and base64', () => {
  it('are little-endian float32: 1.0 is 00 00 80 3f', () => {
    assert.deepEqual([...vectorToBytes(vec(1, -2))], [0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0]);
    assert.equal(vectorToBase64(vec(1)), Buffer.from([0, 0, 0x80, 0x3f]).toString('base64'));
  });

  it('round-trip every float32 exactly, from a view into a larger buffer too', () => {
    const whole = vec(9, 0.1, -3.4028234663852886e38, 1.401298464324817e-45, -0, 123.456, 9);
    const view = whole.subarray(1, 6);
    assert.deepEqual(vectorFromBytes(vectorToBytes(view)), view);
    assert.deepEqual(vectorFromBase64(vectorToBase64(view)), view);
    assert.deepEqual(vectorFromBase64(''), vec());
  });

  it('decode bytes at any offset, as a copy', () => {
    const bytes = Buffer.concat([Buffer.from([7]), vectorToBytes(vec(1.5, 2.5))]).subarray(1);
    const v = vectorFromBytes(bytes);
    assert.deepEqual(v, vec(1.5, 2.5));
    bytes.fill(0);
    assert.deepEqual(v, vec(1.5, 2.5), 'a copy, not a view of the buffer');
  });

  it('refuse a length that is not a whole number of floats', () => {
    assert.equal(vectorFromBytes(Buffer.from([1, 2, 3])), null);
    assert.equal(vectorFromBase64(Buffer.from([1, 2, 3, 4, 5]).toString('base64')), null);
  });

  it('read what an OpenAI-style base64 embedding holds', () => {
    const wire = Buffer.from(new Float32Array([0.25, -0.5, 0.125]).buffer).toString('base64');
    assert.deepEqual(vectorFromBase64(wire), vec(0.25, -0.5, 0.125));
  });
});
