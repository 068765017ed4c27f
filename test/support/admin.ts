import assert from 'node:assert/strict';
import type { ReloadResult } from '../../src/server/index.js';

// The admin listener from outside: POST /admin/reload and GET /admin/status, with an
// optional bearer token.

export interface AdminReply<T> {
  readonly status: number;
  readonly text: string;
  readonly body: T;
}

export interface StatusProvider {
  readonly name: string;
  readonly type: string;
  readonly base_url: string;
  readonly identity: string;
  readonly credential: string | null;
  readonly breaker: { identity: string; state: string; consecutiveFailures: number; opens: number } | null;
  readonly inflight: number;
}

export interface StatusRoute {
  readonly model: string;
  readonly policy: string;
  readonly candidates: ReadonlyArray<{ stable_id: string; provider: string; upstream_model: string; weight: number }>;
}

export interface OverlayStatus {
  readonly accepted_revision: string | null;
  readonly serving_revision: string;
  readonly source_uid: string | null;
  readonly source_generation: number | null;
  readonly format: string;
  readonly candidate_count: number;
  readonly candidates_per_model: Record<string, number>;
  readonly unroutable_candidates: Array<{ stable_id: string; kind: string; model: string; cluster: string }>;
  readonly candidates_per_tool?: Record<string, number>;
  readonly last_rejection: { at: string; reason: string; message: string } | null;
}

export interface AdminStatus {
  readonly generation: { number: number; built_at: string; config_hash: string } | null;
  readonly reloads: readonly ReloadResult[];
  readonly providers: readonly StatusProvider[];
  readonly routes: readonly StatusRoute[];
  /** Overlay mode only. */
  readonly overlay: OverlayStatus | null;
}

function authHeaders(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

async function parse<T>(res: Response): Promise<AdminReply<T>> {
  const text = await res.text();
  let body: T;
  try {
    body = JSON.parse(text) as T;
  } catch {
    body = undefined as T;
  }
  return { status: res.status, text, body };
}

/** POST /admin/reload; the body is the ReloadResult (200, or 422 when rejected). */
export async function adminReload(adminUrl: string, token?: string): Promise<AdminReply<ReloadResult>> {
  return parse<ReloadResult>(await fetch(`${adminUrl}/admin/reload`, { method: 'POST', headers: authHeaders(token) }));
}

/** GET /admin/status. */
export async function adminStatus(adminUrl: string, token?: string): Promise<AdminReply<AdminStatus>> {
  return parse<AdminStatus>(await fetch(`${adminUrl}/admin/status`, { headers: authHeaders(token) }));
}

/** GET /admin/status of a gateway, which must answer 200: its body. */
export async function adminStatusBody(gw: { readonly adminUrl: string | null }, token?: string): Promise<AdminStatus> {
  if (gw.adminUrl === null) throw new Error('the gateway has no admin listener');
  const reply = await adminStatus(gw.adminUrl, token);
  assert.equal(reply.status, 200, `GET /admin/status answered ${reply.status}: ${reply.text}`);
  return reply.body;
}
