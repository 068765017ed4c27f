import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { request as httpRequest } from 'undici';
import type { McpConfig } from '../../config/index.js';
import { SwitchyardError } from '../../errors.js';
import { ResponsesEventLog, type ResponsesShape, responseObject, responsesEcho, SseParser } from '../../providers/index.js';
import { type Item, newId } from '../../responses/index.js';
import type { Exchange, ModelRequest } from '../exchange.js';
import { sendJson } from '../respond.js';
import type { Services } from '../services.js';
import { upstreamItems } from './items.js';
import { saveTurn } from './save.js';
import type { ResponsesTurn } from './turn.js';

// MCP tools run by the gateway itself, for a Responses request whose `{type: "mcp"}` tool
// names the gateway's own catalog (`mcp.responses_label`). The gateway lists the caller's
// tools, offers them to the model as functions, runs each call the model makes, feeds the
// result back, and loops until the model answers without one (or `mcp.responses_max_calls`).
//
// Every step is a request to this gateway's own listener, on the connection's local
// address, as the caller (its own credential): a model round is a `POST /v1/responses`
// (store: false, the tools as functions), the listing and each call are MCP on `/mcp`. So a
// round and a call get exactly what any request of the caller gets, with no second path to
// keep equal: routing, failover, governance (each round and call billed and limited as the
// caller's), audit, the ledger, traces, and the key's allowed tools (a tool the key may not
// use is never listed, so never offered). The turn itself reaches no provider and is
// not billed: its rounds are.

/** The Responses API's tool type for an MCP server's tools (a tool type, not a provider type). */
const MCP_TOOL_TYPE = 'mcp';

/** The Responses API's `{type: "mcp"}` tool when it names this gateway: what it lets the model use and what needs approval. */
export interface GatewayTools {
  /** Its index in `tools`, and its label. */
  readonly index: number;
  readonly label: string;
  /** `allowed_tools`: the exposed names the model may be offered; null = every tool the caller may use. */
  readonly allowed: ReadonlySet<string> | null;
  /** Whether a call of this tool waits for the client's approval (`require_approval`, default always). */
  needsApproval(name: string): boolean;
}

/**
 * The request's `{type: "mcp"}` tool that names the gateway's own catalog, or null. A
 * `server_url` that is neither absent nor one of `mcp.responses_self_urls` is another
 * server: left in `tools` for a provider that runs MCP itself.
 */
export function gatewayToolsOf(parsed: Readonly<Record<string, unknown>>, mcp: McpConfig): GatewayTools | null {
  if (!Array.isArray(parsed.tools)) return null;
  for (const [index, tool] of parsed.tools.entries()) {
    if (!isRecord(tool) || tool.type !== MCP_TOOL_TYPE || tool.server_label !== mcp.responses_label) continue;
    const url = tool.server_url;
    if (url !== undefined && url !== null && !mcp.responses_self_urls.includes(url as string)) continue;
    return {
      index,
      label: mcp.responses_label,
      allowed: allowedOf(tool.allowed_tools, `tools[${index}].allowed_tools`),
      needsApproval: approvalOf(tool.require_approval, `tools[${index}].require_approval`),
    };
  }
  return null;
}

function allowedOf(value: unknown, path: string): ReadonlySet<string> | null {
  if (value === undefined || value === null) return null;
  const names = isRecord(value) ? value.tool_names : value;
  if (names === undefined && isRecord(value)) return null;
  if (!Array.isArray(names) || !names.every((n) => typeof n === 'string')) {
    throw new SwitchyardError('invalid_request', `${path} must be a list of tool names, or {tool_names: [...]}`, path);
  }
  return new Set(names as string[]);
}

function approvalOf(value: unknown, path: string): (name: string) => boolean {
  if (value === undefined || value === null || value === 'always') return () => true;
  if (value === 'never') return () => false;
  if (!isRecord(value)) throw new SwitchyardError('invalid_request', `${path} must be "always", "never" or {always, never}`, path);
  const listed = (v: unknown): ReadonlySet<string> => new Set(isRecord(v) && Array.isArray(v.tool_names) ? (v.tool_names as string[]) : []);
  const never = listed(value.never);
  const always = listed(value.always);
  return (name) => always.has(name) || !never.has(name);
}

/** A tool as the model is offered it: a function name it may use, for the exposed name it stands for. */
interface OfferedTool {
  readonly exposed: string;
  readonly function: string;
  readonly description: string;
  readonly parameters: Record<string, unknown>;
}

