import { SseParser } from '../providers/index.js';
import type { CachedOperation, CachedProtocol } from './entry.js';
import { isRecord, jsonObject } from './event-text.js';

// What a cached miss's client was given, kept on its way out so it can become an entry,
// and what decides whether it may: whether it calls a tool (stored only where the route
// allows it) and whether it ended as its protocol says a whole answer ends (a cut or failed
// stream is never stored). It runs on the relay of every cached miss, so a stream's events
// are judged by string checks on the text as it passes; a JSON string escapes its quotes,
// so a pattern that starts and ends at a quote meets the protocol's own members, never the
// model's text. An event is parsed only when a check cannot tell (an OpenAI error object).

/** A captured answer, as `AnswerCapture.result` gives it. */
export interface CapturedAnswer {
  readonly form: 'whole' | 'stream';
  /** The whole body (form `whole`), unless it was oversize. */
  readonly body?: string;
  /** The events, each whole (form `stream`), unless they were oversize. */
  readonly events?: readonly string[];
  /** The answer's UTF-8 bytes seen (all of them, oversize or not). */
  readonly bytes: number;
  /** The answer calls a tool (a function, or a server tool: web search, MCP...). */
  readonly toolCalls: boolean;
  /** It ended as its protocol says a whole answer ends, and reported no error on the way. */
  readonly complete: boolean;
  /** It grew past `maxBytes`: nothing was kept, and from there on nothing was judged. */
  readonly oversize: boolean;
}

export interface AnswerCaptureOptions {
  readonly operation: CachedOperation;
  readonly protocol: CachedProtocol;
  /**
   * The most answer bytes kept. The entry's own size (entryBytes: its JSON, escapes and
   * metadata included) is larger; the caller checks max_entry_bytes on it when it builds one.
   */
  readonly maxBytes: number;
}

/** The string checks of one protocol's stream. */
interface StreamChecks {
  /** The answer calls a tool. */
  readonly tool: RegExp | null;
  /** The answer ended whole. */
  readonly end: RegExp;
  /** The answer failed (an error event, an incomplete or failed Response). */
  readonly failure: RegExp | null;
}

