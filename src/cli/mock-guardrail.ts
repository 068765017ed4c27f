import { type MockGuardrailBehavior, startMockGuardrailService } from '../mock/index.js';
import { type Command, help, UsageError } from './command.js';

// `switchyard mock-guardrail`: the mock guardrail service alone, for a gateway's nemo and
// webhook guardrails in a demo or a test that runs the gateway in another process (which
// then drives it over POST /__mock/behavior). See docs/mock-provider.md.

export const mockGuardrailCommand: Command = {
  summary: "run a mock guardrail service (NeMo Guardrails' checks API and the webhook guardrail's contract)",
  usage: `switchyard mock-guardrail [--port N] [--host HOST] [--trigger WORD] [--mask-word WORD] [--replacement TEXT]

Prints "listening on URL": URL is a nemo guardrail's base_url, URL/check a webhook guardrail's
url. Serves on HOST (default 127.0.0.1), port N (default 0, any free one):
  POST /v1/guardrail/checks   NeMo Guardrails' checks API ({status, rails_status[, messages]})
  POST /check                 the webhook contract ({action, texts?, categories?, reason?})
By default a check whose texts hold --trigger (default "forbidden") is blocked (category
"forbidden"), one holding --mask-word has each occurrence replaced by --replacement (default
"[MASKED]"), and the rest are allowed. Control: POST /__mock/behavior {"mode": "rule"|"allow"|
"block"|"mask"|"modified"|"timeout"|"garbage"|"status"|"oversize"|"answer", ...}, POST
/__mock/reset, GET /__mock/received (each check's api, headers and body).
Details: docs/mock-provider.md.`,
  options: {
    port: { type: 'string', short: 'p' },
    host: { type: 'string' },
    trigger: { type: 'string' },
    'mask-word': { type: 'string' },
    replacement: { type: 'string' },
    help,
  },
  async run(values) {
    const port = values.port === undefined ? 0 : Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new UsageError('--port must be a port number');
    const text = (flag: string): string | undefined => {
      const value = values[flag];
      if (value === undefined) return undefined;
      if (typeof value !== 'string' || value === '') throw new UsageError(`--${flag} must not be empty`);
      return value;
    };
    const trigger = text('trigger');
    const word = text('mask-word');
    const replacement = text('replacement');
    const behavior: MockGuardrailBehavior = {
      mode: 'rule',
      ...(trigger === undefined ? {} : { trigger }),
      ...(word === undefined ? {} : { word }),
      ...(replacement === undefined ? {} : { replacement }),
    };
    const mock = await startMockGuardrailService({ port, host: text('host') ?? '127.0.0.1', behavior });
    process.stdout.write(`mock guardrail service listening on ${mock.url} (nemo base_url; webhook url: ${mock.url}/check)\n`);
    const stop = (): void => void mock.close().then(() => process.exit(0));
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    return 'running';
  },
};
