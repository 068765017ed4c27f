import type { A2aMock } from './a2a.js';
import type { TextTurn } from './conversation.js';
import { FaultQueue } from './fault-queue.js';
import { GcpTokens } from './gcp-tokens.js';
import type { McpMock } from './mcp.js';
import { RequestStats } from './request-stats.js';

/** The streamed reply for one chunk count: JSON-encoded deltas plus their token estimate. */
export interface StreamPieces {
  readonly deltas: readonly string[];
  readonly completionTokens: number;
}

/** A Responses API response the mock keeps, and the conversation's tokens up to and including it. */
export interface StoredResponse {
  readonly response: Record<string, unknown>;
  readonly contextTokens: number;
}

/** Everything one mock provider shares across its requests; built once at start. */
export interface MockContext {
  readonly name: string;
  readonly latencyMs: number;
  readonly streamChunkDelayMs: number;
  readonly streamChunks: number;
  /** The one key the Gemini endpoints accept (with protocol mcp: the bearer /mcp wants); null = any. */
  readonly apiKey: string | null;
  /** The one cloud API served, when the mock serves one alone; null = OpenAI, Anthropic and Gemini together. */
  readonly protocol: 'bedrock' | 'vertex' | 'gemini' | 'mcp' | 'a2a' | null;
  /** The MCP server at /mcp, with its sessions and stats; null unless serving MCP. */
  readonly mcp: McpMock | null;
  /** The A2A agents at /<agent>, with their stats; null unless serving A2A. */
  readonly a2a: A2aMock | null;
  /** The one key pair whose SigV4 signatures the Bedrock endpoints accept; null unless serving Bedrock. */
  readonly awsCredentials: { readonly accessKeyId: string; readonly secretAccessKey: string } | null;
  readonly stats: RequestStats;
  readonly faults: FaultQueue;
  /** The OAuth tokens the Vertex AI paths accept, and the faults of the routes that issue them. */
  readonly gcpTokens: GcpTokens;
  /** Prompt prefixes an Anthropic request marked with cache_control: seen once = cached. */
  readonly promptCache: Set<string>;
  /** Responses API responses by id, oldest first (bounded by responses.ts). */
  readonly responses: Map<string, StoredResponse>;
  /** `Hello from <name>.`, the non-streaming content. */
  readonly reply: string;
  /** `reply` as a turn, built once. */
  readonly greeting: TextTurn;
  /** Token estimate of `reply`, reported as completion_tokens. */
  readonly completionTokens: number;
  readonly modelsBody: string;
  piecesFor(chunks: number): StreamPieces;
}

export const MOCK_MODELS: readonly string[] = ['gpt-4o-mini', 'gpt-4o', 'llama-3-8b'];

/** Fixed so that model listings are identical from run to run. */
const modelsCreated = 1_715_367_049;

// Chunk counts come from a request header, so the cache is bounded rather than keyed freely.
const piecesCacheLimit = 32;

export function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

/**
 * Splits the reply into `chunks` deltas of near-equal length. Up to the reply's length the
 * deltas concatenate to exactly the non-streaming content; beyond it the reply repeats, so
 * every delta still carries some text.
 */
export function splitReply(reply: string, chunks: number): StreamPieces {
  const text = chunks <= reply.length ? reply : reply.repeat(Math.ceil(chunks / reply.length));
  const deltas = new Array<string>(chunks);
  let chars = 0;
  for (let i = 0; i < chunks; i++) {
    const piece = text.slice(Math.floor((i * text.length) / chunks), Math.floor(((i + 1) * text.length) / chunks));
    chars += piece.length;
    deltas[i] = JSON.stringify(piece);
  }
  return { deltas, completionTokens: estimateTokens(chars) };
}

/**
 * A text answer's stream pieces: the chunks `say:` marked, whatever `chunks` says; an exact
 * text (JSON, a cut or dictated text) in at most as many pieces as it has characters; the
 * greeting's cached pieces; any other text in `chunks` pieces.
 */
export function textPieces(ctx: MockContext, turn: TextTurn, chunks: number): StreamPieces {
  if (turn.pieces !== undefined) {
    return { deltas: turn.pieces.map((piece) => JSON.stringify(piece)), completionTokens: estimateTokens(turn.text.length) };
  }
  if (turn.json === true) return splitReply(turn.text, Math.min(chunks, turn.text.length));
  return turn.text === ctx.reply ? ctx.piecesFor(chunks) : splitReply(turn.text, chunks);
}

export interface ContextOptions {
  name: string;
  latencyMs: number;
  streamChunkDelayMs: number;
  streamChunks: number;
  apiKey: string | null;
  protocol: 'bedrock' | 'vertex' | 'gemini' | 'mcp' | 'a2a' | null;
  mcp: McpMock | null;
  a2a: A2aMock | null;
  /** Seconds a Vertex AI access token lives. */
  tokenTtlS: number;
  /** The service account's public key; null = any well-formed JWT is taken. */
  gcpPublicKeyPem: string | null;
  awsCredentials: { readonly accessKeyId: string; readonly secretAccessKey: string } | null;
}

export function createContext(opts: ContextOptions): MockContext {
  const reply = `Hello from ${opts.name}.`;
  const cache = new Map<number, StreamPieces>();
  const modelsBody = JSON.stringify({
    object: 'list',
    data: MOCK_MODELS.map((id) => ({ id, object: 'model', created: modelsCreated, owned_by: opts.name })),
  });
  return {
    ...opts,
    stats: new RequestStats(opts.name),
    faults: new FaultQueue(),
    gcpTokens: new GcpTokens({ ttlS: opts.tokenTtlS, publicKeyPem: opts.gcpPublicKeyPem }),
    promptCache: new Set(),
    responses: new Map(),
    reply,
    greeting: { kind: 'text', text: reply },
    completionTokens: estimateTokens(reply.length),
    modelsBody,
    piecesFor(chunks) {
      const hit = cache.get(chunks);
      if (hit !== undefined) return hit;
      const pieces = splitReply(reply, chunks);
      if (cache.size < piecesCacheLimit) cache.set(chunks, pieces);
      return pieces;
    },
  };
}
