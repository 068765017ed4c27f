import type { CanonicalResponse, StopReason, StreamSink, TokenUsage } from '../providers/index.js';
import {
  AnthropicEventDecoder,
  canonicalToAnthropicResponse,
  canonicalToOpenaiResponse,
  OpenaiChunkDecoder,
  usageFromOpenai,
  usageToOpenai,
} from '../providers/index.js';
import type { ReadEvent } from './event-text.js';
import { isRecord, jsonObject } from './event-text.js';
import type { Fresh, IdMap } from './fresh-ids.js';
import { renamedResponse } from './fresh-ids.js';

// A streamed entry served to a client that did not ask for a stream: the whole answer the
// same upstream would have given, assembled from the events. Chat answers go through the
// canonical form (the protocol's stream decoder into a collecting sink, then the
// protocol's whole-answer writer), so they read as the gateway's translated answers do; a
// Response stream ends with the whole Response; completions have a small assembler here.

const NO_USAGE: TokenUsage = { inputTokens: 0, outputTokens: 0 };

type Collected =
  | { type: 'text'; text: string }
  | { type: 'thinking'; text: string; signature: string }
  | { type: 'tool'; id: string; name: string; args: string };

/** What a collector gathered: the canonical answer, and each tool call's arguments as streamed (in order). */
interface Assembled {
  readonly response: CanonicalResponse;
  readonly toolArguments: readonly string[];
}

/** Collects a stream's canonical events into the whole answer. */
class AnswerCollector implements StreamSink {
  id = '';
  model = '';
  usageSeen: TokenUsage | null = null;
  readonly #content: Collected[] = [];
  readonly #tools = new Map<number, Extract<Collected, { type: 'tool' }>>();
  #stopReason: StopReason | null = null;
  #stopSequence: string | null = null;

  start(id: string, model: string): void {
    this.id = id;
    this.model = model;
  }
  text(text: string): void {
    const last = this.#content.at(-1);
    if (last?.type === 'text') last.text += text;
    else this.#content.push({ type: 'text', text });
  }
  thinking(text: string): void {
    const last = this.#content.at(-1);
    if (last?.type === 'thinking') last.text += text;
    else this.#content.push({ type: 'thinking', text, signature: '' });
  }
  thinkingSignature(signature: string): void {
    const last = this.#content.at(-1);
    if (last?.type === 'thinking') last.signature += signature;
  }
  toolStart(tool: number, id: string, name: string): void {
    const part = { type: 'tool' as const, id, name, args: '' };
    this.#tools.set(tool, part);
    this.#content.push(part);
  }
  toolArguments(tool: number, json: string): void {
    const part = this.#tools.get(tool);
    if (part !== undefined) part.args += json;
  }
  finish(reason: StopReason | null, stopSequence: string | null): void {
    this.#stopReason = reason;
    this.#stopSequence = stopSequence;
  }
  usage(usage: TokenUsage): void {
    this.usageSeen = usage;
  }
  done(): void {}
  error(): void {}

  assembled(usage: TokenUsage): Assembled {
    const content = this.#content.map((part) =>
      part.type === 'tool' ? { type: 'tool_call' as const, id: part.id, name: part.name, input: toolInput(part.args) } : { ...part },
    );
    const response: CanonicalResponse = { id: this.id, model: this.model, content, stopReason: this.#stopReason, usage };
    const toolArguments = this.#content.flatMap((part) => (part.type === 'tool' ? [part.args] : []));
    return { response: this.#stopSequence === null ? response : { ...response, stopSequence: this.#stopSequence }, toolArguments };
  }
}

/** Arguments as streamed, read as the value Anthropic carries; arguments cut short (a length stop) read as none. */
function toolInput(args: string): unknown {
  if (args === '') return {};
  try {
    return JSON.parse(args);
  } catch {
    return {};
  }
}

/**
 * An OpenAI chat completion from its chunks. A stream of several choices (`n`) interleaves
 * them by `index`: each is decoded apart. Tool calls keep their arguments' text as streamed.
 */
export function assembledOpenaiChat(events: readonly ReadEvent[], ids: IdMap, fresh: Fresh, entryUsage: TokenUsage | null): string {
  const choices = new Map<number, { decoder: OpenaiChunkDecoder; collector: AnswerCollector }>();
  const choice = (index: number) => {
    let found = choices.get(index);
    if (found === undefined) {
      const collector = new AnswerCollector();
      found = { decoder: new OpenaiChunkDecoder(collector), collector };
      choices.set(index, found);
    }
    return found;
  };
  const { head, usage } = walkChunks(events, (c, index, chunk, data, alone) => {
    choice(index).decoder.data(alone ? data : JSON.stringify({ ...chunk, choices: [c] }));
  });
  if (choices.size === 0) choice(0);
  const built = [...choices.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, { collector }]) => {
      const { response, toolArguments } = collector.assembled(NO_USAGE);
      const shaped = (canonicalToOpenaiResponse(response, fresh.nowS).choices as Record<string, unknown>[])[0] as Record<string, unknown>;
      const message = shaped.message as Record<string, unknown>;
      if (Array.isArray(message.tool_calls)) {
        message.tool_calls.forEach((call: { function: { arguments: string } }, j) => {
          call.function.arguments = toolArguments[j] ?? call.function.arguments;
        });
      }
      return { ...shaped, index };
    });
  const body: Record<string, unknown> = {
    id: ids.rename(head?.id, 'chatcmpl'),
    object: 'chat.completion',
    created: fresh.nowS,
    model: typeof head?.model === 'string' ? head.model : '',
    choices: built,
  };
  const known = usage ?? entryUsage;
  if (known !== null) body.usage = usageToOpenai(known);
  if (typeof head?.system_fingerprint === 'string') body.system_fingerprint = head.system_fingerprint;
  return JSON.stringify(body);
}

