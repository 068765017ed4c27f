import type { TokenUsage } from '../metering.js';
import {
  endOf,
  functionCallItem,
  messageItem,
  outputText,
  type ResponsesShape,
  reasoningItem,
  responseObject,
} from './responses-object.js';
import type { StreamSink } from './stream-sink.js';
import type { StopReason } from './types.js';
import { isRecord } from './types.js';
import { openaiErrorType } from './upstream-error.js';

// Canonical stream events written as an OpenAI Responses API event stream: the response is
// created and in progress, then each output item is added, streamed and done in turn, and
// the stream ends with the whole Response (completed or incomplete), the same object the
// plain writer gives. Every event carries its `sequence_number`, from 0, which the OpenAI
// SDKs and the gateway's own stream reader (responses-stream-reader.ts) count on.

/** Appends server-sent events of the Responses API, numbering them. */
class EventLog {
  out = '';
  #sequence = 0;

  emit(type: string, fields: Record<string, unknown>): void {
    // `sequence_number` right after `type`: the gateway's stream reader finds both in an event's first bytes.
    const data = JSON.stringify({ type, sequence_number: this.#sequence++, ...fields });
    this.out += `event: ${type}\ndata: ${data}\n\n`;
  }
}

/** The item being streamed: its place in the output, and what it holds so far. */
interface StreamedItem {
  readonly id: string;
  readonly index: number;
  text: string;
}
type OpenTool = StreamedItem & { readonly kind: 'tool'; readonly callId: string; readonly name: string };
type OpenItem = (StreamedItem & { readonly kind: 'text' }) | (StreamedItem & { readonly kind: 'thinking' }) | OpenTool;

/** Writes canonical stream events as a Responses API event stream; `response` is the final Response once it ended. */
export class ResponsesEventEncoder implements StreamSink {
  readonly #log = new EventLog();
  readonly #shape: ResponsesShape;
  readonly #output: Record<string, unknown>[] = [];
  readonly #tools = new Map<number, OpenTool>();
  #open: OpenItem | null = null;
  #model = '';
  #started = false;
  #ended = false;
  #reason: StopReason | null = null;
  #usage: TokenUsage | null = null;
  #response: Record<string, unknown> | null = null;

  constructor(shape: ResponsesShape) {
    this.#shape = shape;
  }

  /** The client's bytes so far; the stream translator takes them and sets it back to ''. */
  get out(): string {
    return this.#log.out;
  }
  set out(value: string) {
    this.#log.out = value;
  }

  /** The final Response object once the stream ended whole; null before, and when it failed. */
  get response(): Record<string, unknown> | null {
    return this.#response;
  }

  start(_id: string, model: string): void {
    // The Response's id is the gateway's (a follow-up names it), not the upstream's answer id.
    if (this.#started) return;
    this.#started = true;
    this.#model = model;
    const response = responseObject(this.#shape, [], { status: 'in_progress', model });
    this.#log.emit('response.created', { response });
    this.#log.emit('response.in_progress', { response });
  }

  text(text: string): void {
    if (text === '') return;
    const item = this.#item('text');
    item.text += text;
    this.#log.emit('response.output_text.delta', { ...where(item), content_index: 0, delta: text, logprobs: [] });
  }

  thinking(text: string): void {
    if (text === '') return;
    const item = this.#item('thinking');
    item.text += text;
    this.#log.emit('response.reasoning_summary_text.delta', { ...where(item), summary_index: 0, delta: text });
  }

  /** A signature has no place in a Response: a Responses client sends back OpenAI's encrypted reasoning, which this is not. */
  thinkingSignature(_signature: string): void {}

  toolStart(tool: number, id: string, name: string): void {
    this.#ensureStarted();
    this.#close('completed');
    const item = { kind: 'tool' as const, id: this.#shape.newItemId('fc'), index: this.#output.length, callId: id, name, text: '' };
    this.#tools.set(tool, item);
    this.#open = item;
    this.#added(item, functionCallItem(item.id, id, name, '', 'in_progress'));
  }

  toolArguments(tool: number, json: string): void {
    const item = this.#tools.get(tool);
    if (item === undefined || json === '') return;
    item.text += json;
    this.#log.emit('response.function_call_arguments.delta', { ...where(item), delta: json });
    // Arguments for a call already done (a compatible server that interleaves calls): its item keeps them.
    if (this.#open !== item) this.#output[item.index] = toolItem(item);
  }

  finish(reason: StopReason | null, _stopSequence: string | null): void {
    this.#reason = reason;
  }

  usage(usage: TokenUsage): void {
    this.#usage = usage;
  }

  done(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#ensureStarted();
    const end = endOf(this.#reason);
    this.#close(end.status);
    const response = responseObject(this.#shape, this.#output, {
      status: end.status,
      incompleteReason: end.reason,
      usage: this.#usage,
      completedAt: Math.floor(Date.now() / 1000),
      model: this.#model,
    });
    this.#response = response;
    this.#log.emit(end.status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
  }

  /** The Responses API's `error` event, with OpenAI's `error` object beside it (as the pass-through's own error event). */
  error(status: number, message: string, code: string | null = null): void {
    if (this.#ended) return;
    this.#ended = true;
    const error = { message, type: openaiErrorType(status, code), param: null, code };
    this.#log.emit('error', { code, message, param: null, error });
  }

  #ensureStarted(): void {
    if (!this.#started) this.start('', '');
  }

  /** The open item of the kind, opening one (and closing the one before) when the kind changes. */
  #item(kind: 'text' | 'thinking'): OpenItem {
    this.#ensureStarted();
    if (this.#open?.kind === kind) return this.#open;
    this.#close('completed');
    const id = this.#shape.newItemId(kind === 'text' ? 'msg' : 'rs');
    const item: OpenItem =
      kind === 'text' ? { kind, id, index: this.#output.length, text: '' } : { kind, id, index: this.#output.length, text: '' };
    this.#open = item;
    if (kind === 'text') {
      this.#added(item, messageItem(id, 'in_progress', []));
      this.#log.emit('response.content_part.added', { ...where(item), content_index: 0, part: outputText('') });
    } else {
      this.#added(item, reasoningItem(id, []));
      this.#log.emit('response.reasoning_summary_part.added', { ...where(item), summary_index: 0, part: summaryText('') });
    }
    return item;
  }

  #added(item: OpenItem, shown: Record<string, unknown>): void {
    this.#output.push(shown);
    this.#log.emit('response.output_item.added', { output_index: item.index, item: shown });
  }

  /** Ends the open item: its done events, then the item whole. A message's status is the response's when it is the last item. */
  #close(status: 'completed' | 'incomplete'): void {
    const item = this.#open;
    if (item === null) return;
    this.#open = null;
    const log = this.#log;
    let whole: Record<string, unknown>;
    if (item.kind === 'text') {
      log.emit('response.output_text.done', { ...where(item), content_index: 0, text: item.text, logprobs: [] });
      log.emit('response.content_part.done', { ...where(item), content_index: 0, part: outputText(item.text) });
      whole = messageItem(item.id, status, [item.text]);
    } else if (item.kind === 'thinking') {
      log.emit('response.reasoning_summary_text.done', { ...where(item), summary_index: 0, text: item.text });
      log.emit('response.reasoning_summary_part.done', { ...where(item), summary_index: 0, part: summaryText(item.text) });
      whole = reasoningItem(item.id, [item.text]);
    } else {
      log.emit('response.function_call_arguments.done', { ...where(item), name: item.name, arguments: item.text });
      whole = toolItem(item);
    }
    this.#output[item.index] = whole;
    log.emit('response.output_item.done', { output_index: item.index, item: whole });
  }
}

function where(item: OpenItem): { item_id: string; output_index: number } {
  return { item_id: item.id, output_index: item.index };
}

function summaryText(text: string): Record<string, unknown> {
  return { type: 'summary_text', text };
}

function toolItem(item: OpenTool): Record<string, unknown> {
  return functionCallItem(item.id, item.callId, item.name, item.text, 'completed');
}

const TERMINAL: Readonly<Record<string, string>> = {
  completed: 'response.completed',
  incomplete: 'response.incomplete',
  failed: 'response.failed',
};

/**
 * The events of a response the gateway puts together item by item (its own MCP tools'
 * loop): the start, each whole item as it is ready, and the terminal event. Each method
 * returns the events it wrote, numbered on from the last.
 */
export class ResponsesEventLog {
  readonly #log = new EventLog();
  readonly #shape: ResponsesShape;

  constructor(shape: ResponsesShape) {
    this.#shape = shape;
  }

  started(): string {
    const start = responseObject(this.#shape, [], { status: 'in_progress' });
    this.#log.emit('response.created', { response: start });
    this.#log.emit('response.in_progress', { response: start });
    return this.#take();
  }

  item(item: Record<string, unknown>, outputIndex: number): string {
    replayItem(this.#log, item, outputIndex, WHOLE);
    return this.#take();
  }

  /** Another stream's event, passed on under this stream's numbering (`fields` without `type` and `sequence_number`). */
  relay(type: string, fields: Record<string, unknown>): string {
    this.#log.emit(type, fields);
    return this.#take();
  }

  /** The terminal event of the response's status. */
  finished(response: Record<string, unknown>): string {
    const terminal = typeof response.status === 'string' ? TERMINAL[response.status] : undefined;
    if (terminal !== undefined) this.#log.emit(terminal, { response });
    return this.#take();
  }

  /** The stream's last event when the turn failed after it started. */
  error(code: string, message: string): string {
    this.#log.emit('error', { code, message, param: null });
    return this.#take();
  }

  #take(): string {
    const out = this.#log.out;
    this.#log.out = '';
    return out;
  }
}

/** Cuts a text into the deltas a replayed stream gives it in; concatenated, they are the text. */
export type DeltaPieces = (text: string) => readonly string[];

const WHOLE: DeltaPieces = (text) => [text];

/**
 * A stored Response as the event stream that would have produced it (a stored response
 * fetched with `stream=true`): each item added, its content given as deltas (whole, as one,
 * unless `pieces` cuts it), and done; then the terminal event of its status (none for one
 * still in progress).
 */
export function replayResponse(response: Record<string, unknown>, pieces: DeltaPieces = WHOLE): string {
  const log = new EventLog();
  const output = Array.isArray(response.output) ? response.output : [];
  const start: Record<string, unknown> = {
    ...response,
    status: 'in_progress',
    output: [],
    completed_at: null,
    error: null,
    incomplete_details: null,
  };
  delete start.usage;
  log.emit('response.created', { response: start });
  log.emit('response.in_progress', { response: start });
  output.forEach((item: unknown, index) => {
    if (isRecord(item)) replayItem(log, item, index, pieces);
  });
  const terminal = typeof response.status === 'string' ? TERMINAL[response.status] : undefined;
  if (terminal !== undefined) log.emit(terminal, { response });
  return log.out;
}

function replayItem(log: EventLog, item: Record<string, unknown>, index: number, pieces: DeltaPieces): void {
  const at = { item_id: typeof item.id === 'string' ? item.id : '', output_index: index };
  if (item.type === 'message' && Array.isArray(item.content)) {
    log.emit('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', content: [] } });
    item.content.forEach((part: unknown, j) => {
      if (!isRecord(part)) return;
      const refusal = part.type === 'refusal';
      const key = refusal ? 'refusal' : 'text';
      const value = typeof part[key] === 'string' ? (part[key] as string) : '';
      const kind = refusal ? 'refusal' : 'output_text';
      const logprobs = refusal ? {} : { logprobs: [] };
      log.emit('response.content_part.added', { ...at, content_index: j, part: { ...part, [key]: '' } });
      if (part.type === 'output_text' || refusal) {
        for (const delta of pieces(value)) log.emit(`response.${kind}.delta`, { ...at, content_index: j, delta, ...logprobs });
        log.emit(`response.${kind}.done`, { ...at, content_index: j, [key]: value, ...logprobs });
      }
      log.emit('response.content_part.done', { ...at, content_index: j, part });
    });
  } else if (item.type === 'reasoning' && Array.isArray(item.summary)) {
    log.emit('response.output_item.added', { output_index: index, item: { ...item, summary: [] } });
    item.summary.forEach((part: unknown, k) => {
      const text = isRecord(part) && typeof part.text === 'string' ? part.text : '';
      log.emit('response.reasoning_summary_part.added', { ...at, summary_index: k, part: summaryText('') });
      for (const delta of pieces(text)) log.emit('response.reasoning_summary_text.delta', { ...at, summary_index: k, delta });
      log.emit('response.reasoning_summary_text.done', { ...at, summary_index: k, text });
      log.emit('response.reasoning_summary_part.done', { ...at, summary_index: k, part: summaryText(text) });
    });
  } else if (item.type === 'function_call') {
    const args = typeof item.arguments === 'string' ? item.arguments : '';
    log.emit('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', arguments: '' } });
    for (const delta of pieces(args)) log.emit('response.function_call_arguments.delta', { ...at, delta });
    log.emit('response.function_call_arguments.done', { ...at, name: item.name, arguments: args });
  } else if (item.type === 'mcp_list_tools') {
    log.emit('response.output_item.added', { output_index: index, item: { ...item, tools: [] } });
    log.emit('response.mcp_list_tools.in_progress', at);
    log.emit(item.error == null ? 'response.mcp_list_tools.completed' : 'response.mcp_list_tools.failed', at);
  } else if (item.type === 'mcp_call') {
    const args = typeof item.arguments === 'string' ? item.arguments : '';
    log.emit('response.output_item.added', {
      output_index: index,
      item: { ...item, status: 'in_progress', arguments: '', output: null, error: null },
    });
    log.emit('response.mcp_call_arguments.delta', { ...at, delta: args });
    log.emit('response.mcp_call_arguments.done', { ...at, arguments: args });
    log.emit('response.mcp_call.in_progress', at);
    log.emit(item.status === 'failed' ? 'response.mcp_call.failed' : 'response.mcp_call.completed', at);
  } else log.emit('response.output_item.added', { output_index: index, item });
  log.emit('response.output_item.done', { output_index: index, item });
}
