import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

// The redis store's Lua scripts, read from lua/ once when this module loads (the build
// copies them beside the compiled files, so dist/ reads its own). Redis runs each script
// atomically; the key layout and the reasons behind each script's shape are comments in
// the .lua files themselves.

export interface Script {
  readonly text: string;
  /** What EVALSHA names it by: SHA-1 of the text sent, as Redis computes it on SCRIPT LOAD. */
  readonly sha: string;
}

function lua(name: string): string {
  return readFileSync(new URL(`./lua/${name}.lua`, import.meta.url), 'utf8');
}

function script(text: string): Script {
  return { text, sha: createHash('sha1').update(text).digest('hex') };
}

// A Redis script is one chunk with no `require`: the helpers that reserve and status share
// are sent in front of each, and their `local` functions are in scope below them.
const SHARED = lua('common') + lua('read-scope');

export const RESERVE: Script = script(SHARED + lua('reserve'));
export const SETTLE: Script = script(lua('settle'));
export const STATUS: Script = script(SHARED + lua('status'));