const STREAM_CHECKS: Readonly<Record<CachedProtocol, StreamChecks>> = {
  // A finish_reason ends the answer even when `[DONE]` never comes (some compatible servers);
  // `null` is not quoted. An error chunk is `{"error": {...}}`, told apart from Azure's
  // content filter results (which nest an `error`) by parsing it.
  openai: {
    tool: /"(?:tool_calls"\s*:\s*\[\s*\{|function_call"\s*:\s*\{)/,
    end: /"finish_reason"\s*:\s*"|^data: ?\[DONE\]/m,
    failure: null,
  },
  anthropic: {
    tool: /"type"\s*:\s*"(?:server_|mcp_)?tool_use"/,
    end: /"type"\s*:\s*"message_stop"/,
    failure: /"type"\s*:\s*"error"/,
  },
  responses: {
    tool: /"type"\s*:\s*"(?:[a-z_]+_call|mcp_approval_request)"/,
    end: /"type"\s*:\s*"response\.completed"/,
    failure: /"type"\s*:\s*"(?:response\.incomplete|response\.failed|error)"/,
  },
};

/** A blank line: two line ends in a row (CRLF, LF or a lone CR each), the end of an event. */
const BLANK_LINE = /(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)/g;

/**
 * Captures one answer in the client's protocol: one whole body, or its events as they are
 * written (text holding whole events, one or several; a piece that ends inside an event is
 * held until the rest comes), bounded by `maxBytes`.
 */
export class AnswerCapture {
  readonly #options: AnswerCaptureOptions;
  readonly #checks: StreamChecks;
  #form: 'whole' | 'stream' | null = null;
  #body: string | undefined;
  #events: string[] = [];
  #pending = '';
  #bytes = 0;
  #toolCalls = false;
  #ended = false;
  #failed = false;
  #oversize = false;
  #parser: SseParser | null = null;

  constructor(options: AnswerCaptureOptions) {
    this.#options = options;
    const checks = STREAM_CHECKS[options.protocol];
    // Completions and embeddings have no tools.
    this.#checks = options.operation === 'chat' || options.operation === 'responses' ? checks : { ...checks, tool: null };
  }

  /** The whole answer, as its status and body. */
  body(status: number, text: string): void {
    this.#take('whole');
    this.#bytes = Buffer.byteLength(text);
    if (this.#bytes > this.#options.maxBytes) {
      this.#oversize = true;
      return;
    }
    this.#body = text;
    if (status < 200 || status >= 300) return;
    // The common case judged by string checks alone (this runs on every cached miss): no tool
    // member, no error member, so a success that is whole. Anything else is parsed.
    const protocol = this.#options.protocol;
    if (protocol !== 'responses' && !text.includes('"error"') && !(this.#checks.tool?.test(text) ?? false)) {
      this.#ended = text.length > 0 && text.charCodeAt(0) === 0x7b && text.trimEnd().endsWith('}');
      return;
    }
    const parsed = jsonObject(text);
    if (parsed === null) return;
    this.#ended = wholeIsComplete(this.#options.protocol, parsed);
    this.#toolCalls = this.#checks.tool !== null && wholeCallsTool(this.#options.protocol, parsed);
  }

  /** Events as they were written to the client. */
  events(text: string): void {
    this.#take('stream');
    this.#bytes += Buffer.byteLength(text);
    if (this.#oversize) return;
    if (this.#bytes > this.#options.maxBytes) {
      this.#oversize = true;
      this.#events = [];
      this.#pending = '';
      return;
    }
    const from = this.#events.length;
    this.#judge(this.#cut(text), from);
  }

  result(): CapturedAnswer {
    const form = this.#form ?? 'whole';
    // A last event that came without its blank line is judged at the end, once.
    if (form === 'stream' && !this.#oversize && this.#pending.trim() !== '') {
      this.#events.push(`${this.#pending.replace(/[\r\n]+$/, '')}\n\n`);
      this.#pending = '';
      this.#judge(this.#events.at(-1) as string, this.#events.length - 1);
    }
    let kept: { body?: string; events?: readonly string[] } = {};
    if (!this.#oversize) kept = form === 'stream' ? { events: this.#events } : this.#body === undefined ? {} : { body: this.#body };
    return {
      form,
      ...kept,
      bytes: this.#bytes,
      toolCalls: this.#toolCalls,
      complete: this.#ended && !this.#failed && !this.#oversize,
      oversize: this.#oversize,
    };
  }

  #take(form: 'whole' | 'stream'): void {
    if (this.#form !== null && this.#form !== form) throw new TypeError('an answer is captured either whole or as events, not both');
    if (form === 'whole' && this.#form === 'whole') throw new TypeError('a whole answer is captured once');
    this.#form = form;
  }

  /**
   * Judges whole events (their text, from the event at `from` on) by the protocol's string
   * checks: each byte is checked once, when the event it belongs to is whole, so a piece
   * that ends inside a member name cannot hide it.
   */
  #judge(text: string, from: number): void {
    const checks = this.#checks;
    if (!this.#toolCalls && checks.tool?.test(text)) this.#toolCalls = true;
    if (!this.#ended && checks.end.test(text)) this.#ended = true;
    if (!this.#failed && checks.failure?.test(text)) this.#failed = true;
    if (this.#options.protocol === 'openai' && !this.#failed && text.includes('"error"')) this.#findError(from);
  }

  /**
   * Cuts the held text and this piece into whole events, and answers their text; a last
   * line end that may be half a CRLF waits for the next piece.
   */
  #cut(text: string): string {
    const all = this.#pending + text;
    let start = 0;
    BLANK_LINE.lastIndex = 0;
    for (let m = BLANK_LINE.exec(all); m !== null; m = BLANK_LINE.exec(all)) {
      const end = m.index + m[0].length;
      if (end === all.length && all.charCodeAt(end - 1) === 0x0d) break;
      this.#events.push(all.slice(start, end));
      start = end;
    }
    this.#pending = all.slice(start);
    return all.slice(0, start);
  }

  /** Reads the new events that mention an error: OpenAI's error chunk has `error` at its top level. */
  #findError(from: number): void {
    this.#parser ??= new SseParser();
    for (let i = from; i < this.#events.length; i++) {
      const event = this.#events[i] as string;
      if (!event.includes('"error"')) continue;
      this.#parser.push(event, (_name, data) => {
        if (isRecord(jsonObject(data)?.error)) this.#failed = true;
      });
    }
  }
}

/** A whole answer that is complete: not an error in a success's clothing, and a Response that completed. */
function wholeIsComplete(protocol: CachedProtocol, body: Record<string, unknown>): boolean {
  if (protocol === 'anthropic') return body.type !== 'error';
  if (protocol === 'responses') return body.status === 'completed';
  return !isRecord(body.error);
}

const TOOL_ITEM = /_call$|^mcp_approval_request$/;
const TOOL_BLOCK = /^(?:server_|mcp_)?tool_use$/;

function wholeCallsTool(protocol: CachedProtocol, body: Record<string, unknown>): boolean {
  const list = (value: unknown): Record<string, unknown>[] => (Array.isArray(value) ? value.filter(isRecord) : []);
  if (protocol === 'anthropic') return list(body.content).some((b) => typeof b.type === 'string' && TOOL_BLOCK.test(b.type));
  if (protocol === 'responses') return list(body.output).some((item) => typeof item.type === 'string' && TOOL_ITEM.test(item.type));
  return list(body.choices).some((c) => {
    const message = isRecord(c.message) ? c.message : {};
    return (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) || isRecord(message.function_call);
  });
}
