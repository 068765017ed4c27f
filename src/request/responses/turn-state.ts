import type { GenerationCandidate } from '../../live/index.js';
import type { Item } from '../../responses/index.js';

// What a Responses request carries as a turn of the conversation the gateway holds (read by
// turn.ts before the request is routed), apart from how it is read, so the request's own
// type can name it.

/** What the committed attempt's answer gives the store once it has been relayed. */
export interface TurnAnswer {
  /** The candidate that answered; null for a turn the gateway answered itself (its own tools' loop). */
  readonly candidate: GenerationCandidate | null;
  /** The provider identity whose own Responses API wrote the answer (it keeps its items too); absent when the gateway wrote it. */
  readonly origin?: string;
  /** The Response object the client was given, read once the answer is whole; null when it failed or could not be read. */
  response(): Record<string, unknown> | null;
}

/** The answer of the attempt that committed: each attempt's upstream() sets it, and the last one set is the committed one (attempts run one after another). */
export class AnswerSlot {
  #answer: TurnAnswer | null = null;
  set(answer: TurnAnswer): void {
    this.#answer = answer;
  }
  get(): TurnAnswer | null {
    return this.#answer;
  }
}

export interface ResponsesTurn {
  /** This turn's input items, each with its id, references resolved: what is stored as its input. */
  readonly input: readonly Item[];
  /** The items of the turns before it, oldest first: the chain of previous responses, or the conversation. */
  readonly history: readonly Item[];
  /**
   * Whether the upstream body must be written by the gateway (a history, a resolved
   * reference, a conversation): false keeps the client's bytes for a provider that speaks
   * the Responses API.
   */
  readonly rewritten: boolean;
  readonly previousResponseId: string | null;
  /** The previous response's chain with it: the new record's ancestors. */
  readonly ancestors: readonly string[];
  readonly conversation: string | null;
  /**
   * Reasoning items of the conversation that a provider's own Responses API wrote and keeps,
   * by id, with that provider's identity: sent back to it by reference, since the gateway
   * holds only their summary.
   */
  readonly heldBy: ReadonlyMap<string, string>;
  /**
   * The previous response is not in the gateway's store: it was created before the gateway
   * kept responses, and only the provider that made it holds it. The response-owner table
   * (ADR 0014's pinning) decides where it goes, and the client's bytes go there as they are.
   */
  readonly legacy: boolean;
  /** Whether the response is kept (`store`, default true). */
  readonly store: boolean;
  /** The id a response the gateway writes (a translated one) is given. */
  readonly responseId: string;
  /** Unix seconds. */
  readonly createdAt: number;
  readonly answer: AnswerSlot;
}
