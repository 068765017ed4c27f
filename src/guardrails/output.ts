import type { CompiledGuardrail, LocalGuardrail, StreamMode } from './compiled.js';
import type { Finding } from './detectors/finding.js';
import { type Dialect, dialectOf, type EventReading, type SseEvent, serialize, splitEvents } from './dialects.js';
import { Mapping, maskText, restoreJsonText, restoreText } from './mask.js';
import { type AskService, type CheckedText, type CheckSubject, runPhase } from './run.js';
import { StreamMasker, StreamRestorer } from './stream.js';
import { answerTexts, filteredAnswer, type TextKind, withTexts } from './texts.js';
import type { GuardrailVerdict } from './verdict.js';

// The output phase: an answer on its way to the client, whole or streamed, in the client's
// protocol. In order: the masking guardrails mask what the model wrote itself (with
// placeholders of their own, never one the request's mapping issued), the blocking ones
// judge the masked text, and restore puts the request's own originals back where the model
// repeated a placeholder. In a stream each text is masked and restored as it flows (holding
// back only what a match could still span), and the blocking guardrails hold the events by
// their mode: `hold` until the answer is whole, `window` until each window of text has
// passed, `after` not at all (judged at the end, recorded, never un-sent).

/** What an answer's guardrails need: the output phase's guardrails, and the request's mapping to restore. */
export interface OutputPlan {
  readonly kind: TextKind;
  readonly guardrails: readonly CompiledGuardrail[];
  /** The request's placeholders, when its input masking is to be restored in the answer; null = none. */
  readonly restore: Mapping | null;
  readonly subject: CheckSubject;
  readonly ask: AskService;
  /** Called once per guardrail with its verdict on the answer. */
  readonly record: (verdict: GuardrailVerdict) => void;
}

/** Whether the plan changes anything in an answer (else no transform is needed). */
export function outputActs(plan: Pick<OutputPlan, 'guardrails' | 'restore'>): boolean {
  return plan.guardrails.length > 0 || (plan.restore !== null && plan.restore.size > 0);
}

/** A mapping for what the model writes itself: it never issues a placeholder the request's mapping did. */
function answerMapping(plan: OutputPlan): Mapping {
  const m = new Mapping();
  if (plan.restore !== null) m.reserveIssued(plan.restore);
  return m;
}

/** A whole 2xx answer (a JSON body in the client's protocol) through the output phase. */
export function guardAnswer(plan: OutputPlan, status: number, body: Buffer | string): Buffer | string | Promise<Buffer | string> {
  if (status >= 300) return body;
  let json: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return body;
    json = parsed as Record<string, unknown>;
  } catch {
    return body;
  }
  const slots = answerTexts(plan.kind, json);
  const run = runPhase({
    phase: 'output',
    guardrails: plan.guardrails,
    texts: slots,
    mapping: answerMapping(plan),
    subject: plan.subject,
    ask: plan.ask,
  });
  const finish = (r: Awaited<typeof run>): Buffer | string => {
    for (const v of r.verdicts) plan.record(v);
    if (r.blocked !== null || r.unavailable !== null) return JSON.stringify(filteredAnswer(plan.kind, json));
    const restore = plan.restore;
    const texts = r.texts.map((t, i) => {
      if (restore === null) return t.text;
      const path = (slots[i] as { path: readonly (string | number)[] }).path;
      // Tool-call arguments are JSON text: an original goes back escaped.
      return path[path.length - 1] === 'arguments' ? restoreJsonText(t.text, restore) : restoreText(t.text, restore);
    });
    if (!r.changed && texts.every((t, i) => t === (slots[i] as CheckedText).text)) return body;
    return JSON.stringify(withTexts(json, slots, texts));
  };
  return run instanceof Promise ? run.then(finish) : finish(run);
}

/** One text of the answer: its maskers, then its restorer. */
class Channel {
  readonly maskers: StreamMasker[];
  readonly restorer: StreamRestorer | null;
  constructor(maskers: StreamMasker[], restorer: StreamRestorer | null) {
    this.maskers = maskers;
    this.restorer = restorer;
  }
}

