import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ConfigResult, formatIssue, PII_ENTITIES, parseConfigText, re2Problem, SECRET_CATEGORIES } from '../../src/config/index.js';

// The `guardrails` section and its attachments, as docs/decisions/0040-guardrails.md sets
// them out: each definition type with its defaults, the lists on routes, teams, keys and
// mcp, and every refusal with the exact path of what is wrong.

const PROVIDERS = `
providers:
  east: { type: openai, base_url: http://127.0.0.1:9001/v1 }
`;

/** The example of the guardrails issue, whole. */
const FULL = `${PROVIDERS}
guardrails:
  pii:      { type: pii, entities: [email, phone, credit_card, iban, us_ssn, ip_address], action: mask, restore: true }
  secrets:  { type: secrets, action: block }
  deny:     { type: regex, patterns: ["(?i)ignore (all|previous) instructions"], action: block, stream: window, window_chars: 400 }
  nemo:     { type: nemo, base_url: "http://nemo:8000", config_id: main, timeout_ms: 2000, on_error: fail_closed }
  review:   { type: webhook, url: "https://guard.internal/check", headers: { authorization: { env: GUARD_TOKEN } }, timeout_ms: 1500, on_error: fail_open }
  judge:    { type: judge, route: llama-guard, prompt: { file: guard-prompt.txt }, unsafe_when: "^unsafe", timeout_ms: 3000 }
routing:
  routes:
    gpt-4o: { guardrails: { input: [secrets, pii, deny], output: [pii] }, candidates: [ { provider: east } ] }
    llama-guard: { candidates: [ { provider: east } ] }
teams:
  research: { guardrails: { input: [nemo] } }
keys:
  - { id: app, team: research, key: { env: APP_KEY }, guardrails: { output: [review] } }
mcp:
  guardrails: { arguments: [secrets], results: [pii, deny] }
`;

const ROUTES = `
routing:
  routes:
    m: { candidates: [ { provider: east } ] }
    guard: { candidates: [ { provider: east } ] }
`;

/** A config with these guardrail definitions (YAML under `guardrails:`) and extra sections. */
function withGuardrails(definitions: string, rest = ROUTES): ConfigResult {
  return parseConfigText(`${PROVIDERS}${rest}\nguardrails:\n${definitions}\n`);
}

function refusal(result: ConfigResult): string[] {
  assert.equal(result.ok, false, 'expected the config to be refused');
  return result.ok ? [] : result.issues.map(formatIssue);
}

function accepted(result: ConfigResult): Extract<ConfigResult, { ok: true }>['config'] {
  assert.ok(result.ok, JSON.stringify(result));
  return result.config;
}

