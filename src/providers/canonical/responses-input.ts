import type { CanonicalMessage, ContentPart, FilePart, ImagePart, TextPart } from './types.js';
import { isRecord, parseToolArguments, refuse } from './types.js';
import { onlyKeys, present, text } from './wire-fields.js';

// The input items of an OpenAI Responses API request, as canonical turns. The caller hands
// over the whole conversation (stored history, then this turn's input, item references
// resolved), so every item is read here alike. Turns of one role in a row are merged into
// one, as the providers that want turns to alternate need (and OpenAI's chat protocol takes).

/** Fields dropped while reading, named as the policy names them. */
export type Dropped = Set<string>;

const DATA_URL = /^data:([^;,]+);base64,/;

/** Items the gateway answers for itself (its MCP listings and approvals): not part of what the model reads. */
const GATEWAY_ITEMS = new Set(['mcp_list_tools', 'mcp_approval_request', 'mcp_approval_response']);

type UserPart = TextPart | ImagePart | FilePart;

function sourceOf(url: string): ImagePart['source'] {
  const data = DATA_URL.exec(url);
  return data === null ? { kind: 'url', url } : { kind: 'base64', mediaType: data[1] as string, data: url.slice(data[0].length) };
}

function inputImage(part: Record<string, unknown>, at: string, dropped: Dropped): ImagePart {
  onlyKeys(part, at, ['type', 'image_url', 'file_id', 'detail']);
  if (present(part.file_id)) refuse('unsupported', `${at}.file_id`, 'an image by OpenAI file id cannot be sent to another provider');
  if (present(part.detail) && part.detail !== 'auto') dropped.add('input.content.detail');
  return { type: 'image', source: sourceOf(text(part.image_url, `${at}.image_url`)) };
}

function inputFile(part: Record<string, unknown>, at: string): FilePart {
  onlyKeys(part, at, ['type', 'file_data', 'file_url', 'file_id', 'filename']);
  if (present(part.file_id)) refuse('unsupported', `${at}.file_id`, 'a file by OpenAI file id cannot be sent to another provider');
  let source: FilePart['source'];
  if (present(part.file_data)) {
    source = sourceOf(text(part.file_data, `${at}.file_data`));
    if (source.kind === 'url') refuse('invalid', `${at}.file_data`, `${at}.file_data must be a base64 data: URL`);
  } else if (present(part.file_url)) source = { kind: 'url', url: text(part.file_url, `${at}.file_url`) };
  else return refuse('invalid', at, `${at} needs file_data, file_url or file_id`);
  return present(part.filename) ? { type: 'file', source, filename: text(part.filename, `${at}.filename`) } : { type: 'file', source };
}

/** A message's content (or a tool output's): a string, or parts of the kinds `allowed`. */
function parts(content: unknown, path: string, allowed: 'text' | 'user', dropped: Dropped): UserPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return refuse('invalid', path, `${path} must be a string or an array of content parts`);
  return content.map((part, j): UserPart => {
    const at = `${path}[${j}]`;
    if (!isRecord(part)) return refuse('invalid', at, `${at} must be an object`);
    switch (part.type) {
      case 'input_text':
      case 'output_text':
        // An earlier answer's annotations and log probabilities are the client's to keep, not the model's to read.
        onlyKeys(part, at, ['type', 'text', 'annotations', 'logprobs']);
        return { type: 'text', text: text(part.text, `${at}.text`) };
      case 'refusal':
        onlyKeys(part, at, ['type', 'refusal']);
        return { type: 'text', text: text(part.refusal, `${at}.refusal`) };
      case 'input_image':
        if (allowed === 'user') return inputImage(part, at, dropped);
        break;
      case 'input_file':
        if (allowed === 'user') return inputFile(part, at);
        break;
    }
    return refuse('unsupported', `${at}.type`, `content part type ${JSON.stringify(part.type)} is not supported here`);
  });
}

/** What the items read into: the system prompt pieces from system/developer messages, and the turns. */
export interface ReadItems {
  readonly system: TextPart[];
  readonly messages: CanonicalMessage[];
}

class Turns {
  readonly system: TextPart[] = [];
  readonly messages: { role: 'user' | 'assistant'; content: ContentPart[] }[] = [];

  add(role: 'user' | 'assistant', content: readonly ContentPart[]): void {
    const last = this.messages[this.messages.length - 1];
    if (last !== undefined && last.role === role) last.content.push(...content);
    else this.messages.push({ role, content: [...content] });
  }
}

