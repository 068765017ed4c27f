import type { CheckedText } from './run.js';

// Where the text is in each client protocol's request and whole answer: every message, system
// prompt and tool result a caller sends, every text, tool-call argument and reasoning summary
// an answer carries. A slot is a path into the parsed JSON, so a masked text is written back
// where it was found, into a copy: the parsed request itself is never changed.

export type JsonPath = readonly (string | number)[];

export interface TextSlot extends CheckedText {
  readonly path: JsonPath;
}

type Json = Record<string, unknown>;
/** What a request or an answer is: the model endpoint and the protocol its client speaks. */
export type TextKind = 'chat-openai' | 'chat-anthropic' | 'completions' | 'embeddings' | 'responses';

function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function push(out: TextSlot[], role: CheckedText['role'], text: unknown, path: JsonPath): void {
  if (typeof text === 'string' && text.length > 0) out.push({ role, text, path });
}

function roleOf(role: unknown): CheckedText['role'] {
  if (role === 'system' || role === 'developer') return 'system';
  if (role === 'assistant') return 'assistant';
  if (role === 'tool' || role === 'function') return 'tool';
  return 'user';
}

/** The texts of a request body (for a Responses request: `instructions` only; its items are read by `itemTexts`). */
export function requestTexts(kind: TextKind, body: Json): TextSlot[] {
  const out: TextSlot[] = [];
  switch (kind) {
    case 'chat-openai':
      openaiMessages(body.messages, out);
      break;
    case 'chat-anthropic':
      anthropicContent(body.system, 'system', ['system'], out);
      if (Array.isArray(body.messages))
        body.messages.forEach((m, i) => {
          if (isRecord(m)) anthropicContent(m.content, roleOf(m.role), ['messages', i, 'content'], out);
        });
      break;
    case 'completions':
    case 'embeddings': {
      const field = kind === 'completions' ? 'prompt' : 'input';
      const v = body[field];
      if (typeof v === 'string') push(out, 'user', v, [field]);
      else if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) push(out, 'user', v[i], [field, i]);
      }
      break;
    }
    case 'responses':
      push(out, 'system', body.instructions, ['instructions']);
      break;
  }
  return out;
}

function openaiMessages(messages: unknown, out: TextSlot[]): void {
  if (!Array.isArray(messages)) return;
  messages.forEach((m, i) => {
    if (!isRecord(m)) return;
    const role = roleOf(m.role);
    const content = m.content;
    if (typeof content === 'string') push(out, role, content, ['messages', i, 'content']);
    else if (Array.isArray(content))
      content.forEach((p, j) => {
        if (isRecord(p) && p.type === 'text') push(out, role, p.text, ['messages', i, 'content', j, 'text']);
      });
    if (Array.isArray(m.tool_calls))
      m.tool_calls.forEach((c, k) => {
        if (isRecord(c) && isRecord(c.function))
          push(out, 'assistant', c.function.arguments, ['messages', i, 'tool_calls', k, 'function', 'arguments']);
      });
  });
}

function anthropicContent(content: unknown, role: CheckedText['role'], path: JsonPath, out: TextSlot[]): void {
  if (typeof content === 'string') {
    push(out, role, content, path);
    return;
  }
  if (!Array.isArray(content)) return;
  content.forEach((b, j) => {
    if (!isRecord(b)) return;
    if (b.type === 'text') push(out, role, b.text, [...path, j, 'text']);
    else if (b.type === 'tool_result') anthropicContent(b.content, 'tool', [...path, j, 'content'], out);
    else if (b.type === 'tool_use') stringLeaves(b.input, 'assistant', [...path, j, 'input'], out, 0);
  });
}

/** The strings inside a tool call's input object (Anthropic's tool_use carries JSON, not text). */
function stringLeaves(v: unknown, role: CheckedText['role'], path: JsonPath, out: TextSlot[], depth: number): void {
  if (depth > 32) return;
  if (typeof v === 'string') push(out, role, v, path);
  else if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) stringLeaves(v[i], role, [...path, i], out, depth + 1);
  } else if (isRecord(v)) for (const [k, x] of Object.entries(v)) stringLeaves(x, role, [...path, k], out, depth + 1);
}

/** The strings inside a JSON value (a tool call's arguments), each a slot of its own. */
export function valueTexts(value: unknown, role: CheckedText['role'], root: JsonPath = []): TextSlot[] {
  const out: TextSlot[] = [];
  stringLeaves(value, role, root, out, 0);
  return out;
}

/** The texts of an MCP tool result: its text content blocks, and the strings of its structured content. */
export function toolResultTexts(result: Json): TextSlot[] {
  const out: TextSlot[] = [];
  if (Array.isArray(result.content))
    result.content.forEach((b, i) => {
      if (isRecord(b) && b.type === 'text') push(out, 'tool', b.text, ['content', i, 'text']);
    });
  if (result.structuredContent !== undefined) stringLeaves(result.structuredContent, 'tool', ['structuredContent'], out, 0);
  return out;
}

