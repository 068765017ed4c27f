import { signatureOfToolCallId } from './gemini-wire.js';
import { THINKING_BUDGETS } from './policy.js';
import type { CanonicalMessage, CanonicalRequest, ClientProtocol, ContentPart, Translation, WrittenRequest } from './types.js';
import { attempt, refuse } from './types.js';

export interface GeminiRequestOptions {
  /** The client's protocol: a dropped field is listed under the name the client sent it by. */
  readonly client: ClientProtocol;
}

/** Fields Gemini has no place for, by the name each client protocol gives them. */
const DROPPED_NAMES: Readonly<Record<ClientProtocol, Readonly<Record<'parallel' | 'user' | 'cache', string>>>> = {
  openai: { parallel: 'parallel_tool_calls', user: 'user', cache: 'messages.content.cache_control' },
  anthropic: { parallel: 'tool_choice.disable_parallel_tool_use', user: 'metadata', cache: 'cache_control' },
  responses: { parallel: 'parallel_tool_calls', user: 'user', cache: 'cache_control' },
};

type Part = Record<string, unknown>;

/** Tool call id -> function name, from the history: Gemini matches a function's answer to its call by name. */
function callNames(messages: readonly CanonicalMessage[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const m of messages) for (const p of m.content) if (p.type === 'tool_call') names.set(p.id, p.name);
  return names;
}

function part(p: ContentPart, path: string, names: ReadonlyMap<string, string>): Part {
  switch (p.type) {
    case 'text':
      return { text: p.text };
    case 'image':
      // Gemini reads a remote image only from Google Cloud Storage or its Files API, never a web URL.
      if (p.source.kind === 'url') return refuse('unsupported', path, 'Gemini takes images inline (base64) only, not by URL');
      return { inlineData: { mimeType: p.source.mediaType, data: p.source.data } };
    case 'file':
      // As for images: Gemini reads a remote file only from Google Cloud Storage or its Files API.
      if (p.source.kind === 'url') return refuse('unsupported', path, 'Gemini takes files inline (base64) only, not by URL');
      return { inlineData: { mimeType: p.source.mediaType, data: p.source.data } };
    case 'tool_call': {
      const call: Part = { functionCall: { name: p.name, args: p.input ?? {} } };
      const signature = signatureOfToolCallId(p.id);
      if (signature !== null) call.thoughtSignature = signature;
      return call;
    }
    case 'tool_result': {
      const name = names.get(p.toolCallId);
      if (name === undefined)
        return refuse('invalid', path, `the tool result ${JSON.stringify(p.toolCallId)} answers no tool call of an earlier turn`);
      const texts: string[] = [];
      p.content.forEach((c, i) => {
        if (c.type !== 'text') refuse('unsupported', `${path}.content[${i}]`, "Gemini takes a function's answer as text only");
        texts.push(c.text);
      });
      const text = texts.join('\n');
      return { functionResponse: { name, response: p.isError ? { error: text } : { result: text } } };
    }
  }
}

/** Adjacent turns of one role become one content: every function answer of a turn goes in the one user turn after it. */
function contents(list: readonly CanonicalMessage[], names: ReadonlyMap<string, string>): { role: string; parts: Part[] }[] {
  const out: { role: string; parts: Part[] }[] = [];
  list.forEach((m, i) => {
    const role = m.role === 'assistant' ? 'model' : 'user';
    const parts = m.content.map((p, j) => part(p, `messages[${i}].content[${j}]`, names));
    // Gemini refuses a turn without parts (an assistant turn that held only reasoning, dropped).
    if (parts.length === 0) return;
    const last = out[out.length - 1];
    if (last !== undefined && last.role === role) last.parts.push(...parts);
    else out.push({ role, parts });
  });
  return out;
}

function hasCacheMarker(req: CanonicalRequest): boolean {
  if (req.system.some((s) => s.cacheControl !== undefined)) return true;
  if (req.tools?.some((t) => t.cacheControl !== undefined) === true) return true;
  return req.messages.some((m) => m.content.some((p) => p.cacheControl !== undefined));
}

