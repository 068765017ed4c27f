import type { TextKind } from './texts.js';

// How each client protocol's stream carries text, for the output guardrails: which events
// carry a piece of which text (a channel: one choice's content, one tool call's arguments,
// one content block, one Responses item part), where a channel ends (its held-back tail is
// sent just before), where the answer ends (the last point a block can still change how it
// ends), and how each protocol ends a filtered answer.

export interface SseEvent {
  /** The `event:` name, or null. */
  readonly name: string | null;
  /** The `data:` lines, joined. */
  readonly data: string;
}

export interface Delta {
  readonly channel: string;
  readonly text: string;
  /** The text is inside a JSON string (tool-call arguments): a restored original is JSON-escaped. */
  readonly json: boolean;
}

/** What one event means to the output guardrails. */
export interface EventReading {
  /** The pieces of text it carries, in order. */
  readonly deltas: readonly Delta[];
  /** Channels that end with it: their held text goes out just before it. */
  readonly closes: readonly string[];
  /** The answer's last word on how it ends (a finish reason, a stop reason, the final response): the gate decides before it goes. */
  readonly terminal: boolean;
  /** The parsed data, when JSON. */
  readonly json: Record<string, unknown> | null;
}

export interface Dialect {
  read(ev: SseEvent): EventReading;
  /** The event with its deltas' texts replaced (same order as `read` gave them), and whole texts carried by a done event set from `emitted`. */
  write(ev: SseEvent, reading: EventReading, texts: readonly string[], emitted: ReadonlyMap<string, string>): string;
  /** Whether an event whose deltas are unchanged must still be written anew (a number or a whole text it carries changed). */
  restates(reading: EventReading): boolean;
  /** An event that carries `text` more of `channel` (its held-back tail). */
  flush(channel: string, text: string): string;
  /** After a block: what this upstream event becomes (the filtered ending, a usage report, the end marker), or null to drop it. */
  afterBlock(ev: SseEvent, reading: EventReading): string | null;
  /** At the moment of a block: events that close what the client has open (none for most protocols). */
  onBlock(): string;
}

type Json = Record<string, unknown>;

function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parse(data: string): Json | null {
  if (data.length === 0 || data === '[DONE]') return null;
  try {
    const v: unknown = JSON.parse(data);
    return isRecord(v) ? v : null;
  } catch {
    return null;
  }
}

/**
 * `data` with the one JSON string member `"key":"<from>"` given `to` instead, when it
 * appears exactly once as JSON.stringify writes it; null otherwise (the caller rebuilds the
 * event). Most events carry one piece of text: splicing it in costs far less than parsing
 * and writing the whole event again.
 */
function spliced(data: string, key: string, from: string, to: string): string | null {
  const needle = `"${key}":${JSON.stringify(from)}`;
  const at = data.indexOf(needle);
  if (at === -1 || data.indexOf(needle, at + needle.length) !== -1) return null;
  return `${data.slice(0, at)}"${key}":${JSON.stringify(to)}${data.slice(at + needle.length)}`;
}

export function serialize(name: string | null, data: string): string {
  return name === null ? `data: ${data}\n\n` : `event: ${name}\ndata: ${data}\n\n`;
}

const NOTHING: EventReading = { deltas: [], closes: [], terminal: false, json: null };

/** The dialect of a client protocol's stream; a fresh one per stream (they remember what they saw). */
export function dialectOf(kind: TextKind): Dialect {
  switch (kind) {
    case 'chat-openai':
    case 'completions':
      return new OpenaiDialect(kind === 'completions');
    case 'chat-anthropic':
      return new AnthropicDialect();
    case 'responses':
      return new ResponsesDialect();
    case 'embeddings':
      throw new Error('embeddings do not stream');
  }
}

/** OpenAI chat completion chunks (and legacy completion chunks: `choices[i].text`). */
class OpenaiDialect implements Dialect {
  readonly #legacy: boolean;
  /** The last chunk's own fields (id, object, created, model): a flushed tail's chunk carries them too. */
  #head: Json = {};

  constructor(legacy: boolean) {
    this.#legacy = legacy;
  }

