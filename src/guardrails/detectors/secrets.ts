// Credentials in free text: the token formats that announce themselves (a fixed prefix, a
// fixed length or alphabet), a PEM private key block, a JWT whose header decodes, an AWS
// secret key where it is labelled as one (alone it is just 40 base64 characters), and the
// entropy rule for everything else. Every regex starts with a literal and bounds its
// quantifiers, so a scan is linear in the text.

import { SECRET_CATEGORIES, type SecretCategory } from '../../config/index.js';
import { DEFAULT_MIN_LENGTH, type EntropyOptions, findHighEntropy, HIGH_ENTROPY_MAX_CHARS } from './entropy.js';
import { type Finding, resolveOverlaps } from './finding.js';

// The category names are the config's (guardrails.<name>.categories): one list for both.
export { SECRET_CATEGORIES, type SecretCategory };

export interface SecretsOptions extends EntropyOptions {
  /** The categories to look for (default all). */
  readonly categories?: readonly SecretCategory[];
}

/**
 * A PEM block is followed to its END line for at most this many characters: an 8192-bit RSA
 * key in PKCS#8 is about 6.5 KB of PEM. A block without an END line within the bound is
 * reported from its BEGIN line through the base64 that follows it (a truncated key still leaks).
 */
export const PEM_MAX_CHARS = 8192;
const JWT_MAX_CHARS = 8192;

/** How many characters a finding of each category spans at most. */
export const SECRET_MAX_MATCH_CHARS: Readonly<Record<SecretCategory, number>> = {
  aws_access_key: 20,
  aws_secret_key: 40,
  github_token: 255,
  gitlab_token: 520,
  slack_token: 255,
  private_key: PEM_MAX_CHARS,
  jwt: JWT_MAX_CHARS,
  high_entropy: HIGH_ENTROPY_MAX_CHARS,
};

/** The label before an AWS secret key ("aws_secret_access_key = '") is read but not masked: at most this long. */
export const AWS_LABEL_MAX_CHARS = 40;

interface Rule {
  readonly category: Exclude<SecretCategory, 'private_key' | 'high_entropy'>;
  readonly pattern: RegExp;
  readonly valid?: (match: string) => boolean;
}

const rules: readonly Rule[] = [
  { category: 'aws_access_key', pattern: /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g },
  // The secret key alone, group 1: the label stays in the text so the model still knows what was there.
  {
    category: 'aws_secret_key',
    pattern:
      /(?<![A-Za-z0-9])(?:aws[_ .-]?secret[_ .-]?(?:access[_ .-]?)?key|secret[_ .-]?access[_ .-]?key)["']?\s{0,3}[:=]\s{0,3}["']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])/gi,
  },
  {
    category: 'github_token',
    pattern: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,244})(?![A-Za-z0-9_])/g,
  },
  {
    category: 'gitlab_token',
    pattern: /(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,249}(?:\.[A-Za-z0-9_-]{1,64}){0,4}(?![A-Za-z0-9_-])/g,
  },
  { category: 'slack_token', pattern: /(?<![A-Za-z0-9-])xox[abprs]-[A-Za-z0-9-]{10,250}(?![A-Za-z0-9-])/g },
  {
    category: 'jwt',
    pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,1200}\.[A-Za-z0-9_-]{2,5800}\.[A-Za-z0-9_-]{0,1180}(?![A-Za-z0-9_-])/g,
    valid: jwtHeaderHasAlg,
  },
];

/** Every secret of the chosen categories in `text`, sorted and not overlapping. */
export function detectSecrets(text: string, options: SecretsOptions = {}): Finding[] {
  const wanted = new Set(options.categories ?? SECRET_CATEGORIES);
  const out: Finding[] = [];
  if (wanted.has('private_key')) findPrivateKeys(text, out);
  for (const rule of rules) {
    if (!wanted.has(rule.category)) continue;
    for (const m of text.matchAll(rule.pattern)) {
      if (rule.valid !== undefined && !rule.valid(m[0])) continue;
      // A rule with a group reports the group: it ends where the whole match does.
      const end = m.index + m[0].length;
      out.push({ entity: rule.category, start: m[1] === undefined ? m.index : end - m[1].length, end });
    }
  }
  const specific = resolveOverlaps(out);
  if (!wanted.has('high_entropy')) return specific;
  const entropy = { minLength: options.minLength ?? DEFAULT_MIN_LENGTH, minEntropy: options.minEntropy };
  return resolveOverlaps([...specific, ...findHighEntropy(text, specific, entropy)]);
}

// A JWT's header is base64url JSON naming its algorithm; "eyJ" alone only says it begins `{"`.
function jwtHeaderHasAlg(token: string): boolean {
  const header = token.slice(0, token.indexOf('.'));
  try {
    const parsed: unknown = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
    return typeof parsed === 'object' && parsed !== null && typeof (parsed as { alg?: unknown }).alg === 'string';
  } catch {
    return false;
  }
}

const PEM_BEGIN = /-----BEGIN ((?:[A-Z0-9]{1,20} ){0,3})PRIVATE KEY-----/y;
// The lines after a BEGIN line that belong to the block: base64, an RFC 1421 header
// (`Proc-Type: 4,ENCRYPTED`) or a blank line, each whole to its end.
const PEM_BODY = /(?:\r?\n(?:[A-Za-z0-9+/=]{1,128}|[A-Za-z-]{1,20}: [^\r\n]{1,100})?(?=\r?\n|$)){0,200}/y;

function findPrivateKeys(text: string, out: Finding[]): void {
  // Where each kind's next END line is, so a text of many BEGIN lines without one is not
  // searched to its end once per BEGIN: -1 means there is none after the cached position.
  const nextEnd = new Map<string, number>();
  for (let at = text.indexOf('-----BEGIN '); at !== -1; at = text.indexOf('-----BEGIN ', at + 1)) {
    PEM_BEGIN.lastIndex = at;
    const begin = PEM_BEGIN.exec(text);
    if (begin === null) continue;
    const headerEnd = at + begin[0].length;
    const endLine = `-----END ${begin[1]}PRIVATE KEY-----`;
    let endAt = nextEnd.get(endLine);
    if (endAt === undefined || (endAt !== -1 && endAt < headerEnd)) {
      endAt = text.indexOf(endLine, headerEnd);
      nextEnd.set(endLine, endAt);
    }
    let end: number;
    if (endAt !== -1 && endAt + endLine.length - at <= PEM_MAX_CHARS) {
      end = endAt + endLine.length;
    } else {
      PEM_BODY.lastIndex = headerEnd;
      PEM_BODY.exec(text);
      end = Math.min(PEM_BODY.lastIndex, at + PEM_MAX_CHARS);
      while (end > headerEnd && /\s|-/.test(text[end - 1]!)) end--;
    }
    out.push({ entity: 'private_key', start: at, end });
    at = end - 1;
  }
}
