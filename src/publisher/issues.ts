// The publisher's closed set of failure codes. Like the contract's reject reasons, a caller
// (the grid loop, a test, an alert) branches and counts on the code; the message is for
// people and names the field path. Messages never hold a credential value.

export const PUBLISH_ISSUE_CODES = [
  /** The inventory file is not there. */
  'inventory_missing',
  /** The inventory cannot be opened or read (permissions, not a regular file). */
  'inventory_unreadable',
  'inventory_too_large',
  /** Not YAML, or not the inventory's shape: the message names the field path. */
  'inventory_invalid',
  /** The state file exists but is not ours to trust: never silently reset to generation 0. */
  'state_invalid',
  'state_unreadable',
  /** The rendered envelope fails the contract's own parser, or would roll back: not published. */
  'render_refused',
  /** Writing the output (folder, temp file, rename, symlink) failed. */
  'write_failed',
] as const;
export type PublishIssueCode = (typeof PUBLISH_ISSUE_CODES)[number];

/** One thing wrong with an input, at its field path (`providers[0].weight`), as `validate` reports the gateway's. */
export interface PublishIssue {
  readonly path: string;
  readonly message: string;
}

export class PublishError extends Error {
  readonly code: PublishIssueCode;
  /** Every problem found, each with its path, when the input was checked as a whole (an inventory); else empty. */
  readonly issues: readonly PublishIssue[];
  /** What the issues are about (`inventory file "/x.yaml"`); the message starts with it. */
  readonly subject: string;
  constructor(code: PublishIssueCode, message: string, found?: { subject: string; issues: readonly PublishIssue[] }) {
    super(message);
    this.name = 'PublishError';
    this.code = code;
    this.issues = found?.issues ?? [];
    this.subject = found?.subject ?? '';
  }
}