  read(ev: SseEvent): EventReading {
    if (ev.data === '[DONE]') return { deltas: [], closes: [], terminal: true, json: null };
    const json = parse(ev.data);
    if (json === null || !Array.isArray(json.choices)) return { ...NOTHING, json };
    const { choices: _choices, usage: _usage, ...head } = json;
    this.#head = head;
    const deltas: Delta[] = [];
    const closes: string[] = [];
    let finished = json.choices.length > 0;
    for (const c of json.choices) {
      if (!isRecord(c)) continue;
      const i = typeof c.index === 'number' ? c.index : 0;
      if (this.#legacy) {
        if (typeof c.text === 'string' && c.text.length > 0) deltas.push({ channel: `c${i}`, text: c.text, json: false });
      } else if (isRecord(c.delta)) {
        const d = c.delta;
        if (typeof d.reasoning_content === 'string' && d.reasoning_content.length > 0)
          deltas.push({ channel: `c${i}r`, text: d.reasoning_content, json: false });
        if (typeof d.content === 'string' && d.content.length > 0) deltas.push({ channel: `c${i}`, text: d.content, json: false });
        if (Array.isArray(d.tool_calls))
          for (const t of d.tool_calls) {
            if (!isRecord(t) || !isRecord(t.function) || typeof t.function.arguments !== 'string') continue;
            if (t.function.arguments.length > 0)
              deltas.push({ channel: `c${i}t${typeof t.index === 'number' ? t.index : 0}`, text: t.function.arguments, json: true });
          }
      }
      if (c.finish_reason !== null && c.finish_reason !== undefined) closes.push(`c${i}`, `c${i}r`, `c${i}t*`);
      else finished = false;
    }
    return { deltas, closes, terminal: finished, json };
  }

  write(ev: SseEvent, reading: EventReading, texts: readonly string[]): string {
    const json = reading.json;
    if (json === null || reading.deltas.length === 0) return serialize(ev.name, ev.data);
    if (reading.deltas.length === 1) {
      const d = reading.deltas[0] as Delta;
      const key = this.#legacy ? 'text' : d.json ? 'arguments' : d.channel.endsWith('r') ? 'reasoning_content' : 'content';
      const out = spliced(ev.data, key, d.text, texts[0] as string);
      if (out !== null) return serialize(ev.name, out);
    }
    let n = 0;
    const choices = (json.choices as unknown[]).map((c) => {
      if (!isRecord(c)) return c;
      if (this.#legacy) {
        if (typeof c.text === 'string' && c.text.length > 0) return { ...c, text: texts[n++] };
        return c;
      }
      if (!isRecord(c.delta)) return c;
      const d: Json = { ...c.delta };
      if (typeof d.reasoning_content === 'string' && d.reasoning_content.length > 0) d.reasoning_content = texts[n++];
      if (typeof d.content === 'string' && d.content.length > 0) d.content = texts[n++];
      if (Array.isArray(d.tool_calls))
        d.tool_calls = d.tool_calls.map((t) => {
          if (!isRecord(t) || !isRecord(t.function) || typeof t.function.arguments !== 'string' || t.function.arguments.length === 0)
            return t;
          return { ...t, function: { ...t.function, arguments: texts[n++] } };
        });
      return { ...c, delta: d };
    });
    return serialize(ev.name, JSON.stringify({ ...json, choices }));
  }

  restates(): boolean {
    return false;
  }

