import { A2aMock } from './a2a.js';
import type { A2aVersion } from './a2a-cards.js';
import { A2A_VERSIONS } from './a2a-cards.js';

/** The mock provider's options the A2A agents read (documented on MockProviderOptions). */
export interface A2aProviderOptions {
  readonly name: string;
  readonly protocol?: string;
  readonly a2aVersions?: readonly A2aVersion[];
  readonly a2aSignedCards?: boolean;
  readonly a2aPublicUrl?: string;
  readonly a2aStepMs?: number;
}

/** Throws a TypeError naming the option when an A2A option is given without protocol a2a, or is unfit (a2aStepMs is checked with the other numbers). */
export function checkA2aOptions(opts: A2aProviderOptions): void {
  for (const key of ['a2aVersions', 'a2aSignedCards', 'a2aPublicUrl', 'a2aStepMs'] as const) {
    if (opts.protocol !== 'a2a' && opts[key] !== undefined) throw new TypeError(`mock provider ${key} only applies with protocol a2a`);
  }
  const versions = opts.a2aVersions;
  if (
    versions !== undefined &&
    !(
      Array.isArray(versions) &&
      versions.length > 0 &&
      versions.every((v) => A2A_VERSIONS.includes(v)) &&
      new Set(versions).size === versions.length
    )
  ) {
    throw new TypeError(`mock provider a2aVersions must list distinct versions among ${A2A_VERSIONS.join(', ')}`);
  }
  if (opts.a2aSignedCards !== undefined && typeof opts.a2aSignedCards !== 'boolean')
    throw new TypeError('mock provider a2aSignedCards must be a boolean');
  if (opts.a2aPublicUrl !== undefined && publicBase(opts.a2aPublicUrl) === null) {
    throw new TypeError('mock provider a2aPublicUrl must be an http(s) URL without query, fragment or credentials');
  }
}

/** The public URL as the cards' base: no trailing slash, no query, fragment or userinfo; null when unfit. */
function publicBase(text: unknown): string | null {
  if (typeof text !== 'string' || !URL.canParse(text)) return null;
  const url = new URL(text);
  if (!['http:', 'https:'].includes(url.protocol) || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '')
    return null;
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** The A2A agents the options ask for, or null without protocol a2a; the options were checked. */
export function a2aMockFor(opts: A2aProviderOptions): A2aMock | null {
  if (opts.protocol !== 'a2a') return null;
  return new A2aMock({
    name: opts.name,
    versions: opts.a2aVersions ?? A2A_VERSIONS,
    signed: opts.a2aSignedCards ?? false,
    publicUrl: opts.a2aPublicUrl === undefined ? null : publicBase(opts.a2aPublicUrl),
    stepMs: opts.a2aStepMs ?? 20,
  });
}
