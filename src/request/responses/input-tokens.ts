import { SwitchyardError } from '../../errors.js';
import { type CanonicalRequest, responsesRequestToCanonical } from '../../providers/index.js';
import { parseObject } from '../chat-request.js';
import type { Caller, Exchange, ModelRequest } from '../exchange.js';
import { sendJson } from '../respond.js';
import type { Services } from '../services.js';
import { countTexts, IMAGE_TOKENS } from '../token-count.js';
import { responseNotFound, storeError, turnOf } from './turn.js';

// `POST /v1/responses/input_tokens`: how many input tokens a Responses request would send,
// the conversation it continues included (read from the store as the request would be), for
// a model the gateway routes. Counted by the gateway (o200k_base, as count_tokens' estimate)
// over the request in the canonical form, so it is the same whichever provider would serve
// it, and marked `x-switchyard-estimated`. Nothing reaches a provider or is billed.

export async function serveInputTokens(svc: Services, x: Exchange, caller: Caller, raw: Buffer): Promise<void> {
  const parsed = parseObject(raw);
  const model = parsed.model;
  if (typeof model !== 'string' || model === '') throw new SwitchyardError('invalid_request', 'missing required field: model', 'model');
  if (caller.gen.routes[model] === undefined) {
    throw new SwitchyardError(
      'model_not_found',
      `model "${model}" is not routed by this gateway; GET /v1/models lists the models it serves`,
      'model',
    );
  }
  const request: ModelRequest = { ...caller, operation: 'responses', protocol: 'openai', model, stream: false, raw, parsed, stored: null };
  x.asked(request);
  let turn: Awaited<ReturnType<typeof turnOf>>;
  try {
    turn = await turnOf(request, { store: svc.responseStore, maxItems: caller.gen.config.routing.responses?.max_items ?? 1000 });
  } catch (err) {
    throw storeError(err);
  }
  // Held only upstream (before the gateway kept responses): nothing here to count it from.
  if (turn.legacy) throw responseNotFound(turn.previousResponseId as string, 'previous_response_id');
  const read = responsesRequestToCanonical(parsed, [...turn.history, ...turn.input]);
  if (!read.ok) throw new SwitchyardError('invalid_request', `${read.reason} (field ${read.path})`, read.path);
  const { pieces, fixed } = textsOf(read.value);
  x.res.setHeader('x-switchyard-estimated', 'true');
  sendJson(x.res, 200, { object: 'response.input_tokens', input_tokens: await countTexts(pieces, fixed) });
}

function textsOf(request: CanonicalRequest): { pieces: string[]; fixed: number } {
  const pieces: string[] = request.system.map((p) => p.text);
  let fixed = 0;
  for (const message of request.messages) {
    for (const part of message.content) {
      if (part.type === 'text') pieces.push(part.text);
      else if (part.type === 'tool_call') pieces.push(part.name, JSON.stringify(part.input ?? {}));
      else if (part.type === 'tool_result') {
        for (const c of part.content) {
          if (c.type === 'text') pieces.push(c.text);
          else fixed += IMAGE_TOKENS;
        }
      } else fixed += IMAGE_TOKENS;
    }
  }
  for (const tool of request.tools ?? [])
    pieces.push(JSON.stringify({ name: tool.name, description: tool.description, input_schema: tool.inputSchema }));
  return { pieces, fixed };
}