  flush(channel: string, text: string): string {
    const m = /^c(\d+)(r|t(\d+))?$/.exec(channel);
    const index = Number(m?.[1] ?? 0);
    let choice: Json;
    if (this.#legacy) choice = { index, text, finish_reason: null };
    else if (m?.[2] === 'r') choice = { index, delta: { reasoning_content: text }, finish_reason: null };
    else if (m?.[3] !== undefined)
      choice = { index, delta: { tool_calls: [{ index: Number(m[3]), function: { arguments: text } }] }, finish_reason: null };
    else choice = { index, delta: { content: text }, finish_reason: null };
    return serialize(null, JSON.stringify({ ...this.#head, choices: [choice] }));
  }

  afterBlock(ev: SseEvent, reading: EventReading): string | null {
    if (ev.data === '[DONE]') return serialize(ev.name, ev.data);
    const json = reading.json;
    if (json === null || !Array.isArray(json.choices)) return serialize(ev.name, ev.data);
    // A usage-only chunk goes on (the client asked for it); the finish becomes the filtered one.
    if (json.choices.length === 0) return serialize(ev.name, ev.data);
    if (!reading.terminal) return null;
    const choices = json.choices.map((c) => {
      const choice = isRecord(c) ? c : {};
      return this.#legacy
        ? { ...choice, text: '', finish_reason: 'content_filter' }
        : { ...choice, delta: {}, finish_reason: 'content_filter' };
    });
    return serialize(ev.name, JSON.stringify({ ...json, choices }));
  }

  onBlock(): string {
    return '';
  }
}

/** Anthropic Messages events: text and tool-input deltas per content block. */
class AnthropicDialect implements Dialect {
  /** Each open block's kind, by index: what its flushed tail's delta is. */
  readonly #blocks = new Map<number, 'text' | 'json'>();

  read(ev: SseEvent): EventReading {
    const json = parse(ev.data);
    if (json === null) return NOTHING;
    const type = json.type;
    const index = typeof json.index === 'number' ? json.index : 0;
    if (type === 'content_block_start' && isRecord(json.content_block)) {
      const t = json.content_block.type;
      if (t === 'text') this.#blocks.set(index, 'text');
      else if (t === 'tool_use') this.#blocks.set(index, 'json');
      return { ...NOTHING, json };
    }
    if (type === 'content_block_delta' && isRecord(json.delta)) {
      const d = json.delta;
      if (d.type === 'text_delta' && typeof d.text === 'string' && d.text.length > 0)
        return { deltas: [{ channel: `b${index}`, text: d.text, json: false }], closes: [], terminal: false, json };
      if (d.type === 'input_json_delta' && typeof d.partial_json === 'string' && d.partial_json.length > 0)
        return { deltas: [{ channel: `b${index}`, text: d.partial_json, json: true }], closes: [], terminal: false, json };
      return { ...NOTHING, json };
    }
    if (type === 'content_block_stop') {
      this.#blocks.delete(index);
      return { deltas: [], closes: [`b${index}`], terminal: false, json };
    }
    if (type === 'message_delta') return { deltas: [], closes: ['b*'], terminal: true, json };
    if (type === 'message_stop') return { deltas: [], closes: ['b*'], terminal: true, json };
    return { ...NOTHING, json };
  }

  write(ev: SseEvent, reading: EventReading, texts: readonly string[]): string {
    const json = reading.json;
    if (json === null || reading.deltas.length === 0) return serialize(ev.name, ev.data);
    const d = json.delta as Json;
    const out = spliced(ev.data, d.type === 'text_delta' ? 'text' : 'partial_json', (reading.deltas[0] as Delta).text, texts[0] as string);
    if (out !== null) return serialize(ev.name, out);
    const delta = d.type === 'text_delta' ? { ...d, text: texts[0] } : { ...d, partial_json: texts[0] };
    return serialize(ev.name, JSON.stringify({ ...json, delta }));
  }

  restates(): boolean {
    return false;
  }

  flush(channel: string, text: string): string {
    const index = Number(channel.slice(1));
    const delta = this.#blocks.get(index) === 'json' ? { type: 'input_json_delta', partial_json: text } : { type: 'text_delta', text };
    return serialize('content_block_delta', JSON.stringify({ type: 'content_block_delta', index, delta }));
  }

  afterBlock(ev: SseEvent, reading: EventReading): string | null {
    const json = reading.json;
    if (json === null) return null;
    if (json.type === 'message_delta') {
      const delta = { ...(isRecord(json.delta) ? json.delta : {}), stop_reason: 'refusal', stop_sequence: null };
      return serialize(ev.name, JSON.stringify({ ...json, delta }));
    }
    if (json.type === 'message_stop' || json.type === 'ping' || json.type === 'error') return serialize(ev.name, ev.data);
    return null;
  }

  onBlock(): string {
    // The blocks the client has open are closed, so its SDK holds a well-formed message.
    let out = '';
    for (const index of this.#blocks.keys()) out += serialize('content_block_stop', JSON.stringify({ type: 'content_block_stop', index }));
    this.#blocks.clear();
    return out;
  }
}

const RESPONSES_TERMINAL: ReadonlySet<string> = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/**
 * Responses API events. Every event carries a `sequence_number`, and a flushed tail is an
 * event more, so every event the client gets is numbered again, from 0, in the order sent.
 */
class ResponsesDialect implements Dialect {
  #sequence = 0;
  /** Each item's channels, by item id: its text parts, its arguments, its summary parts. */
  readonly #where = new Map<string, { outputIndex: number; kind: 'text' | 'args' | 'summary' }>();

  read(ev: SseEvent): EventReading {
    const json = parse(ev.data);
    if (json === null) return NOTHING;
    const type = json.type as string;
    const item = typeof json.item_id === 'string' ? json.item_id : '';
    switch (type) {
      case 'response.output_text.delta':
        return this.#delta(json, `${item}:${json.content_index ?? 0}`, false);
      case 'response.function_call_arguments.delta':
        return this.#delta(json, `${item}:args`, true);
      case 'response.reasoning_summary_text.delta':
        return this.#delta(json, `${item}:s${json.summary_index ?? 0}`, false);
      case 'response.output_text.done':
        return { deltas: [], closes: [`${item}:${json.content_index ?? 0}`], terminal: false, json };
      case 'response.function_call_arguments.done':
        return { deltas: [], closes: [`${item}:args`], terminal: false, json };
      case 'response.reasoning_summary_text.done':
        return { deltas: [], closes: [`${item}:s${json.summary_index ?? 0}`], terminal: false, json };
      default:
        return { deltas: [], closes: RESPONSES_TERMINAL.has(type) ? ['*'] : [], terminal: RESPONSES_TERMINAL.has(type), json };
    }
  }

  #delta(json: Json, channel: string, asJson: boolean): EventReading {
    const text = json.delta;
    if (typeof text !== 'string' || text.length === 0) return { ...NOTHING, json };
    if (typeof json.item_id === 'string' && typeof json.output_index === 'number')
      this.#where.set(channel, { outputIndex: json.output_index, kind: asJson ? 'args' : channel.includes(':s') ? 'summary' : 'text' });
    return { deltas: [{ channel, text, json: asJson }], closes: [], terminal: false, json };
  }

  write(ev: SseEvent, reading: EventReading, texts: readonly string[], emitted: ReadonlyMap<string, string>): string {
    const json = reading.json;
    if (json === null) return serialize(ev.name, ev.data);
    const out: Json = { ...json };
    if (reading.deltas.length > 0) out.delta = texts[0];
    const item = typeof json.item_id === 'string' ? json.item_id : '';
    switch (json.type) {
      case 'response.output_text.done':
        out.text = emitted.get(`${item}:${json.content_index ?? 0}`) ?? json.text;
        break;
      case 'response.function_call_arguments.done':
        out.arguments = emitted.get(`${item}:args`) ?? json.arguments;
        break;
      case 'response.reasoning_summary_text.done':
        out.text = emitted.get(`${item}:s${json.summary_index ?? 0}`) ?? json.text;
        break;
      case 'response.content_part.done':
        if (isRecord(json.part) && typeof json.part.text === 'string')
          out.part = { ...json.part, text: emitted.get(`${item}:${json.content_index ?? 0}`) ?? json.part.text };
        break;
      case 'response.reasoning_summary_part.done':
        if (isRecord(json.part) && typeof json.part.text === 'string')
          out.part = { ...json.part, text: emitted.get(`${item}:s${json.summary_index ?? 0}`) ?? json.part.text };
        break;
      case 'response.output_item.done':
        if (isRecord(json.item)) out.item = itemWithTexts(json.item, emitted);
        break;
      default:
        if (isRecord(json.response) && Array.isArray(json.response.output))
          out.response = { ...json.response, output: json.response.output.map((i) => (isRecord(i) ? itemWithTexts(i, emitted) : i)) };
    }
    return this.#numbered(ev.name, out);
  }

  #numbered(name: string | null, json: Json): string {
    if ('sequence_number' in json) json.sequence_number = this.#sequence++;
    return serialize(name, JSON.stringify(json));
  }

  /**
   * Every event is numbered again once a flushed tail was inserted (or an event dropped), and
   * a done event, an item or the final response carries whole texts that may have changed.
   */
  restates(reading: EventReading): boolean {
    const json = reading.json;
    if (json === null) return false;
    if (typeof json.sequence_number === 'number' && json.sequence_number !== this.#sequence) return true;
    if (typeof json.type === 'string' && (json.type.endsWith('.done') || RESPONSES_TERMINAL.has(json.type))) return true;
    // Sent as it came: its number is the next one.
    if (typeof json.sequence_number === 'number') this.#sequence += 1;
    return false;
  }

  flush(channel: string, text: string): string {
    const at = channel.lastIndexOf(':');
    const item = channel.slice(0, at);
    const part = channel.slice(at + 1);
    const where = this.#where.get(channel);
    const base = { item_id: item, output_index: where?.outputIndex ?? 0, sequence_number: 0 };
    if (part === 'args')
      return this.#numbered('response.function_call_arguments.delta', {
        type: 'response.function_call_arguments.delta',
        ...base,
        delta: text,
      });
    if (part.startsWith('s'))
      return this.#numbered('response.reasoning_summary_text.delta', {
        type: 'response.reasoning_summary_text.delta',
        ...base,
        summary_index: Number(part.slice(1)),
        delta: text,
      });
    return this.#numbered('response.output_text.delta', {
      type: 'response.output_text.delta',
      ...base,
      content_index: Number(part),
      delta: text,
      logprobs: [],
    });
  }

  afterBlock(ev: SseEvent, reading: EventReading): string | null {
    const json = reading.json;
    if (json === null || !reading.terminal || json.type === 'response.failed')
      return json === null ? null : reading.terminal ? this.#numbered(ev.name, { ...json }) : null;
    const response = isRecord(json.response) ? json.response : {};
    const filtered: Json = { ...response, status: 'incomplete', incomplete_details: { reason: 'content_filter' }, output: [] };
    return this.#numbered('response.incomplete', { ...json, type: 'response.incomplete', response: filtered });
  }

  onBlock(): string {
    return '';
  }
}

