// The control-plane subcommands: `overlay render|publish|verify|diff` and `grid`. cli.ts
// holds the command table; these are its entries for the publisher, kept apart so the
// gateway's commands and the publisher's read on their own.
import { resolve } from 'node:path';
import { type ExpectedScope, MAX_OVERLAY_BYTES, type ParsedOverlay, parseOverlay, readOverlayFile } from '../contract/index.js';
import {
  diffOverlays,
  envelopeFor,
  formatDiff,
  Grid,
  LAYOUTS,
  type Layout,
  type Output,
  OVERLAY_KEY,
  PublishError,
  publishOverlay,
  readInventory,
  renderOverlay,
  serveGrid,
  writeByRename,
} from '../publisher/index.js';
import { createLogger, flushLogger } from '../telemetry/index.js';
import { type Command, help, UsageError } from './command.js';

export function publisherCommands(version: () => string): Record<string, Command> {
  return {
    overlay: {
      summary: 'render, publish, verify or diff routing overlays (contract v1)',
      usage: `switchyard overlay render  --inventory FILE [--out FILE]
switchyard overlay publish --inventory FILE --dir DIR --layout kubelet|rename
switchyard overlay verify  FILE [--expected-scope network=N,gateway=G,namespace=NS,local_site=S]
switchyard overlay diff    OLD NEW

render   prints the v1 envelope for the inventory, or writes it to --out FILE (by rename). It only
         renders: source_generation is 1 and no state file is kept; publish counts generations.
publish  writes DIR/${OVERLAY_KEY}: "kubelet" as the kubelet updates a ConfigMap volume
         (timestamped folder, ..data swapped by one rename, key symlink), "rename" as a temp
         file renamed over the target. The same revision already published: nothing is written.
verify   prints the revision and candidates per model; exit 0 valid, 1 invalid (with the reason).
diff     per model: candidates added, removed, changed in admission, or reweighted.

Every error names its field path and a stable code (inventory_invalid, state_invalid, …).`,
      options: {
        inventory: { type: 'string', short: 'i' },
        out: { type: 'string', short: 'o' },
        dir: { type: 'string', short: 'd' },
        layout: { type: 'string' },
        'expected-scope': { type: 'string' },
        help,
      },
      positionals: true,
      async run(values, positionals) {
        const [sub, ...args] = positionals;
        switch (sub) {
          case 'render':
            return render(values, args, version());
          case 'publish':
            return publish(values, args, version());
          case 'verify':
            return verify(values, args);
          case 'diff':
            return diff(args);
          default:
            throw new UsageError('expected "overlay render", "overlay publish", "overlay verify" or "overlay diff"');
        }
      },
    },
    grid: {
      summary: 'the publisher loop: watch an inventory, probe providers, publish overlays',
      usage: `switchyard grid --inventory FILE --dir DIR [--layout kubelet|rename] [--listen HOST:PORT]

Publishes DIR/${OVERLAY_KEY} (layout kubelet by default) from the inventory FILE and keeps it
current: the inventory is watched (through its directory, like the gateway's overlay watch);
each provider's health URL is probed, and a provider is withdrawn after unhealthy_after failed
probes and restored after healthy_after good ones. A new revision is published only when the
routing it renders changes. An invalid inventory edit is logged and the last published
revision stays. --listen serves GET /metrics and GET /status. SIGTERM or SIGINT stops it.`,
      options: {
        inventory: { type: 'string', short: 'i' },
        dir: { type: 'string', short: 'd' },
        layout: { type: 'string' },
        listen: { type: 'string' },
        help,
      },
      async run(values) {
        return grid(values, version());
      },
    },
  };
}

type Values = Record<string, string | boolean | undefined>;

/**
 * Rendering stops at the rendered envelope (docs/overlay-format.md, the lifecycle): printed, or
 * written to --out FILE by rename, never published. It keeps no state, so it is always
 * generation 1 under a uid named for the scope; `overlay publish` counts generations.
 */
