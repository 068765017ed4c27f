import { isDeepStrictEqual } from 'node:util';
import type { McpToolDefinition, ToolCatalog } from './types.js';

// A server's tool catalog from its `tools/list` pages. The walk is bounded (a server that
// keeps answering with a next cursor, or the same one again, cannot hold the gateway), and
// a tool the gateway could not route or describe (no name, no input schema) is left out
// rather than failing the listing: the rest of the server's tools stay usable.

/** The most `tools/list` pages read for one listing. */
export const MAX_TOOL_PAGES = 100;

export interface CatalogSource {
  readonly provider: string;
  readonly protocolVersion: string;
  readonly serverInfo: { readonly name: string; readonly version: string } | null;
}

/** Reads one page: its `result`, or throws with a message that holds no secret. */
export type PageReader = (cursor: string | null) => Promise<Record<string, unknown>>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A server's listing: its tools by name, in its order, and the names it listed more than once. */
export interface ToolListing {
  readonly tools: Map<string, McpToolDefinition>;
  /** Names listed again after their first definition (kept): in first-repeat order, each once. */
  readonly duplicates: string[];
}

/** Walks every page: the tools by name, in the server's order; a repeated name keeps its first definition. */
export async function listTools(readPage: PageReader): Promise<ToolListing> {
  const tools = new Map<string, McpToolDefinition>();
  const duplicates: string[] = [];
  const seen = new Set<string>();
  let cursor: string | null = null;
  for (let page = 0; ; page += 1) {
    if (page >= MAX_TOOL_PAGES) throw new Error(`tools/list: more than ${MAX_TOOL_PAGES} pages`);
    const result = await readPage(cursor);
    if (!Array.isArray(result.tools)) throw new Error('tools/list: the result has no tools array');
    for (const tool of result.tools) {
      if (!isObject(tool) || typeof tool.name !== 'string' || !isObject(tool.inputSchema)) continue;
      if (!tools.has(tool.name)) tools.set(tool.name, tool as McpToolDefinition);
      else if (!duplicates.includes(tool.name)) duplicates.push(tool.name);
    }
    const next = result.nextCursor;
    if (typeof next !== 'string') return { tools, duplicates };
    if (seen.has(next)) throw new Error('tools/list: a cursor came back twice');
    seen.add(next);
    cursor = next;
  }
}

export function catalogOf(source: CatalogSource, listing: ToolListing, atMs: number): ToolCatalog {
  return {
    provider: source.provider,
    tools: listing.tools,
    duplicates: listing.duplicates,
    refreshedAt: new Date(atMs).toISOString(),
    protocolVersion: source.protocolVersion,
    serverInfo: source.serverInfo,
  };
}

/** Whether two catalogs list the same tools, in the same order, with the same definitions (and the same repeated names). */
export function sameTools(a: ToolCatalog | null, b: ToolCatalog): boolean {
  if (a === null) return false;
  return isDeepStrictEqual([...a.tools.values()], [...b.tools.values()]) && isDeepStrictEqual(a.duplicates, b.duplicates);
}

/** The serverInfo of an initialize result, when it has the spec's shape. */
export function serverInfoOf(result: Record<string, unknown>): CatalogSource['serverInfo'] {
  const info = result.serverInfo;
  if (!isObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string') return null;
  return { name: info.name, version: info.version };
}
