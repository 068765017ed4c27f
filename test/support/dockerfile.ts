import { posix } from 'node:path';

// The Dockerfile and .dockerignore as the image tests read them: the instructions by stage,
// and Docker's verdict on which context paths the build can see.

export interface Instruction {
  readonly op: string;
  readonly args: string;
}

export interface Stage {
  readonly name: string;
  readonly instructions: Instruction[];
}

/** Instructions by stage: comments dropped, `\` continuations joined. */
export function readStages(text: string): Stage[] {
  const logical = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of logical) {
    const [op = '', ...rest] = line.split(/\s+/);
    const instruction = { op: op.toUpperCase(), args: rest.join(' ') };
    if (instruction.op === 'FROM') {
      const as = /\bAS\s+(\S+)$/i.exec(instruction.args);
      stages.push({ name: as?.[1] ?? String(stages.length), instructions: [] });
      continue;
    }
    stages.at(-1)?.instructions.push(instruction);
  }
  return stages;
}

/** .dockerignore's rules, in order. */
export function readIgnoreRules(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** A .dockerignore pattern as a regular expression over a whole context path. */
export function patternRegExp(pattern: string): RegExp {
  const body = posix
    .normalize(pattern.replace(/^\/+/, ''))
    .split('')
    .map((c, i, all) => {
      if (c === '*' && all[i + 1] === '*') return '';
      if (c === '*' && all[i - 1] === '*') return '.*';
      if (c === '*') return '[^/]*';
      if (c === '?') return '[^/]';
      return c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return new RegExp(`^${body}$`);
}

/**
 * Docker's verdict on a context path: the last rule that matches the path or one of its parent
 * folders wins, so `*` then `!src` lets in everything under src/ and nothing else.
 */
export function ignored(path: string, rules: readonly string[]): boolean {
  const parts = path.split('/');
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let out = false;
  for (const rule of rules) {
    const negated = rule.startsWith('!');
    const re = patternRegExp(negated ? rule.slice(1) : rule);
    if (prefixes.some((p) => re.test(p))) out = !negated;
  }
  return out;
}
