import { z } from 'zod';
import { positiveInt } from './schema-parts.js';

// `a2a`: the bounds of the /a2a endpoints (agents called through the gateway with the
// Agent2Agent protocol): how often upstream cards are read again and how large they and the
// events of a stream may be, how long a call and a stream may last, which push-notification
// webhooks may be handed to an agent, and how long task ownership is remembered.
// `routing.agents` exposes the agents; providers of `type: a2a` are the agents behind them.

/** An exposed agent's name: one path segment of /a2a/<agent>. */
export const agentName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/,
    'must be 1-64 of A-Z a-z 0-9 _ . - (starting with a letter or digit): it is a URL path segment',
  );

/** A push-notification URL prefix allowed besides public https hosts: a whole http(s) URL. */
const pushPrefix = z
  .string()
  .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), 'must be an http:// or https:// URL prefix')
  .refine((u) => !URL.canParse(u) || new URL(u).username === '', 'must not contain user:password@');

export const a2aSchema = z.strictObject({
  /** Each upstream agent's card is read again this often (and at start and on every reload); 0 = only then. */
  card_recheck_ms: z.number().int().min(0).max(86_400_000).default(300_000),
  /** A card larger than this is refused (the agent is then served without one until it shrinks). */
  max_card_bytes: positiveInt.max(64 * 1024 * 1024).default(1024 * 1024),
  /** The largest event of a stream (bytes); a larger one ends the stream with a JSON-RPC error event. */
  max_event_bytes: z
    .number()
    .int()
    .min(1024)
    .max(256 * 1024 * 1024)
    .default(4 * 1024 * 1024),
  /** The whole length of a stream (SendStreamingMessage, SubscribeToTask); a provider's own stream_max_ms, when tighter, wins. */
  stream_max_ms: positiveInt.max(86_400_000).default(3_600_000),
  /** The whole of a call that is not a stream, from the request to the last byte of its answer. */
  call_timeout_ms: positiveInt.max(3_600_000).default(300_000),
  /**
   * URL prefixes a push-notification webhook may start with besides the default rule (https,
   * to a host that is or resolves only to public addresses): an internal receiver, say.
   */
  push_urls: z.array(pushPrefix).max(256).default([]),
  /** How long the gateway remembers which candidate and team own a task or context id. */
  tasks: z
    .strictObject({
      /** While the task is active (and for a context, always). */
      ttl_s: positiveInt.max(90 * 24 * 3600).default(7 * 24 * 3600),
      /** Once the task is completed, failed, canceled or rejected. */
      terminal_ttl_s: positiveInt.max(90 * 24 * 3600).default(24 * 3600),
      /** The memory store's bound (one replica): past it the oldest ids are forgotten first. */
      max_entries: positiveInt.max(10_000_000).default(100_000),
    })
    .prefault({}),
});

export type A2aConfig = z.infer<typeof a2aSchema>;