describe('guardrails config: definitions', () => {
  it('accepts every type, attached to routes, teams, keys and mcp, as the issue writes them', () => {
    const config = accepted(parseConfigText(FULL));
    assert.deepEqual(Object.keys(config.guardrails ?? {}), ['pii', 'secrets', 'deny', 'nemo', 'review', 'judge']);
    assert.deepEqual(config.routing.routes?.['gpt-4o']?.guardrails, { input: ['secrets', 'pii', 'deny'], output: ['pii'] });
    assert.deepEqual(config.teams?.research?.guardrails, { input: ['nemo'] });
    assert.deepEqual(config.keys?.[0]?.guardrails, { output: ['review'] });
    assert.deepEqual(config.mcp.guardrails, { arguments: ['secrets'], results: ['pii', 'deny'] });
  });

  it('fills each type with its documented defaults', () => {
    const config = accepted(
      withGuardrails(`
  p: { type: pii }
  s: { type: secrets }
  r: { type: regex, patterns: [x] }
  n: { type: nemo, base_url: "http://127.0.0.1:8000", config_id: main }
  w: { type: webhook, url: "https://guard.example/check" }
  j: { type: judge, route: guard, prompt: { text: "Is this safe? {{texts}}" } }
`),
    );
    const g = config.guardrails ?? {};
    assert.deepEqual(g.p, {
      type: 'pii',
      entities: [...PII_ENTITIES],
      action: 'mask',
      restore: false,
      stream: 'window',
      window_chars: 400,
      on_error: 'fail_closed',
    });
    assert.deepEqual(g.s, {
      type: 'secrets',
      categories: [...SECRET_CATEGORIES],
      entropy: { min_length: 32, min_entropy: 4 },
      action: 'block',
      restore: false,
      stream: 'window',
      window_chars: 400,
    });
    assert.deepEqual(g.r, { type: 'regex', patterns: ['x'], action: 'block', stream: 'window', window_chars: 400 });
    assert.deepEqual(g.n, {
      type: 'nemo',
      base_url: 'http://127.0.0.1:8000',
      config_id: 'main',
      action: 'block',
      timeout_ms: 2000,
      on_error: 'fail_closed',
      stream: 'window',
      window_chars: 400,
    });
    assert.deepEqual(g.w, {
      type: 'webhook',
      url: 'https://guard.example/check',
      headers: {},
      action: 'block',
      timeout_ms: 1500,
      on_error: 'fail_open',
      stream: 'window',
      window_chars: 400,
    });
    assert.deepEqual(g.j, {
      type: 'judge',
      route: 'guard',
      prompt: { text: 'Is this safe? {{texts}}' },
      unsafe_when: '^unsafe',
      action: 'block',
      timeout_ms: 3000,
      on_error: 'fail_closed',
      stream: 'window',
      window_chars: 400,
    });
  });

  it('refuses an unknown type, an unknown entity or category, and an unknown key, each at its path', () => {
    const issues = refusal(
      withGuardrails(`
  a: { type: antivirus }
  b: { type: pii, entities: [email, passport] }
  c: { type: secrets, categories: [npm_token] }
  d: { type: regex, patterns: [x], colour: red }
`),
    );
    assert.ok(
      issues.some((l) => l.startsWith('guardrails.a.type: must be one of pii, secrets, regex, nemo, webhook, judge')),
      issues.join('\n'),
    );
    assert.ok(
      issues.some((l) => l.startsWith('guardrails.b.entities[1]: must be one of email')),
      issues.join('\n'),
    );
    assert.ok(
      issues.some((l) => l.startsWith('guardrails.c.categories[0]: must be one of aws_access_key')),
      issues.join('\n'),
    );
    assert.ok(
      issues.some((l) => l.startsWith('guardrails.d.colour')),
      issues.join('\n'),
    );
  });

  it('refuses a literal secret in a webhook header, asking for a reference', () => {
    const issues = refusal(
      withGuardrails('  w: { type: webhook, url: "https://guard.example/check", headers: { authorization: "Bearer abc" } }'),
    );
    assert.ok(
      issues.some((l) => l.startsWith('guardrails.w.headers.authorization: a literal secret is not allowed')),
      issues.join('\n'),
    );
  });

  it('refuses a service URL that is not http(s) or carries credentials', () => {
    const issues = refusal(
      withGuardrails(`
  n: { type: nemo, base_url: "ftp://nemo:21", config_id: main }
  w: { type: webhook, url: "https://user:pw@guard.example/check" }
`),
    );
    assert.ok(
      issues.some((l) => l.startsWith('guardrails.n.base_url:')),
      issues.join('\n'),
    );
    assert.ok(
      issues.some((l) => l.startsWith('guardrails.w.url: must not contain user:password@')),
      issues.join('\n'),
    );
  });

  it('allows restore only with action: mask', () => {
    const issues = refusal(
      withGuardrails(`
  p: { type: pii, action: block, restore: true }
  s: { type: secrets, restore: true }
`),
    );
    assert.deepEqual(issues, [
      'guardrails.p.restore: applies only with action: mask (this one is block)',
      'guardrails.s.restore: applies only with action: mask (this one is block)',
    ]);
    accepted(withGuardrails('  p: { type: pii, action: mask, restore: true }'));
  });

  it('allows mask only on types whose findings are spans of text', () => {
    const issues = refusal(
      withGuardrails(`
  n: { type: nemo, base_url: "http://127.0.0.1:8000", config_id: main, action: mask }
  j: { type: judge, route: guard, prompt: { file: p.txt }, action: mask }
`),
    );
    assert.deepEqual(issues, [
      'guardrails.n.action: a nemo guardrail cannot mask (its verdict names no span of text): use block or warn',
      'guardrails.j.action: a judge guardrail cannot mask (its verdict names no span of text): use block or warn',
    ]);
    accepted(
      withGuardrails(`
  p: { type: pii, action: mask }
  s: { type: secrets, action: mask }
  r: { type: regex, patterns: [x], action: mask }
  w: { type: webhook, url: "https://guard.example/check", action: mask }
`),
    );
  });

  it('gives a regex one category per pattern, or none', () => {
    const issues = refusal(withGuardrails('  r: { type: regex, patterns: [a, b], categories: [only_one] }'));
    assert.deepEqual(issues, ['guardrails.r.categories: names 1 categories for 2 patterns: give one per pattern, in order']);
    accepted(withGuardrails('  r: { type: regex, patterns: [a, b], categories: [first, second] }'));
  });

  it('bounds a regex to 1..100 patterns', () => {
    assert.ok(refusal(withGuardrails('  r: { type: regex, patterns: [] }')).some((l) => l.startsWith('guardrails.r.patterns:')));
    const many = JSON.stringify(Array.from({ length: 101 }, (_, i) => `p${i}`));
    assert.ok(refusal(withGuardrails(`  r: { type: regex, patterns: ${many} }`)).some((l) => l.startsWith('guardrails.r.patterns:')));
  });

  it('refuses a prompt that is neither a file nor a text', () => {
    const issues = refusal(withGuardrails('  j: { type: judge, route: guard, prompt: "Is this safe?" }'));
    assert.deepEqual(issues, ['guardrails.j.prompt: must be {file: PATH} or {text: PROMPT}']);
  });
});

