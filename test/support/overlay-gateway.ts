import { renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type AdminStatus, adminStatusBody } from './admin.js';
import type { GatewayProcess } from './gateway-process.js';
import { waitUntil } from './observe.js';

// Helpers for process-level overlay tests: a gateway config in overlay mode, writers that
// publish an overlay file, and polling on what the gateway reports (reload log lines,
// /admin/status) rather than on elapsed time.

export interface OverlayBlock {
  file: string;
  expected_scope?: Record<string, string>;
  reload?: { enabled?: boolean; debounce_ms?: number; recheck_ms?: number };
  max_bytes?: number;
  credential_mount_base?: string;
}

/** A port-0 gateway config in overlay mode over the given mock base URLs; access logs off. */
export function overlayConfig(
  providers: Record<string, string>,
  overlay: OverlayBlock,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const { routing, server, ...rest } = extra as { routing?: Record<string, unknown>; server?: Record<string, unknown> };
  return {
    server: { listen: '127.0.0.1:0', admin_listen: '127.0.0.1:0', drain_timeout_ms: 5000, ...server },
    log: { level: 'info', access: false },
    providers: Object.fromEntries(
      Object.entries(providers).map(([name, baseUrl]) => [name, { type: 'openai', base_url: baseUrl, timeout_ms: 5000 }]),
    ),
    routing: { overlay: { reload: { debounce_ms: 50, recheck_ms: 3_600_000 }, ...overlay }, ...routing },
    ...rest,
  };
}

/** The revision an envelope built by support/overlay.ts carries. */
export function revisionOf(envelope: Record<string, unknown>): string {
  return (envelope.revision as { value: string }).value;
}

/** A plain atomic writer: a temp file in the same directory, then rename over the target. */
export function writeByRename(file: string, text: string): void {
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`);
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

export type ReloadLine = Record<string, unknown> & {
  trigger?: string;
  result?: string;
  reason?: string;
  generation?: number;
  revision?: string;
};

/** Every `reload` log line the gateway has written so far, in order. */
export function reloadLines(gw: GatewayProcess): ReloadLine[] {
  return gw.logs().filter((l) => l.msg === 'reload') as ReloadLine[];
}

/**
 * Waits for a reload line, among those after the first `from` lines, that matches; returns
 * it. Take `from` as `reloadLines(gw).length` before acting, so older lines never match.
 */
export async function waitForReload(
  gw: GatewayProcess,
  from: number,
  match: (l: ReloadLine) => boolean,
  what: string,
  timeoutMs = 10_000,
): Promise<ReloadLine> {
  let found: ReloadLine | undefined;
  await waitUntil(
    () => {
      found = reloadLines(gw).slice(from).find(match);
      return found !== undefined;
    },
    `a reload line: ${what}`,
    timeoutMs,
  ).catch((err: unknown) => {
    const recent = reloadLines(gw)
      .slice(from)
      .map((l) => `${l.trigger}/${l.result}/${l.reason ?? ''}/${l.generation}`);
    throw new Error(`${(err as Error).message}; reload lines since: [${recent.join(', ')}]`);
  });
  return found as ReloadLine;
}

/** Polls /admin/status until `revision` is the serving overlay revision. */
export async function waitForServing(gw: GatewayProcess, revision: string, timeoutMs = 10_000): Promise<AdminStatus> {
  let status: AdminStatus | undefined;
  await waitUntil(
    async () => {
      status = await adminStatusBody(gw);
      return status.overlay?.serving_revision === revision;
    },
    `revision ${revision.slice(0, 12)} serves`,
    timeoutMs,
  ).catch((err: unknown) => {
    const overlay = status?.overlay;
    throw new Error(
      `${(err as Error).message} (serving: ${overlay?.serving_revision.slice(0, 12) ?? 'none'}, last rejection: ${overlay?.last_rejection?.reason ?? 'none'})`,
    );
  });
  return status as AdminStatus;
}

/** The names of the x-switchyard-* headers on a response. */
export function attributionHeaders(headers: Headers): string[] {
  const names: string[] = [];
  headers.forEach((_, name) => {
    // The request id names the request, not who served it: every answer carries it, errors too.
    if (name.startsWith('x-switchyard-') && name !== 'x-switchyard-request-id') names.push(name);
  });
  return names;
}
