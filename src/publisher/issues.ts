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

export class PublishError extends Error {
  readonly code: PublishIssueCode;
  constructor(code: PublishIssueCode, message: string) {
    super(message);
    this.name = 'PublishError';
    this.code = code;
  }
}