describe('guardrails config: patterns compile under RE2', () => {
  it('refuses a backreference, naming the guardrail, the pattern and the reason', () => {
    const issues = refusal(withGuardrails(String.raw`  deny: { type: regex, patterns: ["ok", "(a)\\1"] }`));
    assert.deepEqual(issues, [String.raw`guardrails.deny.patterns[1]: RE2 cannot compile "(a)\1": backreferences are not supported`]);
  });

  it('refuses lookahead and lookbehind', () => {
    const issues = refusal(withGuardrails('  deny: { type: regex, patterns: ["(?=a)b", "(?!a)b", "(?<=a)b", "(?<!a)b"] }'));
    assert.deepEqual(issues, [
      'guardrails.deny.patterns[0]: RE2 cannot compile "(?=a)b": lookahead and lookbehind are not supported',
      'guardrails.deny.patterns[1]: RE2 cannot compile "(?!a)b": lookahead and lookbehind are not supported',
      'guardrails.deny.patterns[2]: RE2 cannot compile "(?<=a)b": lookahead and lookbehind are not supported',
      'guardrails.deny.patterns[3]: RE2 cannot compile "(?<!a)b": lookahead and lookbehind are not supported',
    ]);
  });

  it("passes RE2's own reason through for other syntax errors", () => {
    const issues = refusal(withGuardrails('  deny: { type: regex, patterns: ["[a-", "a{2000}"] }'));
    assert.equal(issues.length, 2, issues.join('\n'));
    assert.match(issues[0] ?? '', /^guardrails\.deny\.patterns\[0\]: RE2 cannot compile "\[a-": missing closing \]/);
    assert.match(issues[1] ?? '', /^guardrails\.deny\.patterns\[1\]: RE2 cannot compile "a\{2000\}": invalid repeat count/);
  });

  it("checks a judge's unsafe_when too", () => {
    const issues = refusal(
      withGuardrails(String.raw`  j: { type: judge, route: guard, prompt: { file: p.txt }, unsafe_when: "(unsafe)\\1" }`),
    );
    assert.deepEqual(issues, [String.raw`guardrails.j.unsafe_when: RE2 cannot compile "(unsafe)\1": backreferences are not supported`]);
  });

  it('accepts RE2 flag groups at the start of a pattern', () => {
    accepted(
      withGuardrails('  deny: { type: regex, patterns: ["(?i)ignore (all|previous) instructions", "(?s)begin.*end", "(?im)^system:"] }'),
    );
  });

  it('refuses a pattern whose program is too large to match quickly, and accepts one just within', () => {
    const issues = refusal(withGuardrails(String.raw`  deny: { type: regex, patterns: ["\\pL{600}", "[a-z]{20,}"] }`));
    assert.equal(issues.length, 1, issues.join('\n'));
    assert.match(issues[0] ?? '', /^guardrails\.deny\.patterns\[0\]: "\\pL\{600\}" compiles to \d+ RE2 instructions, more than 500/);
    assert.equal(re2Problem(String.raw`\pL{400}`), null);
  });

  it('shortens a very long pattern in the message', () => {
    const long = `(${'a'.repeat(300)})\\1`;
    const problem = re2Problem(long) ?? '';
    assert.ok(problem.length < 200, problem);
    assert.match(problem, /…": backreferences are not supported$/);
  });
});