/** An Anthropic message from its events. */
export function assembledAnthropic(events: readonly ReadEvent[], ids: IdMap, entryUsage: TokenUsage | null): string {
  const collector = new AnswerCollector();
  const decoder = new AnthropicEventDecoder(collector);
  for (const { name, data } of events) if (data !== null) decoder.data(name, data);
  const { response } = collector.assembled(collector.usageSeen ?? entryUsage ?? NO_USAGE);
  return JSON.stringify(canonicalToAnthropicResponse({ ...response, id: ids.rename(response.id, 'msg') }));
}

/** A Response: the one the stream's terminal event carries whole. */
export function assembledResponse(events: readonly ReadEvent[], ids: IdMap, fresh: Fresh): string {
  for (let i = events.length - 1; i >= 0; i--) {
    const data = (events[i] as ReadEvent).data;
    const event = data === null ? null : jsonObject(data);
    if (event !== null && isRecord(event.response) && (event.type === 'response.completed' || event.type === 'response.incomplete')) {
      return JSON.stringify(renamedResponse(event.response, ids, fresh.nowS));
    }
  }
  throw new TypeError('the stream holds no whole Response (no response.completed or response.incomplete event)');
}

/** A legacy completion from its chunks: each choice's text in order, its finish reason, and the usage. */
export function assembledCompletion(events: readonly ReadEvent[], ids: IdMap, fresh: Fresh, entryUsage: TokenUsage | null): string {
  const choices = new Map<number, { text: string; finish: unknown }>();
  const { head, usage } = walkChunks(events, (c, index) => {
    const sofar = choices.get(index) ?? { text: '', finish: null };
    if (typeof c.text === 'string') sofar.text += c.text;
    if (c.finish_reason !== null && c.finish_reason !== undefined) sofar.finish = c.finish_reason;
    choices.set(index, sofar);
  });
  const body: Record<string, unknown> = {
    id: ids.rename(head?.id, 'cmpl'),
    object: 'text_completion',
    created: fresh.nowS,
    model: typeof head?.model === 'string' ? head.model : '',
    choices: [...choices.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, c]) => ({ text: c.text, index, logprobs: null, finish_reason: c.finish })),
  };
  const known = usage ?? entryUsage;
  if (known !== null) body.usage = completionUsage(known);
  if (typeof head?.system_fingerprint === 'string') body.system_fingerprint = head.system_fingerprint;
  return JSON.stringify(body);
}

/**
 * Walks an OpenAI chunk stream (chat or completions): each choice of each chunk to `each`
 * (with its index, its chunk, the chunk's text, and whether it is the chunk's only choice),
 * and answers the first chunk that names the answer (its id, model, fingerprint) and the
 * last usage reported.
 */
function walkChunks(
  events: readonly ReadEvent[],
  each: (choice: Record<string, unknown>, index: number, chunk: Record<string, unknown>, data: string, alone: boolean) => void,
): { head: Record<string, unknown> | null; usage: TokenUsage | null } {
  let head: Record<string, unknown> | null = null;
  let usage: TokenUsage | null = null;
  for (const { data } of events) {
    if (data === null || data === '[DONE]') continue;
    const chunk = jsonObject(data);
    if (chunk === null) continue;
    if (head === null && typeof chunk.id === 'string' && chunk.id !== '') head = chunk;
    usage = usageFromOpenai(chunk.usage) ?? usage;
    const list: unknown[] = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const c of list) if (isRecord(c)) each(c, typeof c.index === 'number' ? c.index : 0, chunk, data, list.length === 1);
  }
  return { head, usage };
}

/** A completion's usage: the three counts (the legacy endpoint has no token details). */
export function completionUsage(usage: TokenUsage): Record<string, number> {
  const { prompt_tokens, completion_tokens, total_tokens } = usageToOpenai(usage);
  return { prompt_tokens, completion_tokens, total_tokens };
}
