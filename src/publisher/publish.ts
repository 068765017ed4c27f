// One publish: render -> check with the contract's own parser -> bump the generation ->
// write atomically. Nothing the gateway would refuse is ever written.
import { randomUUID } from 'node:crypto';
import { checkSuccession, MAX_OVERLAY_BYTES, type ParsedOverlay, parseOverlay, readOverlayFile } from '../contract/index.js';
import type { Inventory } from './inventory.js';
import { PublishError } from './issues.js';
import { type Output, statePathFor, visiblePath, writeOutput } from './output.js';
import { type Envelope, envelopeFor, type RenderedOverlay } from './render.js';
import { readState, writeState } from './state-file.js';

export interface PublishOptions {
  readonly producerVersion: string;
  readonly now?: () => Date;
}

export type PublishOutcome =
  | {
      readonly result: 'written';
      readonly revision: string;
      readonly sourceGeneration: number;
      readonly path: string;
      readonly envelope: Envelope;
    }
  | { readonly result: 'unchanged'; readonly revision: string; readonly sourceGeneration: number | null; readonly path: string };

/** What is published at `output` now, when it is a valid overlay; null otherwise. */
export async function readPublished(output: Output): Promise<ParsedOverlay | null> {
  const read = await readOverlayFile(visiblePath(output), MAX_OVERLAY_BYTES);
  if (!read.ok) return null;
  const parsed = parseOverlay(read.bytes);
  return parsed.ok ? parsed.overlay : null;
}

/**
 * Publishes `rendered` at `output`, unless the same revision, under the same scope, is
 * already there (then nothing is written). The state file is written before the overlay: a
 * crash between the two leaves a skipped generation, which is harmless, never a reused one.
 */
export async function publishOverlay(
  inventory: Inventory,
  rendered: RenderedOverlay,
  output: Output,
  options: PublishOptions,
): Promise<PublishOutcome> {
  const now = options.now ?? (() => new Date());
  const path = visiblePath(output);
  const published = await readPublished(output);
  if (published !== null && published.revision === rendered.revision && sameScope(published, inventory)) {
    return { result: 'unchanged', revision: rendered.revision, sourceGeneration: published.provenance?.source_generation ?? null, path };
  }
  const statePath = statePathFor(output);
  const state = await readState(statePath);
  // No state yet but an envelope already published (the state was removed, or another
  // producer wrote it): continue its source from its generation rather than roll it back.
  const sourceUid = state?.sourceUid ?? published?.provenance?.source_uid ?? randomUUID();
  const previous = Math.max(
    state?.sourceGeneration ?? 0,
    published?.provenance?.source_uid === sourceUid ? published.provenance.source_generation : 0,
  );
  if (previous >= Number.MAX_SAFE_INTEGER)
    throw new PublishError('state_invalid', `${statePath}: source_generation cannot rise any further`);
  const sourceGeneration = previous + 1;
  const envelope = envelopeFor(inventory, rendered, {
    sourceUid,
    sourceGeneration,
    producerVersion: options.producerVersion,
    renderedAt: now(),
  });
  const text = `${JSON.stringify(envelope, null, 2)}\n`;
  const checked = checkEnvelope(text, rendered.revision, published);
  await writeState(statePath, { sourceUid, sourceGeneration, revision: rendered.revision }, now());
  await writeOutput(output, text);
  return { result: 'written', revision: checked.revision, sourceGeneration, path, envelope };
}

/** The contract's verdict on what is about to be written: it must parse, and must succeed what is published. */
export function checkEnvelope(text: string, revision: string, published: ParsedOverlay | null): ParsedOverlay {
  const parsed = parseOverlay(text);
  if (!parsed.ok) throw new PublishError('render_refused', `the rendered overlay fails the contract (${parsed.reason}): ${parsed.message}`);
  if (parsed.overlay.revision !== revision) {
    throw new PublishError('render_refused', `the rendered overlay's revision ${parsed.overlay.revision} is not the computed ${revision}`);
  }
  const succession = checkSuccession(published ?? undefined, parsed.overlay);
  if (!succession.ok) throw new PublishError('render_refused', succession.message);
  return parsed.overlay;
}

function sameScope(published: ParsedOverlay, inventory: Inventory): boolean {
  const s = published.scope;
  return (
    s !== undefined &&
    s.network === inventory.network &&
    s.gateway === inventory.gateway &&
    s.namespace === inventory.namespace &&
    s.local_site === inventory.local_site
  );
}
