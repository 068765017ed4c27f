import { EventStreamCodec } from '@smithy/eventstream-codec';
import { answerId } from './bedrock-response.js';
import { bedrockErrorType, framePayload, statusOfBedrockError, stopReasonFromBedrock } from './bedrock-wire.js';
import type { StreamSink } from './stream-sink.js';
import type { StopReason } from './types.js';
import { isRecord } from './types.js';
import { usageFromBedrock } from './usage.js';

// Bedrock's ConverseStream: not server-sent events but AWS's binary event stream
// (`application/vnd.amazon.eventstream`). Each frame is a 4-byte total length, a 4-byte
// headers length, a prelude CRC, headers, a JSON payload and a message CRC; the frame's
// headers say what it is (`:message-type` event or exception, `:event-type` or
// `:exception-type`). Frames are cut here by their length; the codec checks both CRCs and
// reads the headers. The answer is messageStart, content blocks (start, deltas, stop),
// messageStop with the stop reason, then metadata with the usage: whole only after that,
// or at the body's end after messageStop.

/** The smallest frame: prelude (12 bytes) and message CRC (4), no headers, no payload. */
const MIN_FRAME_BYTES = 16;

const EMPTY: Buffer = Buffer.alloc(0);

/**
 * Cuts an event-stream body, split anywhere, into whole frames by their length prefix,
 * holding back the frame still open at a chunk's end. A frame whose length says it is over
 * the bound (or under the smallest a frame can be) stops it: nothing is read after that.
 */
export class EventStreamFrames {
  readonly #maxFrameBytes: number;
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** The open frame's length, once its first 4 bytes arrived; 0 before. */
  #need = 0;
  #frames = 0;
  #broken = false;

  constructor(maxFrameBytes: number) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  /** Whole frames read so far. */
  get events(): number {
    return this.#frames;
  }

  /** The bytes of the frames this chunk completes (empty when none); null once a frame broke the bound. */
  push(chunk: Buffer): Buffer | null {
    if (this.#broken) return null;
    if (chunk.length === 0) return EMPTY;
    // The open frame still lacks bytes after this chunk: keep it, copy nothing.
    if (this.#need > 0 && this.#heldBytes + chunk.length < this.#need) {
      this.#held.push(chunk);
      this.#heldBytes += chunk.length;
      return EMPTY;
    }
    const bytes = this.#held.length === 0 ? chunk : Buffer.concat([...this.#held, chunk], this.#heldBytes + chunk.length);
    let at = 0;
    this.#need = 0;
    while (bytes.length - at >= 4) {
      const length = bytes.readUInt32BE(at);
      if (length < MIN_FRAME_BYTES || length > this.#maxFrameBytes) {
        this.#broken = true;
        this.#held = [];
        this.#heldBytes = 0;
        return null;
      }
      if (bytes.length - at < length) {
        this.#need = length;
        break;
      }
      at += length;
      this.#frames += 1;
    }
    const rest = bytes.subarray(at);
    this.#held = rest.length === 0 ? [] : [rest];
    this.#heldBytes = rest.length;
    return bytes.subarray(0, at);
  }

  /** The stream ended: the bytes of a frame left incomplete (empty when none). */
  end(): Buffer {
    const rest = this.#held.length === 0 ? EMPTY : Buffer.concat(this.#held, this.#heldBytes);
    this.#held = [];
    this.#heldBytes = 0;
    return rest;
  }

  /** Each whole frame in `bytes` (what push returned). */
  static split(bytes: Buffer): Buffer[] {
    const frames: Buffer[] = [];
    for (let at = 0; bytes.length - at >= MIN_FRAME_BYTES; ) {
      const length = bytes.readUInt32BE(at);
      if (length < MIN_FRAME_BYTES || at + length > bytes.length) break;
      frames.push(bytes.subarray(at, at + length));
      at += length;
    }
    return frames;
  }
}

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);

/** A header's string value; '' when absent or not a string. */
function header(headers: Record<string, { type: string; value: unknown }>, name: string): string {
  const h = headers[name];
  return h !== undefined && typeof h.value === 'string' ? h.value : '';
}

/**
 * Whether the frames in `bytes` (whole, as EventStreamFrames.push returned them) end the
 * answer short: an exception or error frame, or a frame that fails its prelude or message
 * CRC (the decoder stops there, so nothing after it is the provider's answer). Every frame
 * is decoded for its CRCs, about 2 µs for a 170-byte delta: a word search for `exception`
 * cannot see a corrupt frame.
 */
export function holdsFailedFrame(bytes: Buffer): boolean {
  for (const frame of EventStreamFrames.split(bytes)) {
    try {
      const type = header(codec.decode(frame).headers, ':message-type');
      if (type === 'exception' || type === 'error') return true;
    } catch {
      return true;
    }
  }
  return false;
}