async function render(values: Values, args: readonly string[], version: string): Promise<number> {
  noArgs(args, 'overlay render');
  const inventory = await readInventory(resolve(requireString(values.inventory, '--inventory')));
  const rendered = renderOverlay(inventory);
  const uid = `preview-${inventory.network}-${inventory.gateway}`.replace(/[^A-Za-z0-9_.:-]/g, '-').slice(0, 128);
  const envelope = envelopeFor(inventory, rendered, {
    sourceUid: uid,
    sourceGeneration: 1,
    producerVersion: version,
    renderedAt: new Date(),
  });
  const text = `${JSON.stringify(envelope, null, 2)}\n`;
  if (typeof values.out !== 'string') {
    process.stdout.write(text);
    return 0;
  }
  const out = resolve(requireString(values.out, '--out'));
  try {
    await writeByRename(out, text);
  } catch (err) {
    throw new PublishError(
      'write_failed',
      `cannot write ${JSON.stringify(out)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  const count = rendered.payload.candidates.length;
  process.stdout.write(`${out}: rendered revision ${rendered.revision}, ${count} candidate(s); not published (see "overlay publish")\n`);
  return 0;
}

async function publish(values: Values, args: readonly string[], version: string): Promise<number> {
  noArgs(args, 'overlay publish');
  const inventory = await readInventory(resolve(requireString(values.inventory, '--inventory')));
  const output = outputOf(requireString(values.dir, '--dir'), requireString(values.layout, '--layout'));
  return reportPublish(await publishOverlay(inventory, renderOverlay(inventory), output, { producerVersion: version }));
}

function reportPublish(outcome: Awaited<ReturnType<typeof publishOverlay>>): number {
  if (outcome.result === 'unchanged') {
    process.stdout.write(`${outcome.path}: revision ${outcome.revision} is already published; nothing written\n`);
  } else {
    process.stdout.write(`${outcome.path}: published revision ${outcome.revision} (source_generation ${outcome.sourceGeneration})\n`);
  }
  return 0;
}

async function verify(values: Values, args: readonly string[]): Promise<number> {
  if (args.length !== 1) throw new UsageError('expected "overlay verify FILE"');
  const file = resolve(args[0] as string);
  const expected = typeof values['expected-scope'] === 'string' ? parseExpectedScope(values['expected-scope']) : undefined;
  const read = await readOverlayFile(file, MAX_OVERLAY_BYTES);
  const parsed = read.ok ? parseOverlay(read.bytes, expected === undefined ? {} : { expectedScope: expected }) : read;
  if (!parsed.ok) {
    process.stdout.write(`${file}: invalid\n`);
    process.stderr.write(`error (${parsed.reason}): ${parsed.message}\n`);
    return 1;
  }
  const o = parsed.overlay;
  const lines = [`${file}: valid (${o.format})`, `revision: ${o.revision}`];
  if (o.provenance) lines.push(`source: ${o.provenance.source_uid} generation ${o.provenance.source_generation}`);
  lines.push(`candidates: ${o.candidates.length}${o.candidates.length === 0 ? ' (an authoritative no-route revision)' : ''}`);
  for (const [model, n] of Object.entries(countByModel(o)).sort()) lines.push(`  ${model}: ${n}`);
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

async function diff(args: readonly string[]): Promise<number> {
  if (args.length !== 2) throw new UsageError('expected "overlay diff OLD NEW"');
  const [before, after] = await Promise.all(args.map((a) => readValid(resolve(a))));
  process.stdout.write(formatDiff(diffOverlays(before as ParsedOverlay, after as ParsedOverlay)));
  return 0;
}

async function grid(values: Values, version: string): Promise<number | 'running'> {
  const inventoryPath = resolve(requireString(values.inventory, '--inventory'));
  const output = outputOf(requireString(values.dir, '--dir'), typeof values.layout === 'string' ? values.layout : 'kubelet');
  const listen = typeof values.listen === 'string' ? splitListen(values.listen) : null;
  const logger = createLogger({ level: 'info' });
  const loop = await Grid.start({ inventoryPath, output, producerVersion: version, logger });
  const http = listen === null ? null : await serveGrid(loop, listen.host, listen.port);
  // The watch and the probe timers do not hold the process open (the gateway's watch is
  // unref'd by design); without --listen nothing else would, and the loop would exit at once.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  logger.info({ msg: 'grid running', url: http?.url ?? null, inventory: inventoryPath, dir: 'dir' in output ? output.dir : output.file });
  const stop = (signal: string): void => {
    logger.info({ msg: 'grid stopping', signal });
    clearInterval(keepAlive);
    void loop
      .close()
      .then(() => new Promise<void>((r) => (http === null ? r() : http.server.close(() => r()))))
      .finally(() => {
        logger.info({ msg: 'grid stopped' });
        flushLogger(logger);
        process.exit(0);
      });
    http?.server.closeAllConnections();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  return 'running';
}

async function readValid(file: string): Promise<ParsedOverlay> {
  const read = await readOverlayFile(file, MAX_OVERLAY_BYTES);
  const parsed = read.ok ? parseOverlay(read.bytes) : read;
  if (!parsed.ok) throw new PublishError('render_refused', `${file}: ${parsed.reason}: ${parsed.message}`);
  return parsed.overlay;
}

function countByModel(o: ParsedOverlay): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const c of o.candidates) counts[c.name] = (counts[c.name] ?? 0) + 1;
  return counts;
}

function outputOf(dir: string, layout: string): Output {
  if (!(LAYOUTS as readonly string[]).includes(layout)) throw new UsageError(`--layout must be one of: ${LAYOUTS.join(', ')}`);
  const abs = resolve(dir);
  return (layout as Layout) === 'kubelet'
    ? { layout: 'kubelet', dir: abs, key: OVERLAY_KEY }
    : { layout: 'rename', file: resolve(abs, OVERLAY_KEY) };
}

const SCOPE_KEYS = ['network', 'gateway', 'namespace', 'local_site'] as const;

function parseExpectedScope(text: string): ExpectedScope {
  const scope: ExpectedScope = {};
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (eq <= 0 || value === '' || !(SCOPE_KEYS as readonly string[]).includes(key)) {
      throw new UsageError(`--expected-scope takes key=value pairs separated by commas, keys: ${SCOPE_KEYS.join(', ')}`);
    }
    scope[key as (typeof SCOPE_KEYS)[number]] = value;
  }
  return scope;
}

function splitListen(text: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text);
  const port = Number(m?.[2]);
  if (m === null || port > 65535) throw new UsageError('--listen must be HOST:PORT, e.g. 127.0.0.1:9400');
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}

function noArgs(args: readonly string[], what: string): void {
  if (args.length > 0) throw new UsageError(`${what} takes no positional arguments (got ${args.join(' ')})`);
}

function requireString(value: string | boolean | undefined, flag: string): string {
  if (typeof value !== 'string' || value === '') throw new UsageError(`${flag} is required`);
  return value;
}
