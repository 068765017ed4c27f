import type { AnswerTransform } from '../providers/index.js';
import { admitCaller } from './admission.js';
import { type Attempt, composeAttempt, type Wrap, withBreaker, withCredentialCheck, withProviderToken } from './attempt.js';
import { withTracing } from './attempt-tracing.js';
import { readBodyThen } from './body.js';
import type { Caller, Exchange } from './exchange.js';
import { sendToTool, type ToolAttempt, withServerUpstream, withToolCredentialCheck } from './mcp/tool-attempt.js';
import { serveConversation } from './responses/conversations.js';
import { serveInputTokens } from './responses/input-tokens.js';
import { withTruncation } from './responses/truncation.js';
import { storeError } from './responses/turn.js';
import { sendToCandidate } from './send-to-candidate.js';
import type { ServeCallback } from './serve-chain.js';
import { type RequestPath, serveModel } from './serve-model.js';
import type { ListenerSettings, Services } from './services.js';
import { serveStoredResponse } from './stored-response.js';

/**
 * A model endpoint's handler, in the listeners' handler contract: it answers the request
 * and calls `done` once, with null or the error its client must be answered with; a
 * throw before anything was answered is the same as `done(err)`.
 */
export type ModelHandler = (x: Exchange, rest: string, done: ServeCallback) => void;

export interface ModelHandlers {
  /** Every model endpoint that takes a request body (the Exchange's operation says which). */
  readonly serve: ModelHandler;
  readonly getStoredResponse: ModelHandler;
  readonly deleteStoredResponse: ModelHandler;
  /** The Conversations API (`/v1/conversations`, `/v1/conversations/*`), answered from the response store. */
  readonly conversations: ModelHandler;
  /** `POST /v1/responses/input_tokens`: the gateway's count of a Responses request's input. */
  readonly inputTokens: ModelHandler;
}

/**
 * The model endpoints' handlers, with the attempts they share composed once. Each one
 * captures the generation and authenticates its caller in the same place, before anything
 * else (and before any body is read: an unknown caller never makes the gateway buffer one).
 */
export function modelHandlers(svc: Services, settings: ListenerSettings): ModelHandlers {
  const path: RequestPath = { svc, maxBodyBytes: settings.maxBodyBytes, guarded: guardedAttempt(svc), free: freeAttempt(svc) };
  const admitted =
    (serve: (x: Exchange, caller: Caller, rest: string, done: ServeCallback) => void): ModelHandler =>
    (x, rest, done) =>
      serve(x, admitCaller(x, svc), rest, done);
  return {
    serve: admitted((x, caller, _rest, done) => serveModel(path, x, caller, done)),
    getStoredResponse: admitted((x, caller, rest, done) => serveStoredResponse(path, x, caller, 'GET', rest, done)),
    deleteStoredResponse: admitted((x, caller, rest, done) => serveStoredResponse(path, x, caller, 'DELETE', rest, done)),
    conversations: admitted((x, caller, rest, done) =>
      readBodyThen(
        x.req,
        settings.maxBodyBytes,
        (body) =>
          serveConversation(svc.responseStore, x, caller, rest, body).then(
            () => done(null),
            (err) => done(storeError(err)),
          ),
        done,
      ),
    ),
    inputTokens: admitted((x, caller, _rest, done) =>
      readBodyThen(x.req, settings.maxBodyBytes, (raw) => serveInputTokens(svc, x, caller, raw).then(() => done(null), done), done),
    ),
  };
}

/**
 * An attempt behind the credential check, the provider's breaker and its token check, with a span per
 * upstream call when tracing is on (innermost, so that only a call that goes upstream
 * gets a span).
 */
function guardedAttempt(svc: Services): Attempt {
  // Outermost: a turn too long for a candidate is shortened and tried there again (truncation: auto).
  const wraps: Wrap[] = [withTruncation, withCredentialCheck, withBreaker(svc.breakers), withProviderToken];
  if (svc.tracing !== null) wraps.push(withTracing(svc.tracing));
  return composeAttempt(sendToCandidate, ...wraps);
}

/** The same without the breaker: for calls whose outcome says little of serving health (a token count). */
function freeAttempt(svc: Services): Attempt {
  const wraps: Wrap[] = [withCredentialCheck, withProviderToken];
  if (svc.tracing !== null) wraps.push(withTracing(svc.tracing));
  return composeAttempt(sendToCandidate, ...wraps);
}

/** What every tools/call shares, composed once at start: its attempt and the transform stack its server's answer passes through. */
export interface ToolPath {
  readonly attempt: ToolAttempt;
  /** The same stack type as a model's answer, in the client's protocol (JSON-RPC); empty = the answer's bytes as they are. */
  readonly transforms: readonly AnswerTransform[];
}

/**
 * A tools/call's attempt, behind the same credential check and breaker as a model's: a
 * candidate whose server has no upstream session owner fails over first, outside the
 * breaker, as a missing credential does. The call's span is the endpoint's, one per call.
 * The gateway puts no transform on a tool's answer yet (a redaction would go here).
 */
export function toolPath(svc: Services, transforms: readonly AnswerTransform[] = NO_TRANSFORMS): ToolPath {
  return {
    attempt: composeAttempt(sendToTool, withToolCredentialCheck, withServerUpstream, withBreaker(svc.breakers)),
    transforms,
  };
}

const NO_TRANSFORMS: readonly AnswerTransform[] = Object.freeze([]);
