import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdminCaller } from '../managed/index.js';
import type { Services } from '../request/index.js';
import type { DatabaseLink } from './database-link.js';
import type { ReloadResult } from './reload.js';

// An /admin/v1/ call: the listener's context it runs in, and who makes it (by the token it
// presented; what that caller may do is managed/'s to judge).

/** What the managed endpoints need of the admin listener's context. */
export interface V1Context {
  readonly svc: Services;
  readonly database: DatabaseLink;
  /** The reload a committed write asks for (trigger `database`). */
  readonly reloadForDatabase: () => Promise<ReloadResult>;
  /** The gateway's environment: what references (a draft provider's, a written one's) resolve in. */
  readonly env: NodeJS.ProcessEnv;
  /** The config file the gateway serves (what the export reads). */
  readonly configPath: string;
}

export interface V1Request {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly caller: AdminCaller;
}