/** The texts of Responses API items (a request's input items, or an answer's output items). */
export function itemTexts(items: readonly unknown[], root: JsonPath = []): TextSlot[] {
  const out: TextSlot[] = [];
  items.forEach((item, i) => {
    if (!isRecord(item)) return;
    const at = [...root, i];
    switch (item.type) {
      case 'message': {
        const role = roleOf(item.role);
        if (typeof item.content === 'string') push(out, role, item.content, [...at, 'content']);
        else if (Array.isArray(item.content))
          item.content.forEach((p, j) => {
            if (isRecord(p) && typeof p.text === 'string') push(out, role, p.text, [...at, 'content', j, 'text']);
          });
        break;
      }
      case 'function_call':
        push(out, 'assistant', item.arguments, [...at, 'arguments']);
        break;
      case 'function_call_output':
        push(out, 'tool', item.output, [...at, 'output']);
        break;
      case 'reasoning':
        if (Array.isArray(item.summary))
          item.summary.forEach((s, k) => {
            if (isRecord(s)) push(out, 'assistant', s.text, [...at, 'summary', k, 'text']);
          });
        break;
    }
  });
  return out;
}

/** The texts of a whole 2xx answer in the client's protocol. */
export function answerTexts(kind: TextKind, body: Json): TextSlot[] {
  const out: TextSlot[] = [];
  switch (kind) {
    case 'chat-openai':
      if (Array.isArray(body.choices))
        body.choices.forEach((c, i) => {
          if (!isRecord(c) || !isRecord(c.message)) return;
          const m = c.message;
          push(out, 'assistant', m.reasoning_content, ['choices', i, 'message', 'reasoning_content']);
          push(out, 'assistant', m.content, ['choices', i, 'message', 'content']);
          if (Array.isArray(m.tool_calls))
            m.tool_calls.forEach((t, k) => {
              if (isRecord(t) && isRecord(t.function))
                push(out, 'assistant', t.function.arguments, ['choices', i, 'message', 'tool_calls', k, 'function', 'arguments']);
            });
        });
      break;
    case 'completions':
      if (Array.isArray(body.choices))
        body.choices.forEach((c, i) => {
          if (isRecord(c)) push(out, 'assistant', c.text, ['choices', i, 'text']);
        });
      break;
    case 'chat-anthropic':
      if (Array.isArray(body.content))
        body.content.forEach((b, j) => {
          if (!isRecord(b)) return;
          if (b.type === 'text') push(out, 'assistant', b.text, ['content', j, 'text']);
          else if (b.type === 'tool_use') stringLeaves(b.input, 'assistant', ['content', j, 'input'], out, 0);
        });
      break;
    case 'responses':
      if (Array.isArray(body.output)) out.push(...itemTexts(body.output, ['output']));
      break;
    case 'embeddings':
      break;
  }
  return out;
}

/** A copy of `root` with the text at each slot's path replaced; only the containers on the paths are copied. */
export function withTexts<T>(root: T, slots: readonly TextSlot[], texts: readonly string[]): T {
  let out: unknown = root;
  // The containers this call copied: written in place by its later writes.
  const copied = new Set<object>();
  slots.forEach((slot, i) => {
    const text = texts[i];
    if (text !== undefined && text !== slot.text) out = setAt(out, slot.path, 0, text, copied);
  });
  return out as T;
}

function setAt(node: unknown, path: JsonPath, at: number, value: string, copied: Set<object>): unknown {
  if (at === path.length) return value;
  const key = path[at] as string | number;
  if (Array.isArray(node)) {
    const copy = copied.has(node) ? node : [...node];
    copied.add(copy);
    copy[key as number] = setAt(node[key as number], path, at + 1, value, copied);
    return copy;
  }
  if (isRecord(node)) {
    const copy = copied.has(node) ? node : { ...node };
    copied.add(copy);
    copy[key as string] = setAt(node[key as string], path, at + 1, value, copied);
    return copy;
  }
  return node;
}

/**
 * The filtered ending of a whole answer: the content withheld, and the ending each protocol
 * gives a filtered answer (OpenAI `finish_reason: "content_filter"`, Anthropic
 * `stop_reason: "refusal"`, the Responses API `status: "incomplete"` with
 * `incomplete_details.reason: "content_filter"`).
 */
export function filteredAnswer(kind: TextKind, body: Json): Json {
  switch (kind) {
    case 'chat-openai':
      return {
        ...body,
        choices: (Array.isArray(body.choices) ? body.choices : [{ index: 0 }]).map((c) => {
          const choice = isRecord(c) ? c : {};
          return { ...choice, message: { role: 'assistant', content: null, refusal: null }, finish_reason: 'content_filter' };
        }),
      };
    case 'completions':
      return {
        ...body,
        choices: (Array.isArray(body.choices) ? body.choices : [{ index: 0 }]).map((c) => ({
          ...(isRecord(c) ? c : {}),
          text: '',
          finish_reason: 'content_filter',
        })),
      };
    case 'chat-anthropic':
      return { ...body, content: [], stop_reason: 'refusal', stop_sequence: null };
    case 'responses': {
      const out: Json = { ...body, status: 'incomplete', incomplete_details: { reason: 'content_filter' }, output: [] };
      if ('output_text' in out) out.output_text = '';
      return out;
    }
    case 'embeddings':
      return body;
  }
}
