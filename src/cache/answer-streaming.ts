import type { CanonicalResponse, StreamSink, TokenUsage } from '../providers/index.js';
import {
  AnthropicEventEncoder,
  anthropicResponseToCanonical,
  OpenaiChunkEncoder,
  openaiResponseToCanonical,
  replayResponse,
  usageFromAnthropic,
  usageFromOpenai,
  usageToAnthropic,
} from '../providers/index.js';
import { completionUsage } from './answer-assembly.js';
import { cutEvents, deltaPieces, isRecord, jsonObject } from './event-text.js';
import type { Fresh, IdMap } from './fresh-ids.js';
import { renamedResponse } from './fresh-ids.js';

// A whole entry served to a client that asked for a stream: the events its protocol's
// stream would have carried, written by the gateway's own encoders from the canonical form
// (a Response by the stored-response replay), with the text cut into deltas of a few words
// so a client sees it arrive in pieces, as from a model.

/** The body as a JSON object; a stored body that is not one cannot be replayed. */
function bodyObject(body: string): Record<string, unknown> {
  const parsed = jsonObject(body);
  if (parsed === null) throw new TypeError('the entry body is not a JSON object');
  return parsed;
}

/**
 * Plays a canonical answer into a stream encoder, up to its finish (the caller adds the
 * usage and ends it). `toolArguments` are the calls' arguments as the answer gave them, in
 * order, so they reach the client as they were and not re-serialised.
 */
function play(res: CanonicalResponse, sink: StreamSink, id: string, toolArguments: readonly string[] = []): void {
  sink.start(id, res.model);
  let tool = 0;
  for (const part of res.content) {
    if (part.type === 'text') for (const piece of deltaPieces(part.text)) sink.text(piece);
    else if (part.type === 'thinking') {
      for (const piece of deltaPieces(part.text)) sink.thinking(piece);
      if (part.signature !== '') sink.thinkingSignature(part.signature);
    } else {
      sink.toolStart(tool, part.id, part.name);
      for (const piece of deltaPieces(toolArguments[tool] ?? JSON.stringify(part.input))) sink.toolArguments(tool, piece);
      tool += 1;
    }
  }
  sink.finish(res.stopReason, res.stopSequence ?? null);
}

/** What a choice's tool calls carried as their arguments' text. */
function argumentsOf(choice: Record<string, unknown>): string[] {
  const message = isRecord(choice.message) ? choice.message : {};
  const calls: unknown[] = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  return calls.map((call) =>
    isRecord(call) && isRecord(call.function) && typeof call.function.arguments === 'string' ? call.function.arguments : '',
  );
}

/**
 * An OpenAI chat completion as its chunk stream: each choice's chunks in turn (the encoder
 * writes index 0; another choice's chunks are renumbered), then the usage-only chunk when
 * the client asked for it and the usage is known, then `[DONE]`.
 */
export function streamedOpenaiChat(body: string, ids: IdMap, fresh: Fresh, includeUsage: boolean, entryUsage: TokenUsage | null): string[] {
  const parsed = bodyObject(body);
  const id = ids.rename(parsed.id, 'chatcmpl');
  const choices: unknown[] = Array.isArray(parsed.choices) && parsed.choices.length > 0 ? parsed.choices : [{}];
  const first = new OpenaiChunkEncoder(includeUsage, fresh.nowS);
  const events: string[] = [];
  choices.forEach((choice, k) => {
    if (!isRecord(choice)) return;
    const translated = openaiResponseToCanonical({ ...parsed, choices: [{ message: { role: 'assistant' }, ...choice }] });
    if (!translated.ok) throw new TypeError(`the entry body is not a chat completion: ${translated.reason}`);
    const encoder = k === 0 ? first : new OpenaiChunkEncoder(false, fresh.nowS);
    play(translated.value, encoder, id, argumentsOf(choice));
    const index = typeof choice.index === 'number' ? choice.index : k;
    const out = index === 0 ? encoder.out : encoder.out.replaceAll('"choices":[{"index":0,', `"choices":[{"index":${index},`);
    encoder.out = '';
    events.push(...cutEvents(out));
  });
  const usage = usageFromOpenai(parsed.usage) ?? entryUsage;
  if (usage !== null) first.usage(usage);
  first.done();
  events.push(...cutEvents(first.out));
  return events;
}

/** An Anthropic message as its event stream; message_start carries the input counts, as Anthropic's own does. */
export function streamedAnthropic(body: string, ids: IdMap, entryUsage: TokenUsage | null): string[] {
  const parsed = bodyObject(body);
  const translated = anthropicResponseToCanonical(parsed);
  if (!translated.ok) throw new TypeError(`the entry body is not an Anthropic message: ${translated.reason}`);
  const encoder = new AnthropicEventEncoder();
  play(translated.value, encoder, ids.rename(parsed.id, 'msg'));
  const usage = usageFromAnthropic(parsed.usage) ?? entryUsage;
  if (usage !== null) encoder.usage(usage);
  encoder.done();
  const events = cutEvents(encoder.out);
  if (usage !== null && events[0] !== undefined) {
    // The encoder was made for upstreams that count only at the end, so it opens with zeros.
    const input = JSON.stringify(usageToAnthropic({ ...usage, outputTokens: 0 }));
    events[0] = events[0].replace('"usage":{"input_tokens":0,"output_tokens":0}', `"usage":${input}`);
  }
  return events;
}

/** A Response as the events that would have produced it, its text in pieces. */
export function streamedResponse(body: string, ids: IdMap, fresh: Fresh): string[] {
  return cutEvents(replayResponse(renamedResponse(bodyObject(body), ids, fresh.nowS), deltaPieces));
}

/** A legacy completion as its chunk stream: each choice's text in pieces, its finish reason, the usage when asked for, `[DONE]`. */
export function streamedCompletion(body: string, ids: IdMap, fresh: Fresh, includeUsage: boolean, entryUsage: TokenUsage | null): string[] {
  const parsed = bodyObject(body);
  const head: Record<string, unknown> = {
    id: ids.rename(parsed.id, 'cmpl'),
    object: 'text_completion',
    created: fresh.nowS,
    model: typeof parsed.model === 'string' ? parsed.model : '',
  };
  if (typeof parsed.system_fingerprint === 'string') head.system_fingerprint = parsed.system_fingerprint;
  const chunk = (choices: unknown[], usage?: unknown) =>
    `data: ${JSON.stringify(usage === undefined ? { ...head, choices } : { ...head, choices, usage })}\n\n`;
  const choices = (Array.isArray(parsed.choices) ? parsed.choices : []).filter(isRecord);
  const events: string[] = [];
  choices.forEach((c, k) => {
    const index = typeof c.index === 'number' ? c.index : k;
    const text = typeof c.text === 'string' ? c.text : '';
    for (const piece of deltaPieces(text)) events.push(chunk([{ text: piece, index, logprobs: null, finish_reason: null }]));
  });
  choices.forEach((c, k) => {
    const index = typeof c.index === 'number' ? c.index : k;
    events.push(chunk([{ text: '', index, logprobs: null, finish_reason: c.finish_reason ?? null }]));
  });
  const usage = usageFromOpenai(parsed.usage) ?? entryUsage;
  if (includeUsage && usage !== null) events.push(chunk([], completionUsage(usage)));
  events.push('data: [DONE]\n\n');
  return events;
}