/** Where the turn's events go: the client's stream, or nowhere when it asked for one whole body. */
interface Sink {
  item(item: Record<string, unknown>, outputIndex: number): void;
}

/**
 * Serves a turn that uses the gateway's tools: answers the client (a Response body or its
 * event stream) and stores the turn, then calls `done`.
 */
export function serveMcpTurn(svc: Services, x: Exchange, request: ModelRequest, tools: GatewayTools, done: (err: unknown) => void): void {
  new McpTurn(svc, x, request, tools).run().then(
    () => done(null),
    (err) => done(err),
  );
}

class McpTurn {
  readonly #svc: Services;
  readonly #x: Exchange;
  readonly #request: ModelRequest;
  readonly #turn: ResponsesTurn;
  readonly #tools: GatewayTools;
  readonly #base: string;
  readonly #headers: Record<string, string>;
  readonly #output: Record<string, unknown>[] = [];
  /** The rounds' usage, summed (each round is billed as its own request). */
  #usage = { input: 0, output: 0, cached: 0 };
  #model = '';
  #step = 0;
  #log: ResponsesEventLog | null = null;
  #client: Client | null = null;

  constructor(svc: Services, x: Exchange, request: ModelRequest, tools: GatewayTools) {
    this.#svc = svc;
    this.#x = x;
    this.#request = request;
    this.#turn = request.turn as ResponsesTurn;
    this.#tools = tools;
    const socket = x.req.socket;
    const host = socket.localAddress ?? '127.0.0.1';
    this.#base = `http://${host.includes(':') ? `[${host}]` : host}:${socket.localPort}`;
    // As the caller: its own credential, whichever header carried it.
    this.#headers = { 'content-type': 'application/json' };
    for (const name of ['authorization', 'x-api-key']) {
      const value = x.req.headers[name];
      if (typeof value === 'string') this.#headers[name] = value;
    }
  }

