import type { ParseArgsConfig } from 'node:util';

// The shape of a `switchyard` subcommand, shared by cli.ts (the gateway's commands) and
// publisher.ts (the control-plane side's), so both tables are read by one dispatcher.

/** A wrong invocation: printed with the command's usage, exit 2. */
export class UsageError extends Error {}

export interface Command {
  readonly summary: string;
  readonly usage: string;
  readonly options: NonNullable<ParseArgsConfig['options']>;
  /** Takes positional arguments (`keys create`, `audit verify FILE`, `overlay diff OLD NEW`). */
  readonly positionals?: boolean;
  run(values: Record<string, string | boolean | undefined>, positionals: readonly string[]): Promise<number | 'running'>;
}

/** `--help` / `-h`, which every command takes. */
export const help = { type: 'boolean', short: 'h' } as const;
