import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { round } from './percentiles.js';
import type { ProfileWindow } from './scenario.js';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}

interface CpuProfile {
  readonly startTime: number;
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface SelfTimeEntry {
  readonly function: string;
  readonly location: string;
  readonly self_ms: number;
  /** Share of the busy (non-idle) time. */
  readonly busy_pct: number;
  /** With a window: self time per request served in it. */
  readonly self_us_per_request?: number;
}

export interface ProfileSummary {
  readonly file: string;
  readonly total_ms: number;
  readonly idle_ms: number;
  /** With a window: the requests served in it, and the busy time per request. */
  readonly requests?: number;
  readonly busy_us_per_request?: number;
  readonly top_functions: readonly SelfTimeEntry[];
  /** Busy time by where the code lives: a dist/ folder, an npm package, node internals, GC. */
  readonly by_area: readonly {
    readonly area: string;
    readonly self_ms: number;
    readonly busy_pct: number;
    readonly self_us_per_request?: number;
  }[];
}

const REPO = resolve(import.meta.dirname, '../..');

/**
 * Self time per function and per area from every `.cpuprofile` in `dir`; a profile with a
 * window in `windows` (by file name without `.cpuprofile`) counts only the samples in it.
 */
export function summarizeProfiles(dir: string, top = 15, windows: Readonly<Record<string, ProfileWindow>> = {}): ProfileSummary[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => summarizeProfile(join(dir, f), top, windows[f.slice(0, -'.cpuprofile'.length)]));
}

export function summarizeProfile(file: string, top: number, window?: ProfileWindow): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  const spans = window === undefined ? null : [...window.spansUs].sort((a, b) => a[0] - b[0]);
  let span = 0;
  // timeDeltas[i] is the time since the previous sample; the time belongs to the previous sample's frame.
  let at = profile.startTime + (profile.timeDeltas[0] ?? 0);
  for (let i = 1; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (spans !== null) {
      while (span < spans.length && at > (spans[span] as readonly [number, number])[1]) span += 1;
      if (span === spans.length || at < (spans[span] as readonly [number, number])[0]) continue;
    }
    const id = profile.samples[i - 1] as number;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const fns = new Map<string, { fn: string; location: string; us: number }>();
  const areas = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) continue;
    totalUs += us;
    if (frame.functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const location = shortLocation(frame.url, frame.lineNumber);
    const fn = frame.functionName === '' ? '(anonymous)' : frame.functionName;
    const key = `${fn} ${location}`;
    const entry = fns.get(key) ?? { fn, location, us: 0 };
    entry.us += us;
    fns.set(key, entry);
    const area = areaOf(frame.url, fn);
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  const busyUs = Math.max(1, totalUs - idleUs);
  const requests = window === undefined || window.requests === 0 ? null : window.requests;
  return {
    file,
    total_ms: round(totalUs / 1000, 1),
    idle_ms: round(idleUs / 1000, 1),
    ...(requests === null ? {} : { requests, busy_us_per_request: round(busyUs / requests, 1) }),
    top_functions: [...fns.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((e) => ({
        function: e.fn,
        location: e.location,
        self_ms: round(e.us / 1000, 1),
        busy_pct: round((100 * e.us) / busyUs, 1),
        ...(requests === null ? {} : { self_us_per_request: round(e.us / requests, 2) }),
      })),
    by_area: [...areas.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([area, us]) => ({
        area,
        self_ms: round(us / 1000, 1),
        busy_pct: round((100 * us) / busyUs, 1),
        ...(requests === null ? {} : { self_us_per_request: round(us / requests, 2) }),
      })),
  };
}

function shortLocation(url: string, line: number): string {
  if (url === '') return '';
  const path = url.startsWith('file://') ? url.slice('file://'.length) : url;
  const rel = path.startsWith(`${REPO}/`) ? path.slice(REPO.length + 1) : path;
  return `${rel}:${line + 1}`;
}

function areaOf(url: string, fn: string): string {
  if (url === '') return fn.startsWith('(') ? fn : '(native)';
  const path = url.startsWith('file://') ? url.slice('file://'.length) : url;
  const nm = path.lastIndexOf('/node_modules/');
  if (nm !== -1) {
    const rest = path.slice(nm + '/node_modules/'.length).split('/');
    return `npm:${rest[0]?.startsWith('@') === true ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  const dist = path.indexOf(`${REPO}/dist/`);
  if (dist !== -1) {
    const rest = path.slice(dist + REPO.length + '/dist/'.length).split('/');
    return `switchyard:${rest.length > 1 ? rest[0] : rest[0]?.replace(/\.js$/, '')}`;
  }
  if (path.startsWith('node:')) return `node:${path.slice(5).split('/')[1] ?? path.slice(5)}`;
  return path;
}