  async run(): Promise<void> {
    const shape = {
      id: this.#turn.responseId,
      createdAt: this.#turn.createdAt,
      // The model that answered, as the rounds name it.
      model: '',
      echo: responsesEcho(this.#request.parsed),
      newItemId: newId,
    };
    const sink = this.#request.stream ? this.#startStream(shape) : null;
    try {
      const offered = await this.#listTools(sink);
      let calls = 0;
      // A turn that resumes after an approval runs the approved calls first.
      calls += await this.#runApproved(offered, sink);
      let incomplete = false;
      for (;;) {
        // A client that left is not served further: no more rounds or calls run on its account.
        if (this.#x.res.destroyed) return;
        // The round's own items (text, reasoning, the client's function calls) are in the
        // output already, streamed as they came; what is left is the calls of the gateway's tools.
        const asks = await this.#round(offered);
        if (asks.length === 0) break;
        if (calls + asks.length > this.#svc.holder.current().config.mcp.responses_max_calls) {
          incomplete = true;
          break;
        }
        let waiting = false;
        for (const ask of asks) {
          const tool = offered.find((t) => t.function === ask.name) as OfferedTool;
          const args = typeof ask.arguments === 'string' ? ask.arguments : '{}';
          if (this.#tools.needsApproval(tool.exposed)) {
            waiting = true;
            this.#emit(sink, {
              type: 'mcp_approval_request',
              id: newId('mcpr'),
              server_label: this.#tools.label,
              name: tool.exposed,
              arguments: args,
            });
            continue;
          }
          this.#emit(sink, await this.#call(tool, args, null));
          calls += 1;
        }
        if (waiting) break;
      }
      // Out of calls: what the rounds gave so far, incomplete (the API names no reason for it).
      const response = responseObject(shape, this.#output, {
        status: incomplete ? 'incomplete' : 'completed',
        completedAt: Math.floor(Date.now() / 1000),
        model: this.#model,
        usage: { inputTokens: this.#usage.input, outputTokens: this.#usage.output, cacheReadTokens: this.#usage.cached },
      });
      this.#turn.answer.set({ candidate: null, response: () => response });
      if (this.#log !== null) this.#end(this.#log.finished(response));
      else sendJson(this.#x.res, 200, response);
      saveTurn(this.#svc, this.#request, { outcome: 'complete', usage: null, firstByteAt: null, events: 0 });
    } catch (err) {
      if (this.#log === null) {
        // A round's own error answer is the client's, as the round was told it.
        if (err instanceof RoundFailed) return sendJson(this.#x.res, err.status, err.body);
        throw err;
      }
      // The stream has started: the error is its last event.
      const message = err instanceof Error ? err.message : String(err);
      this.#end(this.#log.error(err instanceof SwitchyardError ? err.code : 'upstream_error', message));
    } finally {
      await this.#client?.close().catch(() => undefined);
    }
  }

  #startStream(shape: ResponsesShape): Sink {
    const res = this.#x.res;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const log = new ResponsesEventLog(shape);
    this.#log = log;
    res.write(log.started());
    return { item: (item, outputIndex) => res.write(log.item(item, outputIndex)) };
  }

  #end(text: string): void {
    this.#x.res.end(text);
  }

  #emit(sink: Sink | null, item: Record<string, unknown>): void {
    this.#output.push(item);
    sink?.item(item, this.#output.length - 1);
  }

  /** The caller's tools, as `/mcp` lists them to the caller, less what `allowed_tools` leaves out. */
  async #listTools(sink: Sink | null): Promise<OfferedTool[]> {
    const client = new Client({ name: 'switchyard-responses', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(`${this.#base}/mcp`), {
      requestInit: { headers: { ...this.#headers, 'x-request-id': this.#nextRequestId('t') } },
    });
    const listed: Array<{ name: string; description?: string; inputSchema: Record<string, unknown> }> = [];
    try {
      await client.connect(transport);
      this.#client = client;
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor });
        listed.push(...(page.tools as typeof listed));
        cursor = page.nextCursor;
      } while (cursor !== undefined && listed.length < 10_000);
    } catch (err) {
      // The listing failed (the caller may not use /mcp, or it is refused): the output says
      // so, as the API's listing error, and the model is offered none of these tools.
      const error = `the gateway's tools could not be listed: ${err instanceof Error ? err.message : String(err)}`;
      this.#emit(sink, { type: 'mcp_list_tools', id: newId('mcpl'), server_label: this.#tools.label, tools: [], error });
      return [];
    }
    const allowed = this.#tools.allowed;
    const kept = listed.filter((t) => allowed === null || allowed.has(t.name));
    const offered = functionNames(kept);
    // Listed once per conversation: a turn whose history already holds the listing does not repeat it.
    const listedBefore = this.#turn.history.some((i) => i.type === 'mcp_list_tools' && i.server_label === this.#tools.label);
    if (!listedBefore) {
      this.#emit(sink, {
        type: 'mcp_list_tools',
        id: newId('mcpl'),
        server_label: this.#tools.label,
        tools: kept.map((t) => ({ name: t.name, description: t.description ?? null, input_schema: t.inputSchema, annotations: null })),
      });
    }
    return offered;
  }

  /** The calls the input approves (`mcp_approval_response`), run; a denied one is told to the model as such. */
  async #runApproved(offered: readonly OfferedTool[], sink: Sink | null): Promise<number> {
    let calls = 0;
    for (const [i, item] of this.#turn.input.entries()) {
      if (item.type !== 'mcp_approval_response') continue;
      const asked = this.#turn.history.find((h) => h.type === 'mcp_approval_request' && h.id === item.approval_request_id);
      if (asked === undefined) {
        throw new SwitchyardError(
          'invalid_request',
          `no mcp_approval_request "${String(item.approval_request_id)}" in this conversation`,
          `input[${i}].approval_request_id`,
        );
      }
      const tool = offered.find((t) => t.exposed === asked.name);
      const args = typeof asked.arguments === 'string' ? asked.arguments : '{}';
      if (item.approve !== true || tool === undefined) {
        const why = tool === undefined ? 'the tool is no longer available to this caller' : 'the call was not approved';
        this.#emit(sink, mcpCall(this.#tools.label, String(asked.name), args, null, protocolError(NOT_RUN, why), asked.id));
        continue;
      }
      this.#emit(sink, await this.#call(tool, args, asked.id));
      calls += 1;
    }
    return calls;
  }

  /** One tools/call through the gateway's /mcp, as the caller: its answer, or its error, as an mcp_call item. */
  async #call(tool: OfferedTool, args: string, approval: string | null): Promise<Record<string, unknown>> {
    let input: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(args === '' ? '{}' : args);
      input = isRecord(parsed) ? parsed : {};
    } catch {
      return mcpCall(
        this.#tools.label,
        tool.exposed,
        args,
        null,
        protocolError(INVALID_PARAMS, 'the model gave arguments that are not JSON'),
        approval,
      );
    }
    try {
      const result = await (this.#client as Client).callTool({ name: tool.exposed, arguments: input });
      if (result.isError === true) {
        return mcpCall(
          this.#tools.label,
          tool.exposed,
          args,
          null,
          { type: 'mcp_tool_execution_error', content: result.content },
          approval,
        );
      }
      return mcpCall(this.#tools.label, tool.exposed, args, resultText(result.content), null, approval);
    } catch (err) {
      return mcpCall(this.#tools.label, tool.exposed, args, null, callError(err), approval);
    }
  }

  /**
   * One model round: the conversation so far, the tools as functions. Its items go to the
   * output (a streamed turn's as the round streams them, under this turn's numbering), but
   * for the calls of the gateway's tools, which it returns to be run.
   */
  async #round(offered: readonly OfferedTool[]): Promise<Record<string, unknown>[]> {
    const parsed = this.#request.parsed;
    const exposedToFunction = new Map(offered.map((t) => [t.exposed, t.function]));
    const items = upstreamItems(
      [...this.#turn.history, ...this.#turn.input, ...(this.#output as Item[])],
      (name) => exposedToFunction.get(name) ?? name,
    );
    const tools = Array.isArray(parsed.tools) ? parsed.tools.filter((_t, i) => i !== this.#tools.index) : [];
    const body: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(parsed)) if (!ROUND_LEFT_OUT.has(k)) body[k] = v;
    Object.assign(body, {
      model: this.#request.model,
      input: items,
      tools: [
        ...tools,
        ...offered.map((t) => ({
          type: 'function',
          name: t.function,
          description: t.description,
          parameters: t.parameters,
          strict: false,
        })),
      ],
      store: false,
      stream: this.#log !== null,
    });
    const answer = await httpRequest(`${this.#base}/v1/responses`, {
      method: 'POST',
      headers: { ...this.#headers, 'x-request-id': this.#nextRequestId('m') },
      body: JSON.stringify(body),
    });
    const isCall = (item: unknown): boolean =>
      isRecord(item) && item.type === 'function_call' && offered.some((t) => t.function === item.name);
    if (this.#log !== null && answer.statusCode < 300) return this.#streamedRound(answer.body, isCall);
    const text = await answer.body.text();
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new SwitchyardError('upstream_error', `a model round answered ${answer.statusCode} with a body that is not JSON`);
    }
    if (answer.statusCode >= 300 || !Array.isArray(json.output)) throw new RoundFailed(answer.statusCode, json);
    this.#noteUsage(json);
    const asks: Record<string, unknown>[] = [];
    for (const item of json.output as Record<string, unknown>[]) {
      if (isCall(item)) asks.push(item);
      else this.#emit(null, item);
    }
    return asks;
  }

  /**
   * A streamed round: each of its items' events passed on as they come, renumbered and
   * placed after the output so far, but for the gateway's tool calls, which are returned.
   */
  async #streamedRound(body: AsyncIterable<Buffer>, isCall: (item: unknown) => boolean): Promise<Record<string, unknown>[]> {
    const log = this.#log as ResponsesEventLog;
    const res = this.#x.res;
    const parser = new SseParser();
    const asks: Record<string, unknown>[] = [];
    /** The round's output index -> the turn's, for the items passed on. */
    const placed = new Map<number, number>();
    let failure: string | null = null;
    let ended = false;
    const onEvent = (_event: string, data: string): void => {
      const e = jsonRecord(data);
      if (e === null || typeof e.type !== 'string') return;
      const { type, sequence_number: _n, ...fields } = e;
      const index = typeof fields.output_index === 'number' ? fields.output_index : null;
      if (type === 'response.output_item.added' && index !== null && !isCall(fields.item)) {
        placed.set(index, this.#output.length);
        this.#output.push(fields.item as Record<string, unknown>);
      } else if (type === 'response.output_item.done' && index !== null && isCall(fields.item)) {
        asks.push(fields.item as Record<string, unknown>);
      } else if (type === 'response.completed' || type === 'response.incomplete') {
        ended = true;
        this.#noteUsage(isRecord(fields.response) ? fields.response : {});
        return;
      } else if (type === 'response.failed' || type === 'error') {
        const error = isRecord(fields.error)
          ? fields.error
          : isRecord(fields.response) && isRecord(fields.response.error)
            ? fields.response.error
            : fields;
        failure = typeof error.message === 'string' ? error.message : 'a model round failed';
        return;
      }
      const at = index === null ? undefined : placed.get(index);
      if (at === undefined) return;
      if (type === 'response.output_item.done') this.#output[at] = fields.item as Record<string, unknown>;
      res.write(log.relay(type, { ...fields, output_index: at }));
    };
    for await (const chunk of body) parser.push(chunk, onEvent);
    parser.end(onEvent);
    if (failure === null && !ended) failure = "a model round's stream ended before its answer was complete";
    if (failure !== null) throw new SwitchyardError('upstream_error', failure);
    return asks;
  }

  #noteUsage(response: Record<string, unknown>): void {
    if (typeof response.model === 'string') this.#model = response.model;
    const usage = isRecord(response.usage) ? response.usage : {};
    this.#usage.input += num(usage.input_tokens);
    this.#usage.output += num(usage.output_tokens);
    this.#usage.cached += num(isRecord(usage.input_tokens_details) ? usage.input_tokens_details.cached_tokens : 0);
  }

  #nextRequestId(kind: 'm' | 't'): string {
    this.#step += 1;
    return `${this.#x.requestId.slice(0, 100)}.${kind}${this.#step}`;
  }
}