export class BedrockStreamDecoder {
  readonly #sink: StreamSink;
  readonly #frames: EventStreamFrames;
  readonly #model: string;
  #started = false;
  #overflowed = false;
  /** messageStop's reason, held until metadata brings the usage (an encoder writes its last event on the finish). */
  #stop: StopReason | null | undefined;
  #finished = false;
  #failed = false;
  /** Converse's contentBlockIndex of a tool use -> its canonical tool number. */
  readonly #tools = new Map<number, number>();
  /** Tools whose input has had a piece: one that had none gets `{}` at its block's stop. */
  readonly #withInput = new Set<number>();

  /** `model`: the upstream model, which Converse does not name in its answer; '' when unknown. */
  constructor(sink: StreamSink, maxFrameBytes: number, model = '') {
    this.#sink = sink;
    this.#frames = new EventStreamFrames(maxFrameBytes);
    this.#model = model;
  }

  /** messageStop arrived: the answer is whole when the stream ends. */
  get finished(): boolean {
    return this.#stop !== undefined || this.#finished;
  }

  /** A frame broke the bound: the stream must end with the client's error event. */
  get overflowed(): boolean {
    return this.#overflowed;
  }

  push(chunk: Buffer | string): void {
    if (this.#failed || this.#overflowed) return;
    const bytes = this.#frames.push(typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk);
    if (bytes === null) {
      this.#overflowed = true;
      return;
    }
    for (const frame of EventStreamFrames.split(bytes)) {
      this.#frame(frame);
      if (this.#failed) return;
    }
  }

  /** The stream ended: a finish held for metadata that never came is given now. */
  end(): void {
    this.#frames.end();
    if (this.#stop !== undefined && !this.#finished && !this.#failed) {
      this.#finished = true;
      this.#sink.finish(this.#stop, null);
    }
  }

  #frame(frame: Buffer): void {
    let message: ReturnType<typeof codec.decode>;
    try {
      message = codec.decode(frame);
    } catch {
      return this.#error(502, 'the provider sent a corrupt event-stream frame');
    }
    const headers = message.headers as Record<string, { type: string; value: unknown }>;
    const kind = header(headers, ':message-type');
    const payload = framePayload(message.body) ?? {};
    if (kind === 'exception') {
      const type = bedrockErrorType(header(headers, ':exception-type'));
      const text = typeof payload.message === 'string' ? payload.message : typeof payload.Message === 'string' ? payload.Message : null;
      return this.#error(statusOfBedrockError(type, 502), text ?? `the provider reported ${type ?? 'an error'}`);
    }
    if (kind === 'error') return this.#error(502, header(headers, ':error-message') || 'the provider reported an error');
    if (kind === 'event') this.#event(header(headers, ':event-type'), payload);
  }

  #error(status: number, message: string): void {
    this.#failed = true;
    this.#sink.error(status, message);
  }

  #event(type: string, e: Record<string, unknown>): void {
    const sink = this.#sink;
    if (!this.#started && type !== 'metadata') {
      this.#started = true;
      sink.start(answerId(), this.#model);
    }
    switch (type) {
      case 'contentBlockStart': {
        const use = isRecord(e.start) && isRecord(e.start.toolUse) ? e.start.toolUse : null;
        if (use === null || typeof use.toolUseId !== 'string' || typeof use.name !== 'string') return;
        const tool = this.#tools.size;
        this.#tools.set(typeof e.contentBlockIndex === 'number' ? e.contentBlockIndex : -1 - tool, tool);
        sink.toolStart(tool, use.toolUseId, use.name);
        return;
      }
      case 'contentBlockDelta': {
        const delta = isRecord(e.delta) ? e.delta : {};
        if (typeof delta.text === 'string') {
          if (delta.text !== '') sink.text(delta.text);
        } else if (isRecord(delta.toolUse)) {
          const tool = this.#tools.get(typeof e.contentBlockIndex === 'number' ? e.contentBlockIndex : -1);
          if (tool !== undefined && typeof delta.toolUse.input === 'string' && delta.toolUse.input !== '') {
            this.#withInput.add(tool);
            sink.toolArguments(tool, delta.toolUse.input);
          }
        } else if (isRecord(delta.reasoningContent)) {
          const r = delta.reasoningContent;
          if (typeof r.text === 'string' && r.text !== '') sink.thinking(r.text);
          if (typeof r.signature === 'string' && r.signature !== '') sink.thinkingSignature(r.signature);
        }
        return;
      }
      case 'contentBlockStop': {
        // A tool without arguments streams no input: its client still needs JSON to parse.
        const tool = this.#tools.get(typeof e.contentBlockIndex === 'number' ? e.contentBlockIndex : -1);
        if (tool !== undefined && !this.#withInput.has(tool)) {
          this.#withInput.add(tool);
          sink.toolArguments(tool, '{}');
        }
        return;
      }
      case 'messageStop':
        this.#stop = stopReasonFromBedrock(e.stopReason);
        return;
      case 'metadata': {
        const usage = usageFromBedrock(e.usage);
        if (usage !== null) sink.usage(usage);
        if (this.#stop !== undefined && !this.#finished) {
          this.#finished = true;
          sink.finish(this.#stop, null);
          sink.done();
        }
        return;
      }
    }
  }
}
