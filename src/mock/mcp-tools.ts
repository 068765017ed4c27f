import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

/** The tools the mock MCP server can offer, by their unprefixed names. */
export const MCP_TOOL_NAMES = ['echo', 'slow', 'fail', 'weather', 'progress', 'write', 'chatter'] as const;

export type McpToolName = (typeof MCP_TOOL_NAMES)[number];

/** The tools served when none are chosen: every one but `chatter`, which only a test of a call that never ends asks for. */
export const DEFAULT_MCP_TOOLS: readonly McpToolName[] = MCP_TOOL_NAMES.filter((n) => n !== 'chatter');

/** A plain text tool added at run time (`POST /__mock/mcp/tools`). */
export interface McpAddedTool {
  name: string;
  description?: string;
  /** What a call answers; default `[<mock name>] <tool name>`. */
  text?: string;
}

/** What a tool may use of the call and of the mock while it runs. */
export interface McpToolCall {
  /** The mock's name, echoed in answers so a test sees which upstream served it. */
  readonly mockName: string;
  /** Aborted when the client cancels the request or the mock shuts down. */
  readonly signal: AbortSignal;
  /** Sends `notifications/progress` when the request carried a progress token; a no-op otherwise. */
  progress(progress: number, total: number, message: string): Promise<void>;
  /** Sends `notifications/message` (a log message, level info) on the call's stream. */
  log(data: string): Promise<void>;
  /** Counts one write of `key` and returns its count so far. */
  write(key: string): number;
}

type Run = (args: Record<string, unknown>, call: McpToolCall) => Promise<CallToolResult>;

interface McpToolEntry {
  /** The tool as `tools/list` shows it, under its served (possibly prefixed) name. */
  readonly tool: Tool;
  /** The counter key in stats: the served name. */
  readonly run: Run;
}

// Bounds a `slow` call so a mistaken argument cannot hold a connection (and close()) for long.
const maxSlowMs = 60_000;
const maxProgressDelayMs = 10_000;
const maxChatterMs = 60_000;

function text(value: string): CallToolResult {
  return { content: [{ type: 'text', text: value }] };
}

function invalid(message: string): McpError {
  return new McpError(ErrorCode.InvalidParams, message);
}

function stringArg(args: Record<string, unknown>, key: string): string {
  const value = args[key];
  if (typeof value !== 'string') throw invalid(`argument ${key} must be a string`);
  return value;
}

function intArg(args: Record<string, unknown>, key: string, min: number, max: number, fallback?: number): number {
  const value = args[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalid(`argument ${key} must be an integer from ${min} to ${max}`);
  }
  return value;
}

/** Resolves after `ms`, or at once when `signal` aborts, leaving no timer behind. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** A deterministic reading per city, so repeated calls (and two mocks) agree. */
function weatherOf(city: string): { city: string; temperature_c: number; conditions: string } {
  let hash = 0;
  for (const char of city) hash = (hash * 31 + (char.codePointAt(0) ?? 0)) >>> 0;
  const conditions = ['sunny', 'cloudy', 'rain', 'snow', 'fog'][hash % 5] as string;
  return { city, temperature_c: (hash % 400) / 10 - 5, conditions };
}

const object = (properties: Record<string, object>, required: string[]): Tool['inputSchema'] => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

