import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeIntact, verifyAuditFile, verifyAuditSet } from '../audit/index.js';
import { type ConfigIssue, formatIssue } from '../config/index.js';
import { type OverlaySnapshot, prepareGeneration } from '../live/index.js';
import {
  A2A_VERSIONS,
  type A2aVersion,
  MOCK_PROTOCOLS,
  type MockProtocol,
  type MockProtocolTraits,
  type MockServiceAccount,
  mockProtocolTraits,
  mockServiceAccount,
  startMockProvider,
} from '../mock/index.js';
import { PoolRegistry } from '../providers/index.js';
import { PublishError } from '../publisher/index.js';
import { StartupError, startGateway } from '../server/index.js';
import { type Command, help, UsageError } from './command.js';
import { dbCommand } from './db.js';
import { demoCommand } from './demo.js';
import { managedCommands } from './managed.js';
import { mockGuardrailCommand } from './mock-guardrail.js';
import { publisherCommands } from './publisher.js';
import { usageCommand } from './usage.js';

const commands: Record<string, Command> = {
  serve: {
    summary: 'run the gateway',
    usage: `switchyard serve --config FILE

Runs the gateway on the config FILE (YAML or JSON). SIGHUP reloads the config without a
restart; SIGTERM or SIGINT stops accepting, drains in-flight requests within
server.drain_timeout_ms, then exits 0. A bad config at start-up prints every error and
exits 1.`,
    options: { config: { type: 'string', short: 'c' }, help },
    async run(values) {
      const configPath = requireString(values.config, '--config');
      return serve(resolve(configPath));
    },
  },
  validate: {
    summary: 'check a config file (and an overlay file against it) and exit',
    usage: `switchyard validate --config FILE [--overlay FILE] [--strict]

Checks FILE exactly as serve does at start-up (config, secret references, overlay file), without
listening. Exits 0 when serve would start, printing any warnings (a setting that has no effect,
an overlay candidate naming no configured provider). Otherwise prints every error with its path
(e.g. "providers.east.base_url: invalid URL") and exits 1, as serve would.

--overlay FILE  judge this overlay file instead of the config's routing.overlay.file, with the
                verdict the gateway would reach on reading it: a refused file is an error; a
                candidate whose cluster names no provider is a warning (the gateway keeps it,
                never selects it, and reports it).
--strict        exit 1 when there is any warning, too.`,
    options: { config: { type: 'string', short: 'c' }, overlay: { type: 'string' }, strict: { type: 'boolean' }, help },
    async run(values) {
      const configPath = resolve(requireString(values.config, '--config'));
      const overlayPath = values.overlay === undefined ? undefined : resolve(requireString(values.overlay, '--overlay'));
      const what = overlayPath === undefined ? configPath : `${configPath} with overlay ${overlayPath}`;
      const { issues, warnings, overlay } = await validateConfig(configPath, overlayPath);
      if (issues.length === 0) {
        for (const warning of warnings) process.stderr.write(`warning: ${warning}\n`);
        if (overlay !== null) process.stdout.write(`overlay revision ${overlay.revision}: ${overlay.candidateCount} candidate(s)\n`);
        if (values.strict === true && warnings.length > 0) {
          process.stderr.write(`${what}: ${warnings.length} warning(s), which --strict treats as errors\n`);
          return 1;
        }
        process.stdout.write(`${what}: valid${warnings.length > 0 ? ` (${warnings.length} warning(s))` : ''}\n`);
        return 0;
      }
      for (const issue of issues) process.stderr.write(`${formatIssue(issue)}\n`);
      process.stderr.write(`${what}: ${issues.length} error(s)\n`);
      return 1;
    },
  },
  'mock-provider': {
    summary:
      'run a mock OpenAI, Anthropic and Gemini provider, or Bedrock, Vertex AI, an MCP server or A2A agents alone (for demos, tests and benchmarks)',
    usage: `switchyard mock-provider --port N --name NAME [--latency-ms N] [--stream-chunk-delay-ms N] [--stream-chunks N] [--host HOST]
                         [--api-key KEY] [--protocol bedrock|vertex|gemini|mcp|a2a] [--token-ttl-s N]
                         [--gcp-public-key FILE | --write-service-account FILE]
                         [--aws-access-key-id AKID --aws-secret-access-key SECRET]
                         [--mcp-tools a,b,...] [--mcp-tool-prefix P] [--mcp-page-size N] [--mcp-response json|sse]
                         [--a2a-versions 1.0,0.3] [--a2a-signed-cards] [--a2a-public-url URL] [--a2a-step-ms N]

Prints "listening on URL": the URL is what a provider's base_url takes (the protocol's own, with
--protocol). Serves on HOST (default 127.0.0.1):
  POST /v1/chat/completions        OpenAI chat, plain and streamed, with tool calls
  POST /v1/messages                Anthropic messages, plain and streamed, tool use, cache_control usage
  POST /v1/messages/count_tokens   Anthropic token count
  POST /v1/embeddings              OpenAI embeddings, deterministic unit vectors
  POST /v1/completions             OpenAI legacy completions, plain and streamed
  POST /v1/responses               OpenAI Responses API, plain and streamed; kept (up to 1000)
                                   unless store is false, for previous_response_id
  GET|DELETE /v1/responses/{id}    a kept response, or 404
  GET  /v1/models
  POST /v1beta/models/{m}:generateContent        Gemini, plain; function calls, thoughts
  POST /v1beta/models/{m}:streamGenerateContent  Gemini, streamed (alt=sse), else a JSON array
With --api-key, the Gemini endpoints want that key (x-goog-api-key or ?key=); any other is
a 400 API_KEY_INVALID, as from Google.
A tool is called when tools are offered and the last user message contains the word "tool"
(or tool_choice forces one); tool results get a final text answer.
Headers x-mock-chunks and x-mock-chunk-delay-ms shape a stream; x-mock-max-tokens: N stops a
text answer at N tokens, as a capped model stops.
Control: GET /__mock/stats, POST /__mock/reset, GET|POST|DELETE /__mock/faults with
{"mode": "status"|"latency"|"close"|"cut_stream"|"hang", "count"?, "status"?, "body"?,
"latency_ms"?, "after_chunks"?}; faults apply to every POST endpoint above, in order.
Azure OpenAI paths (/openai/deployments/{d}/..., /openai/responses) answer the same.
--protocol vertex serves Vertex AI alone: POST /{v1|v1beta1}/projects/{p}/locations/{l}/
publishers/google/models/{m}:generateContent|streamGenerateContent and publishers/anthropic/
models/{m}:rawPredict|streamRawPredict, each wanting a bearer token the mock issued:
  POST /token                      a service account's JWT (jwt-bearer grant) for a token;
                                   with --gcp-public-key FILE (PEM) its signature is verified
  GET  /computeMetadata/v1/...     the GCE metadata server (Metadata-Flavor: Google)
--write-service-account FILE writes a service account key file (0600) whose JWTs the token endpoint
verifies: a vertex provider's gcp.service_account. A FILE that exists already is used as it is.
Tokens live --token-ttl-s seconds (default 3600); GET /__mock/tokens counts them, and
GET|POST|DELETE /__mock/token-faults takes faults for the token routes.
--protocol serves one cloud's API alone (and the control API). With --protocol bedrock:
  POST /model/{modelId}/converse         Bedrock Converse, JSON; tool use, cachePoint usage
  POST /model/{modelId}/converse-stream  the same as an AWS event stream
over HTTP/1.1 and HTTP/2 cleartext (h2c) on the one port. Every request must be SigV4-signed
(service bedrock, any region) with --aws-access-key-id/--aws-secret-access-key, both required:
an unknown key id is a 403 UnrecognizedClientException, a bad or stale (> 5 min) signature a
403 InvalidSignatureException. Fault {"mode": "stream_exception", "exception"?, "after_chunks"?}
puts an exception event (default throttlingException) inside a 200 converse-stream.
--protocol mcp serves an MCP server alone: POST|GET|DELETE /mcp (Streamable HTTP, stateful
sessions, a resumable GET stream) with tools echo, slow, fail, weather, progress and write;
--mcp-tools picks some (or adds chatter, a call that notifies and never ends), --mcp-tool-prefix renames them P<name>, --mcp-page-size N pages
tools/list (default 0: one page), --mcp-response json answers POSTs with JSON (default sse).
With --api-key, /mcp wants Authorization: Bearer KEY (else 401). Faults apply to tools/call
only; cut_stream runs the tool, then drops the connection before its answer. Control:
GET /__mock/mcp (sessions, calls, writes, Authorization seen), POST /__mock/mcp/tools
{"add"?: [{"name", "description"?, "text"?}], "remove"?: [names]} (then tools/list_changed),
POST /__mock/mcp/restart (forget every session), POST /__mock/mcp/drop-streams.
--protocol a2a serves four A2A agents alone, on the official @a2a-js/sdk server:
  POST /{agent}                                JSON-RPC: 1.0 names (SendMessage, SendStreamingMessage,
                                               GetTask, ListTasks, CancelTask, SubscribeToTask, push
                                               configs) and 0.3 names (message/send, message/stream,
                                               tasks/get|cancel|resubscribe, tasks/pushNotificationConfig/*);
                                               streams answer text/event-stream
  GET  /{agent}/.well-known/agent-card.json    its card: 1.0, or with A2A-Version 0.3 or none the
                                               SDK's hybrid 0.3 card
  GET  /                                       {"agents": [{"name", "card_url"}]}
Agents: instant (a message "echo: TEXT"), worker (a task: working, one artifact "chunk i" per
step, --a2a-step-ms apart (default 20), 3 steps or "steps:N" up to 1000, completed; cancelable,
resubscribable), asker (input-required with a question; the next message on the task completes
it with the answer as an artifact), failer (a task that fails when the text says "fail").
--a2a-versions 1.0 or 0.3 serves one version only (a 0.3-only agent has a pure 0.3 card); other
version's method names get -32601. --a2a-signed-cards signs the cards (ES256; the key at
GET /.well-known/jwks.json). --a2a-public-url URL is the base the cards name. Control:
GET /__mock/a2a (requests by "<agent> <method>" and card fetch, the A2A-Version and
Authorization each agent saw last).
Details: docs/mock-provider.md.`,
    options: {
      port: { type: 'string', short: 'p' },
      name: { type: 'string', short: 'n' },
      host: { type: 'string' },
      'latency-ms': { type: 'string' },
      'stream-chunk-delay-ms': { type: 'string' },
      'stream-chunks': { type: 'string' },
      'api-key': { type: 'string' },
      protocol: { type: 'string' },
      'token-ttl-s': { type: 'string' },
      'gcp-public-key': { type: 'string' },
      'write-service-account': { type: 'string' },
      'aws-access-key-id': { type: 'string' },
      'aws-secret-access-key': { type: 'string' },
      'mcp-tools': { type: 'string' },
      'mcp-tool-prefix': { type: 'string' },
      'mcp-page-size': { type: 'string' },
      'mcp-response': { type: 'string' },
      'a2a-versions': { type: 'string' },
      'a2a-signed-cards': { type: 'boolean' },
      'a2a-public-url': { type: 'string' },
      'a2a-step-ms': { type: 'string' },
      help,
    },
    async run(values) {
      type Options = Parameters<typeof startMockProvider>[0];
      const mcpFlags = ['mcp-tools', 'mcp-tool-prefix', 'mcp-page-size', 'mcp-response'] as const;
      const traits = mockProtocolTraits(values.protocol);
      const mcpFlag = mcpFlags.find((flag) => values[flag] !== undefined);
      if (mcpFlag !== undefined && !traits.mcpOptions) throw new UsageError(`--${mcpFlag} only applies with --protocol mcp`);
      const mcpResponse = values['mcp-response'];
      if (mcpResponse !== undefined && mcpResponse !== 'json' && mcpResponse !== 'sse')
        throw new UsageError('--mcp-response must be json or sse');
      const mcp: Partial<Options> = {
        ...(typeof values['mcp-tools'] === 'string'
          ? { mcpTools: values['mcp-tools'].split(',').map((t) => t.trim()) as NonNullable<Options['mcpTools']> }
          : {}),
        ...(typeof values['mcp-tool-prefix'] === 'string' ? { mcpToolPrefix: values['mcp-tool-prefix'] } : {}),
        ...(values['mcp-page-size'] === undefined ? {} : { mcpPageSize: int(values['mcp-page-size'], '--mcp-page-size', 0) }),
        ...(mcpResponse === undefined ? {} : { mcpResponse }),
      };
      const account = serviceAccountOf(values, traits);
      const mock = await startMockProvider({
        ...mcp,
        ...a2aOptions(values, traits),
        ...(typeof values.protocol === 'string' ? { protocol: mockProtocol(values.protocol) } : {}),
        ...(typeof values['api-key'] === 'string' ? { apiKey: requireString(values['api-key'], '--api-key') } : {}),
        ...(values['token-ttl-s'] === undefined ? {} : { tokenTtlS: int(values['token-ttl-s'], '--token-ttl-s', 3600) }),
        ...(typeof values['gcp-public-key'] === 'string'
          ? { gcpPublicKeyPem: readFileSync(requireString(values['gcp-public-key'], '--gcp-public-key'), 'utf8') }
          : {}),
        ...(account === null ? {} : { gcpPublicKeyPem: account.key.publicKeyPem }),
        ...awsKeyPair(values, traits),
        name: requireString(values.name, '--name'),
        port: int(values.port, '--port', 0),
        host: typeof values.host === 'string' ? values.host : '127.0.0.1',
        latencyMs: int(values['latency-ms'], '--latency-ms', 0),
        streamChunkDelayMs: int(values['stream-chunk-delay-ms'], '--stream-chunk-delay-ms', 0),
        streamChunks: int(values['stream-chunks'], '--stream-chunks', 5),
      });
      if (account !== null) {
        try {
          account.key.write(mock.origin);
        } catch (err) {
          await mock.close();
          throw new Error(`cannot write ${account.file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        }
      }
      process.stdout.write(`mock provider ${mock.name} listening on ${traits.baseUrlHint(mock.origin)}\n`);
      if (account !== null) {
        const how = account.key.reused ? 'read' : 'written';
        process.stdout.write(`service account key ${how}: ${account.file} (gcp.service_account; its JWTs are verified)\n`);
      }
      const stop = (): void => void mock.close().then(() => process.exit(0));
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
      return 'running';
    },
  },
  'mock-guardrail': mockGuardrailCommand,
  demo: demoCommand(serve),
  usage: usageCommand,
  audit: {
    summary: "check an audit log's hash chain",
    usage: `switchyard audit verify FILE... [--head SEQ:HASH]

Checks the hash chain of the audit log FILE. Exits 0 when every record chains to the one
before it, or 1 naming the first broken record by line number. An intact file's line also
names each gap its gap records declare (records lost, or a torn record cut at start-up).

Several FILEs (rotated files, in any order) are checked as one chain: each file alone, and,
in order of their first seq, that each one starts with an anchor naming the last record of
the file before it. A missing file, or one whose end was cut, breaks that link.

--head SEQ:HASH  a head taken earlier (GET /admin/status: audit.head_seq, audit.head_hash):
                 fails unless the files still reach seq SEQ and that record hashes to HASH.
                 Cutting the last records of a file leaves it intact on its own; this shows it.`,
    options: { head: { type: 'string' }, help },
    positionals: true,
    async run(values, positionals) {
      if (positionals.length < 2 || positionals[0] !== 'verify') throw new UsageError('expected "audit verify FILE..."');
      const head = values.head === undefined ? null : parseHead(String(values.head));
      const files = positionals.slice(1).map((f) => resolve(f));
      if (files.length === 1 && head === null) {
        // One file: the line it always had.
        const file = files[0] as string;
        const result = await verifyAuditFile(file);
        if (result.ok) {
          process.stdout.write(`${file}: ${describeIntact(result)}\n`);
          return 0;
        }
        process.stderr.write(result.line === 0 ? `${file}: ${result.reason}\n` : `${file}: line ${result.line}: ${result.reason}\n`);
        return 1;
      }
      const set = await verifyAuditSet(files, head);
      if (!set.ok) {
        process.stderr.write(set.line === 0 ? `${set.path}: ${set.reason}\n` : `${set.path}: line ${set.line}: ${set.reason}\n`);
        return 1;
      }
      for (const f of set.files) process.stdout.write(`${f.path}: ${describeIntact(f)}\n`);
      const at = set.head === null ? 'no records' : `head seq ${set.head.seq ?? '?'}:${set.head.hash}`;
      process.stdout.write(
        `${set.files.length} file(s), one chain: ${set.records} record(s), ${set.gaps} gap(s), ${at}` +
          `${head === null ? '' : `; reaches the known head seq ${head.seq} unchanged`}\n`,
      );
      return 0;
    },
  },
  db: dbCommand,
  ...managedCommands(),
  ...publisherCommands(() => packageVersion()),
};

/** `--head SEQ:HASH`: a seq from 1 and a SHA-256 in hex. */
function parseHead(text: string): { seq: number; hash: string } {
  const m = /^([1-9]\d{0,15}):([0-9a-f]{64})$/.exec(text.trim());
  if (m === null) throw new UsageError('--head must be SEQ:HASH (a seq from 1, a colon, the 64 hex digits of its SHA-256)');
  return { seq: Number(m[1]), hash: m[2] as string };
}

/**
 * What serve would do at start-up with this config (overlay included), without listening:
 * the same prepareGeneration, so both give the same verdict on the same file. An overlay
 * file given here replaces the config's routing.overlay.file.
 */
async function validateConfig(
  configPath: string,
  overlayFile: string | undefined,
): Promise<{ issues: readonly ConfigIssue[]; warnings: readonly string[]; overlay: OverlaySnapshot | null }> {
  const pools = new PoolRegistry();
  try {
    const prepared = await prepareGeneration({
      configPath,
      env: process.env,
      serving: null,
      startupConfig: null,
      poolFor: (spec) => pools.acquire(spec),
      overlayFile,
    });
    if (prepared.outcome === 'built') return { issues: [], warnings: prepared.warnings, overlay: prepared.generation.overlay };
    return { issues: prepared.outcome === 'rejected' ? prepared.issues : [], warnings: [], overlay: null };
  } finally {
    await pools.destroyAll();
  }
}

/** `hint`, for a refusal: a line on what to do about these issues (the demo's --port), or null. */
async function serve(
  configPath: string,
  afterShutdown?: () => Promise<void>,
  hint?: (issues: readonly ConfigIssue[]) => string | null,
): Promise<number | 'running'> {
  try {
    await startGateway({
      configPath,
      handleSignals: true,
      version: packageVersion(),
      onShutdown: () => {
        void (afterShutdown?.() ?? Promise.resolve()).finally(() => process.exit(0));
      },
    });
    return 'running';
  } catch (err) {
    if (err instanceof StartupError) {
      process.stderr.write(`switchyard: cannot start with ${configPath}:\n`);
      for (const issue of err.issues) process.stderr.write(`  ${formatIssue(issue)}\n`);
      const advice = hint?.(err.issues) ?? null;
      if (advice !== null) process.stderr.write(`${advice}\n`);
      return 1;
    }
    throw err;
  }
}

function requireString(value: string | boolean | undefined, flag: string): string {
  if (typeof value !== 'string' || value === '') throw new UsageError(`${flag} is required`);
  return value;
}

/** The mock's one AWS key pair: both flags with --protocol bedrock, neither without it. */
function awsKeyPair(
  values: Record<string, string | boolean | undefined>,
  traits: MockProtocolTraits,
): { awsAccessKeyId?: string; awsSecretAccessKey?: string } {
  const bedrock = traits.awsKeys;
  const id = values['aws-access-key-id'];
  const secret = values['aws-secret-access-key'];
  if (!bedrock) {
    if (id !== undefined || secret !== undefined)
      throw new UsageError('--aws-access-key-id and --aws-secret-access-key only apply with --protocol bedrock');
    return {};
  }
  if (typeof id !== 'string' || id === '' || typeof secret !== 'string' || secret === '') {
    throw new UsageError(
      '--protocol bedrock requires --aws-access-key-id and --aws-secret-access-key (the key pair its SigV4 check accepts)',
    );
  }
  return { awsAccessKeyId: id, awsSecretAccessKey: secret };
}

/** --write-service-account FILE: vertex only, and instead of --gcp-public-key (it brings its own key). */
function serviceAccountOf(
  values: Record<string, string | boolean | undefined>,
  traits: MockProtocolTraits,
): { file: string; key: MockServiceAccount } | null {
  const flag = values['write-service-account'];
  if (flag === undefined) return null;
  if (!traits.serviceAccount) throw new UsageError('--write-service-account only applies with --protocol vertex');
  if (values['gcp-public-key'] !== undefined)
    throw new UsageError('--write-service-account and --gcp-public-key both name the key JWTs are verified by: give one');
  const file = resolve(requireString(flag, '--write-service-account'));
  return { file, key: mockServiceAccount(file) };
}

/** The A2A agents' flags as options, refused without --protocol a2a. */
function a2aOptions(
  values: Record<string, string | boolean | undefined>,
  traits: MockProtocolTraits,
): Partial<Parameters<typeof startMockProvider>[0]> {
  const flags = ['a2a-versions', 'a2a-signed-cards', 'a2a-public-url', 'a2a-step-ms'] as const;
  const given = flags.find((flag) => values[flag] !== undefined);
  if (given === undefined) return {};
  if (!traits.a2aOptions) throw new UsageError(`--${given} only applies with --protocol a2a`);
  const versions = values['a2a-versions'];
  let a2aVersions: A2aVersion[] | undefined;
  if (typeof versions === 'string') {
    const list = versions.split(',').map((v) => v.trim());
    if (
      list.length === 0 ||
      !list.every((v): v is A2aVersion => (A2A_VERSIONS as readonly string[]).includes(v)) ||
      new Set(list).size !== list.length
    ) {
      throw new UsageError(`--a2a-versions must list distinct versions among ${A2A_VERSIONS.join(', ')}`);
    }
    a2aVersions = list;
  }
  return {
    ...(a2aVersions === undefined ? {} : { a2aVersions }),
    ...(values['a2a-signed-cards'] === true ? { a2aSignedCards: true } : {}),
    ...(typeof values['a2a-public-url'] === 'string' ? { a2aPublicUrl: values['a2a-public-url'] } : {}),
    ...(values['a2a-step-ms'] === undefined ? {} : { a2aStepMs: int(values['a2a-step-ms'], '--a2a-step-ms', 20) }),
  };
}

function mockProtocol(value: string): MockProtocol {
  const protocol = MOCK_PROTOCOLS.find((p) => p === value);
  if (protocol === undefined) throw new UsageError(`--protocol must be one of ${MOCK_PROTOCOLS.join(', ')}`);
  return protocol;
}

function int(value: string | boolean | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (typeof value !== 'string' || !Number.isInteger(n) || n < 0) throw new UsageError(`${flag} must be a whole number >= 0`);
  return n;
}

/** A publisher error; several issues (an inventory's) one a line, as `validate` prints a config's. */
function publishFailure(err: PublishError): string {
  if (err.issues.length < 2) return `${err.code}: ${err.message}`;
  const lines = err.issues.map((i) => `\n  ${i.path}: ${i.message}`).join('');
  return `${err.code}: ${err.subject}: ${err.issues.length} errors${lines}`;
}

/** From package.json next to dist/ (or src/ under tsx): the one place the version is written. */
function packageVersion(): string {
  const path = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'package.json');
  return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
}

function topHelp(): string {
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(15)} ${c.summary}`);
  return `switchyard: an AI gateway that swaps its routing live

Usage: switchyard <command> [options]

Commands:
${lines.join('\n')}

Run "switchyard <command> --help" for a command's options; "switchyard --version" for the version.
`;
}

export async function main(argv: string[]): Promise<number | 'running'> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-v') {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(topHelp());
    return name === undefined ? 1 : 0;
  }
  const command = commands[name];
  if (command === undefined) {
    process.stderr.write(`switchyard: unknown command "${name}"\n\n${topHelp()}`);
    return 1;
  }
  try {
    const { values, positionals } = parseArgs({
      args: rest,
      options: command.options,
      strict: true,
      allowPositionals: command.positionals === true,
    });
    if (values.help === true) {
      process.stdout.write(`${command.usage}\n`);
      return 0;
    }
    return await command.run(values as Record<string, string | boolean | undefined>, positionals);
  } catch (err) {
    const message = err instanceof PublishError ? publishFailure(err) : err instanceof Error ? err.message : String(err);
    const isUsage = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true;
    process.stderr.write(`switchyard ${name}: ${message}\n${isUsage ? `\n${command.usage}\n` : ''}`);
    return 1;
  }
}
