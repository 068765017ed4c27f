import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { ADAPTERS, adapterOf, type ProviderType, policyRowsOf, servesOperation, TRANSLATION_POLICY } from '../../src/providers/index.js';

// One adapter per provider type (ADR 0040): what a type knows lives in its folder under
// providers/. Outside those folders, the registry, config/'s list of types and the mocks, no
// code compares a provider's type with a type name; and the request path names none of the
// cloud types at all. Protocol comparisons (the canonical hub, the error renderer) are not
// type comparisons: a protocol is compared by a variable that is not a `type`.

const SRC = resolve(import.meta.dirname, '../../src');
const TYPES: readonly ProviderType[] = ['openai', 'azure_openai', 'anthropic', 'gemini', 'bedrock', 'vertex', 'mcp', 'a2a'];
const NAMES = TYPES.join('|');
/** `x.type === 'bedrock'`, `type !== 'mcp'`, `'vertex' === p.type`, and a `case 'gemini':` under a `switch (….type)`. */
const COMPARISON = new RegExp(
  `\\btype\\)?\\s*[!=]==?\\s*'(${NAMES})'|'(${NAMES})'\\s*[!=]==?\\s*[A-Za-z_.?()]*\\btype\\b|switch\\s*\\(\\s*(?:[A-Za-z_.?]+\\.)?type\\s*\\)\\s*\\{[^}]*case\\s+'(${NAMES})'`,
  'g',
);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Where type names may be compared: each type's own folder, the registry, config/'s list of types, the mocks. */
function mayCompareTypes(rel: string): boolean {
  const parts = rel.split(sep);
  if (parts[0] === 'mock') return true;
  if (parts[0] === 'providers' && parts.length === 3 && (TYPES as readonly string[]).includes(parts[1] as string)) return true;
  return rel === join('providers', 'registry.ts') || rel === join('config', 'provider-types.ts');
}

describe('one adapter per provider type', () => {
  it('no code outside the adapters, the registry, the config list of types and the mocks compares a provider type with a type name', () => {
    const found: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const rel = relative(SRC, file);
      if (mayCompareTypes(rel)) continue;
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(COMPARISON)) found.push(`${rel}: ${m[0].replace(/\s+/g, ' ').slice(0, 80)}`);
    }
    assert.deepEqual(found, []);
  });

  it('src/request/ names no bedrock, gemini, vertex or azure_openai at all, in code or comments', () => {
    const found: string[] = [];
    for (const file of sourceFiles(join(SRC, 'request'))) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/bedrock|gemini|vertex|azure_openai/i.test(line)) found.push(`${relative(SRC, file)}:${i + 1}: ${line.trim()}`);
        });
    }
    assert.deepEqual(found, []);
  });

  it('the check finds a comparison when there is one', () => {
    const hits = (text: string): number => [...text.matchAll(COMPARISON)].length;
    assert.equal(hits("if (p.type === 'bedrock') return x;"), 1);
    assert.equal(hits("return provider?.type !== 'azure_openai';"), 1);
    assert.equal(hits("'vertex' === c.provider.type"), 1);
    assert.equal(hits("switch (type) {\n    case 'anthropic':\n      return 1;"), 1);
    assert.equal(hits("if (protocol === 'anthropic') return x;"), 0, 'a protocol is not a type');
  });

  it('the registry has one adapter per type, each under its own name', () => {
    assert.deepEqual(Object.keys(ADAPTERS).sort(), [...TYPES].sort());
    for (const type of TYPES) assert.equal(adapterOf(type).type, type);
  });

  it("an adapter's operations are what the provider serves, and its policy rows are those written to its protocols", () => {
    assert.equal(servesOperation('mcp', 'chat'), false);
    assert.equal(adapterOf('mcp').serves, 'tools');
    assert.equal(servesOperation('a2a', 'chat'), false);
    assert.equal(adapterOf('a2a').serves, 'agents');
    for (const type of TYPES.filter((t) => t !== 'mcp' && t !== 'a2a')) assert.equal(servesOperation(type, 'chat'), true, type);
    const vertexRows = policyRowsOf(adapterOf('vertex'), TRANSLATION_POLICY);
    assert.ok(vertexRows.some((r) => r.to === 'gemini') && vertexRows.some((r) => r.to === 'anthropic'));
    assert.ok(vertexRows.every((r) => r.to === 'gemini' || r.to === 'anthropic'));
    assert.ok(policyRowsOf(adapterOf('bedrock'), TRANSLATION_POLICY).every((r) => r.to === 'bedrock'));
  });
});
