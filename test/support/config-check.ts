import assert from 'node:assert/strict';
import { type ConfigResult, formatIssue } from '../../src/config/index.js';
import { buildGeneration, type Generation } from '../../src/live/index.js';
import { PoolRegistry } from '../../src/providers/index.js';

// A parsed config, judged: the schema's refusals as lines, or the generation it builds (with
// the build's own issues, which the schema alone cannot find: secrets, files, references).

/** The refusals of a config the schema must refuse, as `path: message` lines. */
export function problems(result: ConfigResult): string[] {
  assert.equal(result.ok, false, 'expected the config to be refused');
  return (result as Extract<ConfigResult, { ok: false }>).issues.map(formatIssue);
}

const pools = new PoolRegistry();

/** Builds a generation from a config the schema accepted: the generation, or the build's issues. */
export function build(result: ConfigResult, env: NodeJS.ProcessEnv = {}): { gen: Generation | null; issues: string[] } {
  assert.ok(result.ok, JSON.stringify(result));
  const built = buildGeneration({ config: result.config, sourceHash: 'x', number: 1, env, poolFor: (s) => pools.acquire(s) });
  return built.ok ? { gen: built.generation, issues: [] } : { gen: null, issues: built.issues.map((i) => `${i.path}: ${i.message}`) };
}
