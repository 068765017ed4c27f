import { SwitchyardError } from '../errors.js';
import type { GenerationCandidate } from '../live/index.js';
import { chatBodyFor, providerHeaders, type Relayed, type RelayResult, relay } from '../providers/index.js';
import { select } from '../routing/index.js';
import { authenticate } from './admission.js';
import { readBody } from './body.js';
import { routeOf } from './chat.js';
import { parseCountTokensRequest } from './chat-request.js';
import type { Exchange } from './exchange.js';
import { sendJson } from './respond.js';
import type { ListenerSettings, Services } from './services.js';

/**
 * POST /v1/messages/count_tokens (Anthropic clients). While the route's candidates are
 * anthropic providers they are asked in order, and the first answer is relayed as it is;
 * a route served by another protocol (which has no such endpoint), or whose anthropic
 * candidates all failed, gets an estimate of a token per four body bytes, marked by
 * `x-switchyard-estimated: true`. Counting is free, so there is no pre-check or bill, and
 * breakers are neither consulted nor fed: a count says little about serving health.
 */
export async function handleCountTokens(x: Exchange, svc: Services, settings: ListenerSettings): Promise<void> {
  x.protocol = 'anthropic';
  const gen = svc.holder.current();
  x.gen = gen;
  authenticate(x, svc);
  const raw = await readBody(x.req, settings.maxBodyBytes);
  x.bodyBytes = raw.length;
  const request = parseCountTokensRequest(raw);
  x.model = request.model;
  const chain = select(routeOf(gen, request.model), { counters: svc.counters, random: svc.random, boundStableId: undefined }).chain;
  if (chain.length === 0)
    throw new SwitchyardError('no_route', `model "${request.model}" has no candidate that can serve new requests right now`, 'model');
  for (const c of chain) {
    if (c.provider.protocol !== 'anthropic') break;
    if (c.credentialProblem !== null) continue;
    const r = await ask(x, c, raw, request.parsed);
    if (r.kind === 'failed') {
      x.failures.push({ provider: c.provider.name, candidate: c.stableId, reason: r.reason, detail: r.detail });
      continue;
    }
    x.candidate = c;
    if (r.kind === 'aborted') {
      x.outcome = 'aborted';
      return;
    }
    x.headersAt = r.headersAt;
    x.outcome = (await new Promise<Relayed>((resolve) => r.onFinished(resolve))).outcome;
    return;
  }
  x.res.setHeader('x-switchyard-estimated', 'true');
  sendJson(x.res, 200, { input_tokens: Math.ceil(raw.length / 4) });
}

function ask(x: Exchange, c: GenerationCandidate, raw: Buffer, parsed: Record<string, unknown>): Promise<RelayResult> {
  const provider = c.provider;
  x.attemptStartedAt = performance.now();
  return new Promise((resolve) =>
    relay(
      {
        res: x.res,
        pool: provider.pool,
        providerName: provider.name,
        call: {
          method: 'POST',
          path: '/messages/count_tokens',
          headers: providerHeaders(
            provider,
            c.credential ?? provider.credential,
            provider.headers,
            'application/json',
            x.requestId,
            x.req.headers,
          ),
          body: chatBodyFor(raw, parsed, c.upstreamModel),
          timeoutMs: provider.timeoutMs,
        },
        attribution: ['x-switchyard-provider', provider.name, 'x-switchyard-model', c.upstreamModel],
        ownHeaders: ['x-switchyard-request-id', x.requestId],
        stopSlot: x,
      },
      resolve,
    ),
  );
}