function message(item: Record<string, unknown>, path: string, turns: Turns, dropped: Dropped): void {
  onlyKeys(item, path, ['type', 'id', 'role', 'content', 'status', 'phase']);
  const role = item.role;
  if (role === 'system' || role === 'developer') {
    const read = parts(item.content, `${path}.content`, 'text', dropped) as TextPart[];
    // One system prompt, before the conversation: a later one has no place in Anthropic's or Gemini's request.
    if (turns.messages.length > 0)
      refuse('unsupported', `${path}.role`, 'a system message after the conversation has started cannot be translated');
    turns.system.push(...read);
  } else if (role === 'user') turns.add('user', parts(item.content, `${path}.content`, 'user', dropped));
  else if (role === 'assistant') {
    // Providers refuse empty text blocks (an assistant turn that only called tools).
    const read = parts(item.content, `${path}.content`, 'text', dropped).filter((p) => p.type !== 'text' || p.text !== '');
    turns.add('assistant', read);
  } else refuse('invalid', `${path}.role`, `message role ${JSON.stringify(role)} is not one of user, assistant, system, developer`);
}

function toolOutput(output: unknown, path: string, dropped: Dropped): (TextPart | ImagePart)[] {
  return parts(output, path, 'user', dropped).map((p, k) =>
    p.type === 'file' ? refuse('unsupported', `${path}[${k}].type`, 'a tool result cannot carry a file in the canonical form') : p,
  );
}

function item(raw: unknown, i: number, turns: Turns, dropped: Dropped): void {
  const path = `input[${i}]`;
  if (!isRecord(raw)) return refuse('invalid', path, `${path} must be an object`);
  const type = raw.type ?? 'message';
  switch (type) {
    case 'message':
      return message(raw, path, turns, dropped);
    case 'function_call': {
      onlyKeys(raw, path, ['type', 'id', 'call_id', 'name', 'arguments', 'status', 'namespace']);
      const input = parseToolArguments(text(raw.arguments, `${path}.arguments`), `${path}.arguments`);
      return turns.add('assistant', [
        { type: 'tool_call', id: text(raw.call_id, `${path}.call_id`), name: text(raw.name, `${path}.name`), input },
      ]);
    }
    case 'function_call_output': {
      onlyKeys(raw, path, ['type', 'id', 'call_id', 'output', 'status']);
      const content = toolOutput(raw.output, `${path}.output`, dropped);
      return turns.add('user', [{ type: 'tool_result', toolCallId: text(raw.call_id, `${path}.call_id`), content, isError: false }]);
    }
    case 'reasoning':
      // Its summary has no place in a request to another provider: Anthropic and Bedrock take
      // back only their own signed thinking, the others none. The encrypted content is OpenAI's alone.
      if (Array.isArray(raw.summary) && raw.summary.length > 0) dropped.add('input.reasoning');
      return;
    case 'mcp_call':
      return mcpCall(raw, path, turns);
    default:
      if (typeof type === 'string' && GATEWAY_ITEMS.has(type)) return;
      return refuse('unsupported', `${path}.type`, `input item type ${JSON.stringify(type)} cannot be translated to the target protocol`);
  }
}

/** A call the gateway made to one of its MCP tools in an earlier turn: a tool call and its result, for the model to read. */
function mcpCall(raw: Record<string, unknown>, path: string, turns: Turns): void {
  const id = text(raw.id, `${path}.id`);
  const input = parseToolArguments(text(raw.arguments, `${path}.arguments`), `${path}.arguments`);
  turns.add('assistant', [{ type: 'tool_call', id, name: text(raw.name, `${path}.name`), input }]);
  const isError = present(raw.error);
  const answer = isError ? raw.error : raw.output;
  const content: TextPart[] = [{ type: 'text', text: typeof answer === 'string' ? answer : present(answer) ? JSON.stringify(answer) : '' }];
  turns.add('user', [{ type: 'tool_result', toolCallId: id, content, isError }]);
}

/** The items, in order, as the canonical system prompt and turns. */
export function readItems(items: readonly Record<string, unknown>[], dropped: Dropped): ReadItems {
  const turns = new Turns();
  items.forEach((raw, i) => {
    item(raw, i, turns, dropped);
  });
  return { system: turns.system, messages: turns.messages };
}
