import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { round } from './percentiles.js';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}

interface CpuProfile {
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
}

export interface ProfileSummary {
  readonly file: string;
  readonly total_ms: number;
  readonly idle_ms: number;
  readonly top_functions: readonly SelfTimeEntry[];
  /** Busy time by where the code lives: a dist/ folder, an npm package, node internals, GC. */
  readonly by_area: readonly { readonly area: string; readonly self_ms: number; readonly busy_pct: number }[];
}

const REPO = resolve(import.meta.dirname, '../..');

/** Self time per function and per area from every `.cpuprofile` in `dir`. */
export function summarizeProfiles(dir: string, top = 15): ProfileSummary[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => summarizeProfile(join(dir, f), top));
}

export function summarizeProfile(file: string, top: number): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  // timeDeltas[i] is the time since the previous sample; the time belongs to the previous sample's frame.
  for (let i = 1; i < profile.samples.length; i++) {
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
  return {
    file,
    total_ms: round(totalUs / 1000, 1),
    idle_ms: round(idleUs / 1000, 1),
    top_functions: [...fns.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((e) => ({ function: e.fn, location: e.location, self_ms: round(e.us / 1000, 1), busy_pct: round((100 * e.us) / busyUs, 1) })),
    by_area: [...areas.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([area, us]) => ({ area, self_ms: round(us / 1000, 1), busy_pct: round((100 * us) / busyUs, 1) })),
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
