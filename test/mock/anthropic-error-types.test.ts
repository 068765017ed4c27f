import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as mock from '../../src/mock/exchange.js';
import { statusOfAnthropicError } from '../../src/providers/canonical/upstream-error.js';
import * as gateway from '../../src/providers/index.js';

// The mock may not import the gateway, so it keeps its own copy of Anthropic's status table.
// These tests are what keeps the copy from drifting: the mock answers a fault with the error
// type the gateway would translate the same status to.

// Anthropic's API documentation, status by status (its errors page and its SDKs' error types).
const DOCUMENTED: ReadonlyArray<readonly [number, string]> = [
  [400, 'invalid_request_error'],
  [401, 'authentication_error'],
  [402, 'billing_error'],
  [403, 'permission_error'],
  [404, 'not_found_error'],
  [413, 'request_too_large'],
  [429, 'rate_limit_error'],
  [500, 'api_error'],
  [504, 'timeout_error'],
  [529, 'overloaded_error'],
];

test("the mock's Anthropic error table equals the gateway's", () => {
  assert.deepEqual({ ...mock.ANTHROPIC_ERROR_TYPES }, { ...gateway.ANTHROPIC_ERROR_TYPES });
});

test('the table holds the statuses Anthropic documents and reads a 503 as an overload; both copies are frozen', () => {
  assert.deepEqual({ ...gateway.ANTHROPIC_ERROR_TYPES }, { ...Object.fromEntries(DOCUMENTED), 503: 'overloaded_error' });
  assert.ok(Object.isFrozen(gateway.ANTHROPIC_ERROR_TYPES));
  assert.ok(Object.isFrozen(mock.ANTHROPIC_ERROR_TYPES));
});

test('the mock and the gateway give every status from 100 to 599 the same type, the fallback by class included', () => {
  for (let status = 100; status < 600; status++) {
    assert.equal(mock.anthropicErrorType(status), gateway.anthropicErrorType(status), `HTTP ${status}`);
    assert.equal(mock.anthropicErrorTypeOfClass(status), gateway.anthropicErrorTypeOfClass(status), `HTTP ${status}`);
  }
  assert.equal(gateway.anthropicErrorType(409), 'invalid_request_error');
  assert.equal(gateway.anthropicErrorType(502), 'api_error');
});

test('an Anthropic error type reads back as the status Anthropic sends it with (overloaded: 529), an unknown type as 500', () => {
  for (const [status, type] of DOCUMENTED) assert.equal(statusOfAnthropicError(type), status, type);
  assert.equal(statusOfAnthropicError('conflict_error'), 500);
  assert.equal(statusOfAnthropicError(undefined), 500);
});

test('an OpenAI insufficient_quota reaches an Anthropic client as a billing error whatever its status', () => {
  assert.equal(gateway.anthropicErrorType(429, 'insufficient_quota'), 'billing_error');
});
