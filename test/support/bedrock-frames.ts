import { EventStreamCodec } from '@smithy/eventstream-codec';

// Bedrock's binary event-stream frames, as a test upstream writes them: one JSON event per
// frame, encoded (with its prelude and message CRCs) by the same codec the AWS SDK reads with.

export const bedrockCodec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);

/** One `event` frame of type `type` carrying `payload` as JSON. */
export function bedrockEventFrame(type: string, payload: unknown): Buffer {
  return Buffer.from(
    bedrockCodec.encode({
      headers: {
        ':message-type': { type: 'string', value: 'event' },
        ':event-type': { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
      },
      body: Buffer.from(JSON.stringify(payload)),
    }),
  );
}
