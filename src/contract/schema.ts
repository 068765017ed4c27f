// Zod schemas for overlay contract v1. They check shape only; cross-field rules (digest,
// scope agreement, duplicates, selection groups, credential values) live in parse.ts and
// candidates.ts, which map each failure to its reject reason.
import { z } from 'zod';

const MAX_STRING_BYTES = 256;
// Names end up in log lines, metric labels and headers: no control characters there.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this pattern's purpose.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

function isBoundedText(value: string): boolean {
  if (value.trim() === '' || CONTROL_CHARACTER.test(value)) return false;
  // A UTF-16 code unit is at most 3 UTF-8 bytes, so short strings skip the byte count.
  return value.length * 3 <= MAX_STRING_BYTES || Buffer.byteLength(value, 'utf8') <= MAX_STRING_BYTES;
}

const requiredOr = (message: string) => (issue: { input?: unknown }) => (issue.input === undefined ? 'required' : message);

/** The contract's string: 1-256 bytes of UTF-8, not blank, no control characters. */
const boundedText = () =>
  z
    .string({ error: requiredOr('must be a string') })
    .refine(isBoundedText, { error: 'must be 1-256 bytes of UTF-8, not blank, without control characters' });

const integerIn = (min: number, max: number, message: string) =>
  z
    .int({ error: requiredOr(message) })
    .min(min, { error: message })
    .max(max, { error: message });

const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: requiredOr(`must be one of ${values.map((v) => `"${v}"`).join(', ')}`) });

const literal = <const T extends string>(value: T) => z.literal(value, { error: requiredOr(`must be "${value}"`) });

const objectError = { error: requiredOr('must be an object') };

export const candidateKinds = ['inference_model', 'mcp_tool'] as const;
export const admissionStates = ['new_and_existing', 'existing_only', 'none'] as const;
export const selectionModes = ['deterministic', 'roundRobin', 'random', 'weightedRandom'] as const;

/**
 * A Kubernetes object name (DNS-1123: lowercase alphanumerics, '-' and '.'). The gateway
 * joins namespace/name/key under its credential mount, so a '/' or '..' here could read
 * any file: only plain names are accepted.
 */
const kubernetesName = () =>
  boundedText().refine((s) => /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(s) && !s.includes('..'), {
    error: 'must be a Kubernetes object name (lowercase letters, digits, "-" and ".")',
  });

/** A Secret's data key: letters, digits, '-', '_' and '.', and not '.' or '..'. */
const secretKey = () =>
  boundedText().refine((s) => /^[-._a-zA-Z0-9]+$/.test(s) && s !== '.' && s !== '..', {
    error: 'must be a Secret key (letters, digits, "-", "_" and "."), not "." or ".."',
  });

/** Strict: a credential carries a reference only; any other field could carry the secret. */
const credentialSchema = z.strictObject(
  {
    strategy: literal('bearer_token'),
    secretRef: z.strictObject({ name: kubernetesName(), namespace: kubernetesName(), key: secretKey() }, objectError),
  },
  objectError,
);

/** Unknown candidate fields are accepted (the digest keeps them from the raw JSON). */
export const candidateSchema = z.object(
  {
    kind: oneOf(candidateKinds),
    name: boundedText(),
    site: boundedText(),
    cluster: boundedText(),
    fresh: z.boolean({ error: requiredOr('must be true or false') }),
    stable_id: boundedText().optional(),
    admission_state: oneOf(admissionStates).optional(),
    rank: integerIn(0, 2 ** 32 - 1, 'must be an integer >= 0').optional(),
    selection_tier: z.unknown().optional(),
    selection_group: integerIn(0, Number.MAX_SAFE_INTEGER, 'must be an integer >= 0').optional(),
    traffic_weight: integerIn(1, 1000, 'must be 1-1000 (an integer)').optional(),
    credential: credentialSchema.optional(),
    /**
     * Its site's region, when the producer's inventory gives one. Not a v1 field: read when it
     * is a short string, ignored otherwise, as any unknown field is.
     */
    region: z.unknown().optional(),
  },
  objectError,
);
export type CandidateWire = z.infer<typeof candidateSchema>;

const selectionPolicySchema = z.object({ mode: oneOf(selectionModes) }, objectError);

const candidatesArray = z.array(z.unknown(), { error: requiredOr('must be an array') });

/** The bare payload: the legacy file, and `overlay` inside an envelope (where network is required). */
export const legacyPayloadSchema = z.object({
  network: boundedText().optional(),
  local_site: boundedText(),
  selection_policy: selectionPolicySchema.optional(),
  candidates: candidatesArray,
  generated_at: z.string({ error: requiredOr('must be a string') }).optional(),
});

const sha256Hex = z.string({ error: requiredOr('must be a string') }).regex(/^[0-9a-f]{64}$/, { error: 'must be 64 lowercase hex digits' });

// Unknown envelope fields are tolerated so a producer can add metadata before consumers
// update (the conformance vector unknown-additive-field.json pins this).
export const envelopeSchema = z.object({
  schema_version: z.string(),
  revision: z.object({ kind: literal('content_addressed'), algorithm: literal('sha256'), value: sha256Hex }, objectError),
  content_digest: z.object({ algorithm: literal('sha256'), value: sha256Hex }, objectError),
  scope: z.object({ network: boundedText(), gateway: boundedText(), namespace: boundedText(), local_site: boundedText() }, objectError),
  provenance: z.object(
    {
      producer: boundedText(),
      producer_version: boundedText(),
      source_name: boundedText(),
      source_uid: boundedText(),
      source_generation: integerIn(1, Number.MAX_SAFE_INTEGER, 'must be an integer > 0'),
      rendered_at: z.string({ error: requiredOr('must be a string') }).refine(isRfc3339, { error: 'must be an RFC 3339 timestamp' }),
    },
    objectError,
  ),
  overlay: legacyPayloadSchema.extend({ network: boundedText() }),
});
export type EnvelopeWire = z.infer<typeof envelopeSchema>;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

/** RFC 3339 section 5.6 date-time, with real calendar and clock ranges (leap second allowed). */
function isRfc3339(value: string): boolean {
  const m = RFC3339.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const offsetOk = m[7] === undefined || (Number(m[7]) <= 23 && Number(m[8]) <= 59);
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour <= 23 && minute <= 59 && second <= 60 && offsetOk;
}

/**
 * A field path as messages show it, `routing.routes.gpt-4o.candidates[0]`, from a zod path,
 * after an optional prefix such as `overlay.candidates[3]`. An empty path is `''`. The
 * gateway config (config/) names its fields the same way, so both read alike.
 */
export function formatPath(path: readonly PropertyKey[], prefix = ''): string {
  let out = prefix;
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** The first issue, as `path: message`. Zod's default messages never echo input values. */
export function describeIssue(prefix: string, error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return `${prefix || '(top level)'}: invalid`;
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    return `${formatPath([...issue.path, key], prefix) || '(top level)'}: unknown field, not allowed here`;
  }
  return `${formatPath(issue.path, prefix) || '(top level)'}: ${issue.message}`;
}