/** A model round answered with an error: the client is told what the round was told. */
export class RoundFailed extends Error {
  readonly status: number;
  readonly body: Record<string, unknown>;
  constructor(status: number, body: Record<string, unknown>) {
    const error = isRecord(body.error) ? body.error : {};
    super(typeof error.message === 'string' ? error.message : `a model round answered ${status}`);
    this.status = status;
    this.body = body;
  }
}

/** What a round is not sent of the client's body: the gateway's own state, and what it sets itself. */
const ROUND_LEFT_OUT = new Set([
  'input',
  'tools',
  'previous_response_id',
  'conversation',
  'store',
  'stream',
  'stream_options',
  'background',
  'include',
  'metadata',
]);

/** JSON-RPC's code for invalid params, and the one the gateway uses for a call it did not run (not approved). */
const INVALID_PARAMS = -32602;
const NOT_RUN = -32001;

/** An mcp_call's `error`, as OpenAI's schema gives its kinds. */
type CallError = Readonly<Record<string, unknown>>;

function protocolError(code: number, message: string): CallError {
  return { type: 'mcp_protocol_error', code, message };
}

/** A failed tools/call: the gateway's HTTP answer (a refusal: not allowed, limited), or a JSON-RPC error. */
function callError(err: unknown): CallError {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown })?.code;
  if (err instanceof StreamableHTTPError && typeof code === 'number') return { type: 'http_error', code, message };
  return protocolError(typeof code === 'number' ? code : -32603, message);
}