/** The canonical request as a Gemini `generateContent` body (the model is in the path), and what had to be dropped. */
export function canonicalToGeminiRequest(req: CanonicalRequest, options: GeminiRequestOptions): Translation<WrittenRequest> {
  return attempt(() => {
    const dropped: string[] = [];
    const names = DROPPED_NAMES[options.client];
    const body: Record<string, unknown> = { contents: contents(req.messages, callNames(req.messages)) };
    if (req.system.length > 0) body.systemInstruction = { parts: req.system.map((s) => ({ text: s.text })) };
    const config: Record<string, unknown> = {};
    if (req.maxOutputTokens !== undefined) config.maxOutputTokens = req.maxOutputTokens;
    // Gemini takes 0 to 2, as OpenAI does; Anthropic's 0 to 1 fits.
    if (req.temperature !== undefined) config.temperature = req.temperature;
    if (req.topP !== undefined) config.topP = req.topP;
    if (req.stopSequences !== undefined) config.stopSequences = [...req.stopSequences];
    if (req.responseFormat !== undefined) {
      config.responseMimeType = 'application/json';
      config.responseJsonSchema = req.responseFormat.schema;
    }
    if (req.reasoning !== undefined) {
      config.thinkingConfig = {
        thinkingBudget: req.reasoning.budgetTokens ?? THINKING_BUDGETS[req.reasoning.effort],
        includeThoughts: true,
      };
    }
    const carried = sampling(req, config);
    if (Object.keys(config).length > 0) body.generationConfig = config;
    if (req.tools !== undefined && req.tools.length > 0) {
      const functionDeclarations = req.tools.map((t) => {
        const fn: Record<string, unknown> = { name: t.name };
        if (t.description !== undefined) fn.description = t.description;
        // Full JSON Schema; `parameters` takes only Gemini's OpenAPI subset, which refuses keys
        // such as `additionalProperties` that strict OpenAI tools always carry.
        fn.parametersJsonSchema = t.inputSchema;
        return fn;
      });
      body.tools = [{ functionDeclarations }];
    }
    const choice = req.toolChoice;
    if (choice !== undefined) {
      const fcc: Record<string, unknown> =
        choice.type === 'tool'
          ? { mode: 'ANY', allowedFunctionNames: [choice.name] }
          : { mode: choice.type === 'any' ? 'ANY' : choice.type === 'none' ? 'NONE' : 'AUTO' };
      body.toolConfig = { functionCallingConfig: fcc };
    }
    if (req.parallelToolCalls === false && choice?.type !== 'none') dropped.push(names.parallel);
    if (req.user !== undefined) dropped.push(names.user);
    // Gemini caches repeated prompt prefixes by itself; an explicit cache is a resource made apart.
    if (hasCacheMarker(req)) dropped.push(names.cache);
    return carried.length === 0 ? { body, dropped } : { body, dropped, carried };
  });
}

/** Gemini's seed is a 32-bit integer; a seed it cannot take stays dropped. */
const isInt32 = (n: number): boolean => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31;

/** The sampling settings Gemini has, into its generationConfig: the fields carried, named as the client sent them. */
function sampling(req: CanonicalRequest, config: Record<string, unknown>): string[] {
  const s = req.sampling;
  if (s === undefined) return [];
  const carried: string[] = [];
  if (s.seed !== undefined && isInt32(s.seed)) {
    config.seed = s.seed;
    carried.push('seed');
  }
  if (s.frequencyPenalty !== undefined) {
    config.frequencyPenalty = s.frequencyPenalty;
    carried.push('frequency_penalty');
  }
  if (s.presencePenalty !== undefined) {
    config.presencePenalty = s.presencePenalty;
    carried.push('presence_penalty');
  }
  if (s.topK !== undefined && Number.isInteger(s.topK) && s.topK > 0) {
    config.topK = s.topK;
    carried.push('top_k');
  }
  return carried;
}