interface Held {
  /** Bytes for the client, in order. */
  readonly out: string;
  /** The masked text they carry, for the blocking guardrails. */
  readonly text: string;
}

interface Tally {
  categories: Record<string, number>;
  latencyMs: number;
  action: GuardrailVerdict['action'];
  error?: GuardrailVerdict['error'];
}

/**
 * A stream's output phase. `push` takes whole events and returns the bytes the client gets
 * now; `end` the rest. Either returns a promise while a service guardrail is being asked
 * (the relay then waits, and the upstream with it).
 */
export class OutputStream {
  readonly #plan: OutputPlan;
  readonly #dialect: Dialect;
  readonly #maskingGuards: readonly LocalGuardrail[];
  /** Guardrails that judge the text, by when: per window, when whole, after it was sent. */
  readonly #windowGuards: readonly CompiledGuardrail[];
  readonly #holdGuards: readonly CompiledGuardrail[];
  readonly #afterGuards: readonly CompiledGuardrail[];
  readonly #mode: StreamMode;
  readonly #windowChars: number;
  readonly #mapping: Mapping;
  readonly #channels = new Map<string, Channel>();
  /** What each channel has sent the client, restored (a done event's whole text). */
  readonly #emitted = new Map<string, string>();
  readonly #tallies = new Map<string, Tally>();
  /** Events held for the blocking guardrails, with their text. */
  #held: Held[] = [];
  #heldChars = 0;
  /** All the masked text so far (for `hold` and `after`), and the window guardrails' left context. */
  #whole = '';
  #context = '';
  #blocked = false;
  /** The answer ended (its terminal event passed the gate): events after it go straight on. */
  #decided = false;
  #recorded = false;

  constructor(plan: OutputPlan) {
    this.#plan = plan;
    this.#dialect = dialectOf(plan.kind);
    this.#mapping = answerMapping(plan);
    const masking: LocalGuardrail[] = [];
    const windowed: CompiledGuardrail[] = [];
    const held: CompiledGuardrail[] = [];
    const after: CompiledGuardrail[] = [];
    let windowChars = Number.POSITIVE_INFINITY;
    for (const g of plan.guardrails) {
      this.#tallies.set(g.name, { categories: {}, latencyMs: 0, action: 'allow' });
      if (g.kind === 'local' && g.action === 'mask') masking.push(g);
      else if (g.action !== 'block') after.push(g);
      else if (g.stream === 'hold') held.push(g);
      else if (g.stream === 'window') {
        windowed.push(g);
        windowChars = Math.min(windowChars, g.windowChars);
      } else after.push(g);
    }
    this.#maskingGuards = masking;
    this.#windowGuards = windowed;
    this.#holdGuards = held;
    this.#afterGuards = after;
    this.#mode = held.length > 0 ? 'hold' : windowed.length > 0 ? 'window' : 'after';
    this.#windowChars = Number.isFinite(windowChars) ? windowChars : 400;
  }

  push(events: Buffer | string): string | Promise<string> {
    const text = typeof events === 'string' ? events : events.toString('utf8');
    let out = '';
    const parsed = splitEvents(text);
    for (let i = 0; i < parsed.length; i++) {
      const ev = parsed[i] as SseEvent;
      const step = this.#event(ev);
      if (step instanceof Promise) {
        const rest = parsed.slice(i + 1);
        return step.then(async (first) => {
          let all = out + first;
          for (const next of rest) all += await this.#event(next);
          return all;
        });
      }
      out += step;
    }
    return out;
  }

