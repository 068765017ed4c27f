import type { ProviderPool } from '../providers/index.js';
import { type AgentCardView, readCard } from './card.js';
import { callAgent } from './upstream.js';

// The upstream agents' cards, read at start, on every reload that brings a new agent (or
// moves one), and again every `a2a.card_recheck_ms`. A card is bounded in size and must be
// JSON that names a JSON-RPC interface; a card that fails to load leaves the last good one
// in place (an agent that answered once keeps its endpoint through a blip), with the
// problem kept for the status page. Outlives generations: built once, told of each one.

/** One upstream agent whose card is kept. */
export interface CardTarget {
  /** The provider's name. */
  readonly name: string;
  readonly cardUrl: string;
  readonly pool: ProviderPool;
  /** The provider's extra headers and its bearer, as a call to it carries them. */
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

export interface CardState {
  /** The card, as last read well; null until one was. */
  readonly view: AgentCardView | null;
  /** Why the last read failed; null when it did not. */
  readonly problem: string | null;
  /** When the card was last read well (epoch ms); null = never. */
  readonly readAt: number | null;
}

export interface AgentCardsOptions {
  readonly maxCardBytes: number;
  /** 0 = only at start and on reloads. */
  readonly recheckMs: number;
  /** A card changed or failed to load: for the log. */
  readonly onProblem?: (name: string, problem: string) => void;
}

const NO_CARD: CardState = Object.freeze({ view: null, problem: 'the card has not been read yet', readAt: null });

interface Entry {
  target: CardTarget;
  state: CardState;
  reading: Promise<void> | null;
  /** Reads failed in a row; a card-less agent's retry waits longer after each. */
  failures: number;
  retry: NodeJS.Timeout | null;
}

const RETRY_BASE_MS = 1000;
const RETRY_MAX_MS = 60_000;

export class AgentCards {
  #options: AgentCardsOptions;
  /** By `<name> <cardUrl>`: a reload that moves a provider reads its new card. */
  #entries = new Map<string, Entry>();
  #byName = new Map<string, Entry>();
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(options: AgentCardsOptions) {
    this.#options = options;
    this.#schedule();
  }

  /** A reload's bounds: the size limit applies to the next read, a new recheck period at once. */
  configure(options: Omit<AgentCardsOptions, 'onProblem'>): void {
    const recheckChanged = options.recheckMs !== this.#options.recheckMs;
    this.#options = { ...this.#options, ...options };
    if (recheckChanged) this.#schedule();
  }

  #schedule(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    if (this.#options.recheckMs > 0 && !this.#closed) {
      this.#timer = setInterval(() => void this.refresh(), this.#options.recheckMs);
      this.#timer.unref();
    }
  }

  /**
   * The agents of a new generation: a new (or moved) one's card is read now, a gone one's
   * forgotten. Resolves once every new card has been read or has failed.
   */
  sync(targets: readonly CardTarget[]): Promise<void> {
    const next = new Map<string, Entry>();
    const byName = new Map<string, Entry>();
    const reads: Promise<void>[] = [];
    for (const target of targets) {
      const key = `${target.name} ${target.cardUrl}`;
      let entry = this.#entries.get(key);
      if (entry === undefined) {
        entry = { target, state: NO_CARD, reading: null, failures: 0, retry: null };
        reads.push(this.#read(entry));
      } else entry.target = target;
      next.set(key, entry);
      byName.set(target.name, entry);
    }
    this.#entries = next;
    this.#byName = byName;
    return Promise.all(reads).then(() => undefined);
  }

  /** Reads every card again (the recheck), or one agent's. */
  refresh(name?: string): Promise<void> {
    const entries = name === undefined ? [...this.#entries.values()] : [this.#byName.get(name)].filter((e) => e !== undefined);
    return Promise.all(entries.map((e) => this.#read(e))).then(() => undefined);
  }

  /** Reads a provider's card now when none has been read well yet (or waits for the read under way). */
  refreshIfUnread(name: string): Promise<void> {
    const entry = this.#byName.get(name);
    if (entry === undefined || entry.state.view !== null) return Promise.resolve();
    return this.#read(entry);
  }

  /** The card of a provider, by its name. */
  stateOf(name: string): CardState {
    return this.#byName.get(name)?.state ?? NO_CARD;
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    for (const entry of this.#entries.values()) if (entry.retry !== null) clearTimeout(entry.retry);
  }

  #retryLater(entry: Entry): void {
    if (entry.retry !== null || this.#closed) return;
    const wait = Math.min(RETRY_BASE_MS * 2 ** entry.failures, RETRY_MAX_MS);
    entry.failures += 1;
    entry.retry = setTimeout(() => {
      entry.retry = null;
      // Only while the agent is still served and still has no card.
      if (this.#byName.get(entry.target.name) === entry && entry.state.view === null) void this.#read(entry);
    }, wait);
    entry.retry.unref();
  }

  #read(entry: Entry): Promise<void> {
    if (entry.reading !== null) return entry.reading;
    const reading = readOne(entry.target, this.#options.maxCardBytes).then((result) => {
      entry.reading = null;
      if (this.#closed) return;
      if ('view' in result) {
        entry.state = Object.freeze({ view: result.view, problem: null, readAt: Date.now() });
        entry.failures = 0;
      } else {
        entry.state = Object.freeze({ view: entry.state.view, problem: result.problem, readAt: entry.state.readAt });
        this.#options.onProblem?.(entry.target.name, result.problem);
        // An agent with no card yet is tried again soon (1 s, doubling to 1 min), not only at the recheck.
        if (entry.state.view === null) this.#retryLater(entry);
      }
    });
    entry.reading = reading;
    return reading;
  }
}

/** One read of one card: its view, or why there is none. */
async function readOne(target: CardTarget, maxCardBytes: number): Promise<{ view: AgentCardView } | { problem: string }> {
  const url = new URL(target.cardUrl);
  const controller = new AbortController();
  const end = await callAgent({
    pool: target.pool,
    method: 'GET',
    path: `${url.pathname}${url.search}`,
    // The newest version's card: an agent that speaks 1.0 lists every interface it has.
    headers: { ...target.headers, accept: 'application/json', 'a2a-version': '1.0' },
    body: null,
    timeoutMs: target.timeoutMs,
    totalMs: target.timeoutMs,
    maxEventBytes: maxCardBytes,
    signal: controller.signal,
  }).done;
  if (end.kind === 'failed')
    return { problem: end.reason === 'too_large' ? `the card is larger than a2a.max_card_bytes (${maxCardBytes})` : end.detail };
  if (end.kind === 'stream') return { problem: 'the card URL answered with an event stream' };
  if (end.status !== 200) return { problem: `the card URL answered ${end.status}` };
  let json: unknown;
  try {
    json = JSON.parse(end.body.toString('utf8'));
  } catch {
    return { problem: 'the card is not JSON' };
  }
  const view = readCard(json, target.cardUrl);
  return 'error' in view ? { problem: `the card ${view.error}` } : { view };
}