function mcpCall(
  label: string,
  name: string,
  args: string,
  output: string | null,
  error: CallError | null,
  approval: string | null,
): Record<string, unknown> {
  const item: Record<string, unknown> = {
    type: 'mcp_call',
    id: newId('mcp'),
    server_label: label,
    name,
    arguments: args,
    output,
    error,
    status: error === null ? 'completed' : 'failed',
  };
  if (approval !== null) item.approval_request_id = approval;
  return item;
}

/**
 * Function names for the tools: the exposed name where the providers' function-name rule
 * (`^[A-Za-z0-9_-]{1,64}$`) allows it, else a name made to fit, unique in the turn.
 */
function functionNames(tools: ReadonlyArray<{ name: string; description?: string; inputSchema: Record<string, unknown> }>): OfferedTool[] {
  const used = new Set<string>();
  return tools.map((t) => {
    let fn = t.name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
    for (let n = 2; used.has(fn); n += 1) fn = `${fn.slice(0, 60)}_${n}`;
    used.add(fn);
    return { exposed: t.name, function: fn, description: t.description ?? '', parameters: t.inputSchema };
  });
}

function resultText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (isRecord(part) && part.type === 'text' && typeof part.text === 'string' ? part.text : JSON.stringify(part)))
    .join('\n');
}

/** An event's data as an object, or null when it holds something else. */
function jsonRecord(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : null;
  } catch {
    return null;
  }
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