  /** The upstream ended: whatever is held (a stream cut before its terminal event) is judged and sent. */
  end(): string | Promise<string> {
    if (this.#blocked || this.#decided) {
      this.#record();
      return '';
    }
    for (const name of [...this.#channels.keys()]) this.#hold(this.#flushChannel(name));
    const step = this.#judge(true);
    const finish = (blocked: boolean): string => {
      this.#record();
      return blocked ? this.#dialect.onBlock() : this.#release();
    };
    return step instanceof Promise ? step.then(finish) : finish(step);
  }

  #event(ev: SseEvent): string | Promise<string> {
    const reading = this.#dialect.read(ev);
    if (this.#blocked) return this.#dialect.afterBlock(ev, reading) ?? '';
    if (this.#decided) return this.#rewrite(ev, reading).out;
    let out = '';
    let text = '';
    // The channels that end here send what they held, just before this event.
    for (const close of reading.closes) {
      for (const name of this.#matching(close)) {
        const flushed = this.#flushChannel(name);
        out += flushed.out;
        text += flushed.text;
      }
    }
    const written = this.#rewrite(ev, reading);
    this.#hold({ out: out + written.out, text: text + written.text });
    if (reading.terminal) {
      const step = this.#judge(true);
      const after = (blocked: boolean): string => {
        this.#decided = !blocked;
        this.#record();
        if (blocked) return this.#dialect.onBlock() + (this.#dialect.afterBlock(ev, reading) ?? '');
        return this.#release();
      };
      return step instanceof Promise ? step.then(after) : after(step);
    }
    if (this.#mode === 'after') return this.#release();
    if (this.#mode === 'window' && this.#heldChars >= this.#windowChars) {
      const step = this.#judge(false);
      const after = (blocked: boolean): string => (blocked ? this.#dialect.onBlock() : this.#release());
      return step instanceof Promise ? step.then(after) : after(step);
    }
    return '';
  }

  /** The event with its texts masked and restored, and the masked text it carries. */
  #rewrite(ev: SseEvent, reading: EventReading): Held {
    if (reading.deltas.length === 0 && reading.closes.length === 0 && !reading.terminal && reading.json === null)
      return { out: serialize(ev.name, ev.data), text: '' };
    const texts: string[] = [];
    let masked = '';
    let same = true;
    for (const d of reading.deltas) {
      const channel = this.#channel(d.channel, d.json);
      let t = d.text;
      for (const m of channel.maskers) t = m.push(t);
      masked += t;
      const shown = channel.restorer === null ? t : channel.restorer.push(t);
      this.#emitted.set(d.channel, (this.#emitted.get(d.channel) ?? '') + shown);
      texts.push(shown);
      if (shown !== d.text) same = false;
    }
    // An event whose texts went out as they came is sent as it came (no rewrite), unless the dialect must restate it.
    if (same && !this.#dialect.restates(reading)) return { out: serialize(ev.name, ev.data), text: masked };
    return { out: this.#dialect.write(ev, reading, texts, this.#emitted), text: masked };
  }

  #channel(name: string, json: boolean): Channel {
    let c = this.#channels.get(name);
    if (c === undefined) {
      const maskers = this.#maskingGuards.map(
        (g) =>
          new StreamMasker(g.detectors, (text: string, findings: readonly Finding[]) => {
            const tally = this.#tallies.get(g.name) as Tally;
            if (findings.length > 0) tally.action = 'mask';
            for (const f of findings) tally.categories[f.entity] = (tally.categories[f.entity] ?? 0) + 1;
            return maskText(text, findings, this.#mapping);
          }),
      );
      const restore = this.#plan.restore;
      const restorer =
        restore === null || restore.size === 0
          ? null
          : new StreamRestorer(json ? (t) => restoreJsonText(t, restore) : (t) => restoreText(t, restore), restore.longestPlaceholder);
      c = new Channel(maskers, restorer);
      this.#channels.set(name, c);
    }
    return c;
  }

  #matching(close: string): string[] {
    if (close === '*') return [...this.#channels.keys()];
    if (close.endsWith('*')) {
      const prefix = close.slice(0, -1);
      return [...this.#channels.keys()].filter((n) => n.startsWith(prefix) && /^\d*$/.test(n.slice(prefix.length)));
    }
    return this.#channels.has(close) ? [close] : [];
  }

  /** A channel's held-back text, as an event of its own (and the channel closed). */
  #flushChannel(name: string): Held {
    const c = this.#channels.get(name);
    if (c === undefined) return { out: '', text: '' };
    this.#channels.delete(name);
    let masked = '';
    // Each masker's rest goes through the maskers after it, then all of them end in turn.
    for (let i = 0; i < c.maskers.length; i++) {
      let t = (c.maskers[i] as StreamMasker).end();
      for (let j = i + 1; j < c.maskers.length; j++) t = (c.maskers[j] as StreamMasker).push(t);
      masked += t;
    }
    const shown = c.restorer === null ? masked : c.restorer.push(masked) + c.restorer.end();
    if (shown.length === 0) return { out: '', text: masked };
    this.#emitted.set(name, (this.#emitted.get(name) ?? '') + shown);
    return { out: this.#dialect.flush(name, shown), text: masked };
  }

  #hold(h: Held): void {
    if (h.out.length === 0 && h.text.length === 0) return;
    this.#held.push(h);
    this.#heldChars += h.text.length;
    this.#whole += h.text;
  }

  #release(): string {
    let out = '';
    for (const h of this.#held) out += h.out;
    const text = this.#held.map((h) => h.text).join('');
    this.#context = (this.#context + text).slice(-this.#windowChars);
    this.#held = [];
    this.#heldChars = 0;
    return out;
  }

  /**
   * The blocking guardrails on the text held: the window ones on each window (with the
   * window before it as context), and at the end the hold ones on the whole text, and the
   * after ones (recorded only). True when it blocked.
   */
  #judge(last: boolean): boolean | Promise<boolean> {
    const windowText = this.#context + this.#held.map((h) => h.text).join('');
    const steps: Array<{ guards: readonly CompiledGuardrail[]; text: string; blocks: boolean }> = [];
    if (this.#windowGuards.length > 0 && this.#heldChars > 0) steps.push({ guards: this.#windowGuards, text: windowText, blocks: true });
    if (last && this.#holdGuards.length > 0) steps.push({ guards: this.#holdGuards, text: this.#whole, blocks: true });
    if (last && this.#afterGuards.length > 0) steps.push({ guards: this.#afterGuards, text: this.#whole, blocks: false });
    return this.#runSteps(steps, 0);
  }

  #runSteps(
    steps: Array<{ guards: readonly CompiledGuardrail[]; text: string; blocks: boolean }>,
    from: number,
  ): boolean | Promise<boolean> {
    for (let i = from; i < steps.length; i++) {
      const step = steps[i] as (typeof steps)[number];
      const run = runPhase({
        phase: 'output',
        guardrails: step.guards,
        texts: [{ role: 'assistant', text: step.text }],
        mapping: null,
        subject: this.#plan.subject,
        ask: this.#plan.ask,
      });
      const take = (r: Awaited<typeof run>): boolean => {
        for (const v of r.verdicts) this.#tally(v, step.blocks);
        if (step.blocks && (r.blocked !== null || r.unavailable !== null)) {
          this.#blocked = true;
          this.#held = [];
          this.#heldChars = 0;
          return true;
        }
        return false;
      };
      if (run instanceof Promise) return run.then((r) => take(r) || this.#runSteps(steps, i + 1));
      if (take(run)) return true;
    }
    return false;
  }

  #tally(v: GuardrailVerdict, blocks: boolean): void {
    const t = this.#tallies.get(v.guardrail);
    if (t === undefined) return;
    t.latencyMs += v.latencyMs;
    for (const [k, n] of Object.entries(v.categories)) t.categories[k] = (t.categories[k] ?? 0) + n;
    const action = !blocks && v.action === 'block' && v.error === undefined ? 'block' : v.action;
    if (RANK[action] > RANK[t.action]) t.action = action;
    if (v.error !== undefined) t.error = v.error;
  }

  /** One verdict per guardrail for the whole answer, once. */
  #record(): void {
    if (this.#recorded) return;
    this.#recorded = true;
    for (const g of this.#plan.guardrails) {
      const t = this.#tallies.get(g.name) as Tally;
      const verdict: GuardrailVerdict = {
        guardrail: g.name,
        phase: 'output',
        action: t.action,
        categories: t.categories,
        latencyMs: t.latencyMs,
        ...(t.error === undefined ? {} : { error: t.error }),
        ...(g.action === 'block' ? { stream: g.stream } : {}),
      };
      this.#plan.record(verdict);
    }
  }
}

const RANK: Readonly<Record<GuardrailVerdict['action'], number>> = { allow: 0, warn: 1, mask: 2, block: 3 };