describe('guardrails config: references', () => {
  it('refuses a name that no guardrail has, at the path of the reference', () => {
    const issues = refusal(
      parseConfigText(`${PROVIDERS}
guardrails:
  pii: { type: pii }
routing:
  routes:
    m: { guardrails: { input: [pii, nope] }, candidates: [ { provider: east } ] }
teams:
  t: { guardrails: { output: [missing] } }
keys:
  - { id: k, team: t, key: { env: K }, guardrails: { input: [absent] } }
mcp:
  guardrails: { arguments: [pii], results: [gone] }
`),
    );
    assert.deepEqual(issues, [
      'routing.routes.m.guardrails.input[1]: unknown guardrail "nope" (not under guardrails)',
      'teams.t.guardrails.output[0]: unknown guardrail "missing" (not under guardrails)',
      'keys[0].guardrails.input[0]: unknown guardrail "absent" (not under guardrails)',
      'mcp.guardrails.results[0]: unknown guardrail "gone" (not under guardrails)',
    ]);
  });

  it('refuses a list that names a guardrail twice', () => {
    const issues = refusal(
      withGuardrails(
        '  pii: { type: pii }',
        `\nrouting:\n  routes:\n    m: { guardrails: { input: [pii, pii] }, candidates: [ { provider: east } ] }\n`,
      ),
    );
    assert.deepEqual(issues, ['routing.routes.m.guardrails.input: lists a guardrail twice']);
  });

  it('refuses a judge whose route does not exist, or has a judge of its own', () => {
    const issues = refusal(
      parseConfigText(`${PROVIDERS}
guardrails:
  lost: { type: judge, route: nowhere, prompt: { file: p.txt } }
  loop: { type: judge, route: guard, prompt: { file: p.txt } }
routing:
  routes:
    guard: { guardrails: { output: [loop] }, candidates: [ { provider: east } ] }
`),
    );
    assert.deepEqual(issues, [
      'guardrails.lost.route: unknown route "nowhere" (not under routing.routes)',
      `guardrails.loop.route: route "guard" has a judge guardrail of its own ("loop"): a judge's questions would ask a judge in turn`,
    ]);
  });

  it('leaves a judge route to the overlay in overlay mode', () => {
    accepted(
      parseConfigText(`${PROVIDERS}
guardrails:
  j: { type: judge, route: llama-guard, prompt: { file: p.txt } }
routing:
  overlay: { file: /overlay/routing-overlay.json }
`),
    );
  });

  it('accepts a config without guardrails, and routes, teams and keys without lists', () => {
    const config = accepted(parseConfigText(`${PROVIDERS}${ROUTES}`));
    assert.equal(config.guardrails, undefined);
    assert.equal(config.routing.routes?.m?.guardrails, undefined);
    assert.equal(config.mcp.guardrails, undefined);
  });
});

describe('guardrails config: warnings', () => {
  it('a guardrail no list names is warned of, by its path; one that a list names is not', () => {
    const result = withGuardrails(
      `  used: { type: secrets }\n  unused: { type: pii }`,
      `${ROUTES}    named: { guardrails: { input: [used] }, candidates: [ { provider: east } ] }\n`,
    );
    assert.ok(result.ok, JSON.stringify(result));
    const warned = result.ok ? result.warnings.map((w) => w.path) : [];
    assert.deepEqual(
      warned.filter((p) => p.startsWith('guardrails')),
      ['guardrails.unused'],
    );
  });
});