/** A Responses item with its texts set from what the client was sent on each channel. */
function itemWithTexts(item: Json, emitted: ReadonlyMap<string, string>): Json {
  const id = typeof item.id === 'string' ? item.id : '';
  if (item.type === 'function_call') {
    const args = emitted.get(`${id}:args`);
    return args === undefined ? item : { ...item, arguments: args };
  }
  if (item.type === 'message' && Array.isArray(item.content)) {
    return {
      ...item,
      content: item.content.map((p, j) => {
        const text = emitted.get(`${id}:${j}`);
        return isRecord(p) && typeof p.text === 'string' && text !== undefined ? { ...p, text } : p;
      }),
    };
  }
  if (item.type === 'reasoning' && Array.isArray(item.summary)) {
    return {
      ...item,
      summary: item.summary.map((s, k) => {
        const text = emitted.get(`${id}:s${k}`);
        return isRecord(s) && text !== undefined ? { ...s, text } : s;
      }),
    };
  }
  return item;
}

/** Splits whole SSE events (the relay hands on whole events only). */
export function splitEvents(text: string): SseEvent[] {
  const out: SseEvent[] = [];
  // Providers frame events with LF; CRLF (Gemini's) is made LF first, once.
  const lf = text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
  let at = 0;
  while (at < lf.length) {
    let end = lf.indexOf('\n\n', at);
    if (end === -1) end = lf.length;
    if (end > at) {
      const ev = eventOf(lf, at, end);
      if (ev !== null) out.push(ev);
    }
    at = end + 2;
  }
  return out;
}

/** One event's `event:` name and `data:` lines, from lf[at, end). */
function eventOf(lf: string, at: number, end: number): SseEvent | null {
  let name: string | null = null;
  let data: string | null = null;
  let line = at;
  while (line < end) {
    let next = lf.indexOf('\n', line);
    if (next === -1 || next > end) next = end;
    if (lf.startsWith('data:', line)) {
      const from = lf.charCodeAt(line + 5) === 32 ? line + 6 : line + 5;
      const piece = lf.slice(from, next);
      data = data === null ? piece : `${data}\n${piece}`;
    } else if (lf.startsWith('event:', line)) name = lf.slice(lf.charCodeAt(line + 6) === 32 ? line + 7 : line + 6, next);
    line = next + 1;
  }
  if (data === null && name === null) return null;
  return { name, data: data ?? '' };
}