/** Each built-in tool: its listing (the name is set when served) and what a call does. */
const catalog: Readonly<Record<McpToolName, { readonly tool: Omit<Tool, 'name'>; readonly run: Run }>> = {
  echo: {
    tool: {
      description: 'Echoes text back, prefixed with the mock server name.',
      inputSchema: object({ text: { type: 'string' } }, ['text']),
      annotations: { readOnlyHint: true },
    },
    run: async (args, call) => text(`[${call.mockName}] ${stringArg(args, 'text')}`),
  },
  slow: {
    tool: {
      description: `Waits ms milliseconds (at most ${maxSlowMs}), then answers.`,
      inputSchema: object({ ms: { type: 'integer', minimum: 0, maximum: maxSlowMs } }, ['ms']),
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    run: async (args, call) => {
      const ms = intArg(args, 'ms', 0, maxSlowMs);
      await sleep(ms, call.signal);
      return text(`slept ${ms}`);
    },
  },
  fail: {
    tool: {
      description: 'Fails: mode error (default) answers a tool error result, mode throw a JSON-RPC error.',
      inputSchema: object({ mode: { type: 'string', enum: ['error', 'throw'] } }, []),
      annotations: { readOnlyHint: true },
    },
    run: async (args, call) => {
      const mode = args.mode ?? 'error';
      if (mode === 'throw') throw new McpError(ErrorCode.InternalError, `[${call.mockName}] fail: thrown as a JSON-RPC error`);
      if (mode !== 'error') throw invalid('argument mode must be error or throw');
      return { content: [{ type: 'text', text: `[${call.mockName}] fail: the tool reported an error` }], isError: true };
    },
  },
  weather: {
    tool: {
      title: 'Weather',
      description: 'A made-up, deterministic weather report for a city, as structured content.',
      inputSchema: object({ city: { type: 'string' } }, ['city']),
      outputSchema: {
        type: 'object',
        properties: { city: { type: 'string' }, temperature_c: { type: 'number' }, conditions: { type: 'string' } },
        required: ['city', 'temperature_c', 'conditions'],
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    run: async (args) => {
      const report = weatherOf(stringArg(args, 'city'));
      return { content: [{ type: 'text', text: JSON.stringify(report) }], structuredContent: report };
    },
  },
  progress: {
    tool: {
      description: 'Reports progress for each of steps steps (delay_ms apart) when given a progress token, then answers.',
      inputSchema: object(
        { steps: { type: 'integer', minimum: 1, maximum: 100 }, delay_ms: { type: 'integer', minimum: 0, maximum: maxProgressDelayMs } },
        ['steps'],
      ),
      annotations: { readOnlyHint: true },
    },
    run: async (args, call) => {
      const steps = intArg(args, 'steps', 1, 100);
      const delayMs = intArg(args, 'delay_ms', 0, maxProgressDelayMs, 0);
      for (let i = 1; i <= steps && !call.signal.aborted; i++) {
        if (i > 1) await sleep(delayMs, call.signal);
        await call.progress(i, steps, `step ${i} of ${steps}`);
      }
      return text(`done ${steps}`);
    },
  },
  chatter: {
    tool: {
      description: `Sends notifications/message every interval_ms and answers only after ${maxChatterMs} ms (or when cancelled): a call that talks but never ends.`,
      inputSchema: object({ interval_ms: { type: 'integer', minimum: 1, maximum: 1000 } }, []),
      annotations: { readOnlyHint: true },
    },
    run: async (args, call) => {
      const intervalMs = intArg(args, 'interval_ms', 1, 1000, 2);
      const started = Date.now();
      let sent = 0;
      while (!call.signal.aborted && Date.now() - started < maxChatterMs) {
        sent += 1;
        await call.log(`chatter ${sent}`).catch(() => undefined);
        await sleep(intervalMs, call.signal);
      }
      return text(`chattered ${sent}`);
    },
  },
  write: {
    tool: {
      description: 'Stores value under key: not idempotent, every call counts (see GET /__mock/mcp writes).',
      inputSchema: object({ key: { type: 'string' }, value: { type: 'string' } }, ['key', 'value']),
      annotations: { destructiveHint: true, idempotentHint: false, readOnlyHint: false },
    },
    run: async (args, call) => {
      const key = stringArg(args, 'key');
      stringArg(args, 'value');
      return text(`wrote ${key} (${call.write(key)})`);
    },
  },
};

function addedEntry(added: McpAddedTool): McpToolEntry {
  return {
    tool: {
      name: added.name,
      description: added.description ?? `A text tool added at run time.`,
      inputSchema: { type: 'object', properties: {} },
    },
    run: async (_args, call) => text(added.text ?? `[${call.mockName}] ${added.name}`),
  };
}

/**
 * The tools one mock serves: the chosen built-ins under their prefix, less those removed, plus
 * those added at run time (under the name given, unprefixed). Listed in that order.
 */
export class McpToolSet {
  readonly #builtIn: ReadonlyMap<string, McpToolEntry>;
  #added = new Map<string, McpToolEntry>();
  #removed = new Set<string>();

  constructor(names: readonly McpToolName[], prefix: string) {
    this.#builtIn = new Map(
      names.map((name) => {
        const { tool, run } = catalog[name];
        const served = `${prefix}${name}`;
        return [served, { tool: { name: served, ...tool }, run }] as const;
      }),
    );
  }

  list(): Tool[] {
    const tools: Tool[] = [];
    for (const [name, entry] of this.#builtIn) if (!this.#removed.has(name)) tools.push(entry.tool);
    for (const entry of this.#added.values()) tools.push(entry.tool);
    return tools;
  }

  find(name: string): McpToolEntry | undefined {
    return this.#added.get(name) ?? (this.#removed.has(name) ? undefined : this.#builtIn.get(name));
  }

  add(tool: McpAddedTool): void {
    this.#removed.delete(tool.name);
    this.#added.set(tool.name, addedEntry(tool));
  }

  remove(name: string): void {
    this.#added.delete(name);
    this.#removed.add(name);
  }

  reset(): void {
    this.#added = new Map();
    this.#removed = new Set();
  }
}

/** Checks a `POST /__mock/mcp/tools` body; returns it typed, or a message naming the bad field. */
export function parseToolChange(input: unknown): { add: McpAddedTool[]; remove: string[] } | string {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return 'body must be a JSON object';
  const { add = [], remove = [], ...rest } = input as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) return `${unknown} is not a known field (use add, remove)`;
  if (!Array.isArray(add)) return 'add must be an array of {name, description?, text?}';
  if (!Array.isArray(remove) || !remove.every((n) => typeof n === 'string')) return 'remove must be an array of tool names';
  const tools: McpAddedTool[] = [];
  for (const [i, entry] of add.entries()) {
    if (typeof entry !== 'object' || entry === null) return `add[${i}] must be an object`;
    const { name, description, text: answer } = entry as Record<string, unknown>;
    if (typeof name !== 'string' || name === '') return `add[${i}].name must be a non-empty string`;
    if (description !== undefined && typeof description !== 'string') return `add[${i}].description must be a string`;
    if (answer !== undefined && typeof answer !== 'string') return `add[${i}].text must be a string`;
    tools.push({ name, ...(description === undefined ? {} : { description }), ...(answer === undefined ? {} : { text: answer }) });
  }
  return { add: tools, remove: remove as string[] };
}
