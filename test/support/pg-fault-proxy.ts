import { createServer, type Server, Socket } from 'node:net';

// A TCP proxy between a client and PostgreSQL that can lose a COMMIT's answer: it reads the
// frontend's messages (the wire protocol's type byte and length), remembers the SQL of each
// Query ('Q', the simple protocol) and Parse ('P', the extended one) since the last BEGIN,
// and, once armed, forwards the first COMMIT of a transaction the caller's test picks, then
// drops whatever the server answers and destroys both sockets. The server commits; the
// client never learns it did. Every other byte, and every later connection, passes through.
// It can also hold back, for a while, everything the server sends (a one-way stall).

/** SSLRequest and GSSENCRequest: a client may send one before the StartupMessage, which has no type byte either. */
const PRE_STARTUP_CODES = new Set([80877103, 80877104]);

export interface LostCommit {
  /** The statements of the transaction whose COMMIT answer was lost, in order. */
  readonly statements: readonly string[];
}

export class PgFaultProxy {
  readonly #server: Server;
  /** Each connection's end: destroys its client and server sockets. */
  readonly #connections = new Map<Socket, () => void>();
  #armed: { match: (statements: readonly string[]) => boolean; refuse: boolean; resolve: (cut: LostCommit) => void } | null = null;
  #refusing = false;
  /** While set, what the server sends is held back (notifications, answers), per connection, until release. */
  #held: Map<Socket, Buffer[]> | null = null;

  private constructor(server: Server) {
    this.#server = server;
  }

  /** A proxy on 127.0.0.1 (a port of its own) to the server at `target` (a postgres:// URL). */
  static async start(target: string): Promise<PgFaultProxy> {
    const to = new URL(target);
    const proxy: PgFaultProxy = new PgFaultProxy(createServer((client) => proxy.#pipe(client, to.hostname, Number(to.port || 5432))));
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    const address = this.#server.address();
    if (address === null || typeof address === 'string') throw new Error('the proxy is not listening');
    return address.port;
  }

  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.href;
  }

  /**
   * Arms the proxy once: the first COMMIT of a transaction whose statements `match` accepts
   * is forwarded and its answer lost. With `refuse`, at that moment every other connection is
   * cut too and new ones are refused until accept(): the client cannot ask the database what
   * happened. Resolves when the COMMIT was forwarded.
   */
  loseCommitAnswer(match: (statements: readonly string[]) => boolean, options: { refuse?: boolean } = {}): Promise<LostCommit> {
    return new Promise((resolve) => {
      this.#armed = { match, refuse: options.refuse ?? false, resolve };
    });
  }

  /**
   * Holds back everything the server sends, on every connection: the client's queries get no
   * answer and its LISTEN no notification, as behind a network that stalled one way, until
   * releaseAnswers() delivers what was held, in order.
   */
  holdAnswers(): void {
    this.#held ??= new Map();
  }

  releaseAnswers(): void {
    const held = this.#held;
    this.#held = null;
    for (const [client, chunks] of held ?? []) for (const chunk of chunks) if (!client.destroyed) client.write(chunk);
  }

  /** New connections pass through again. */
  accept(): void {
    this.#refusing = false;
  }

  async close(): Promise<void> {
    for (const end of [...this.#connections.values()]) end();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #pipe(client: Socket, host: string, port: number): void {
    if (this.#refusing) {
      client.destroy();
      return;
    }
    const server = new Socket();
    const end = () => {
      client.destroy();
      server.destroy();
      this.#connections.delete(client);
    };
    this.#connections.set(client, end);
    client.on('error', end).on('close', end);
    server.on('error', end).on('close', end);
    server.connect(port, host);

    let pending = Buffer.alloc(0);
    let started = false;
    let statements: string[] = [];
    // After a lost COMMIT: the server's answer is dropped, and both sockets go as soon as it comes.
    let cutting = false;
    server.on('data', (chunk: Buffer) => {
      if (cutting) end();
      else if (this.#held !== null) this.#held.set(client, [...(this.#held.get(client) ?? []), chunk]);
      else client.write(chunk);
    });
    client.on('data', (chunk: Buffer) => {
      if (cutting) return;
      pending = Buffer.concat([pending, chunk]);
      // Bounded: each round takes one whole message off `pending` or waits for more bytes.
      while (pending.length > 0) {
        const typed = started;
        const header = typed ? 5 : 4;
        if (pending.length < header) return;
        const length = pending.readInt32BE(typed ? 1 : 0);
        const size = length + (typed ? 1 : 0);
        if (pending.length < size) return;
        const message = pending.subarray(0, size);
        pending = pending.subarray(size);
        if (!typed) {
          if (!PRE_STARTUP_CODES.has(message.readInt32BE(4))) started = true;
          server.write(message);
          continue;
        }
        const sql = sqlOf(message);
        if (sql !== null) {
          const verb = sql.trim().replace(/;\s*$/, '').toLowerCase();
          if (/^(begin|start transaction)\b/.test(verb)) statements = [];
          if (verb === 'commit' && this.#armed?.match(statements)) {
            const armed = this.#armed;
            this.#armed = null;
            cutting = true;
            server.write(message);
            if (armed.refuse) {
              this.#refusing = true;
              for (const [other, endOther] of [...this.#connections]) if (other !== client) endOther();
            }
            // Whatever the server answers, or after a moment if it says nothing, the connection is gone.
            setTimeout(end, 2000).unref();
            armed.resolve({ statements });
            return;
          }
          statements.push(sql);
        }
        server.write(message);
      }
    });
  }
}

/** The SQL of a Query ('Q': the text) or Parse ('P': a statement name, then the text) message; null for any other. */
function sqlOf(message: Buffer): string | null {
  const type = String.fromCharCode(message[0] as number);
  const body = message.subarray(5);
  if (type === 'Q') return body.subarray(0, body.indexOf(0)).toString('utf8');
  if (type === 'P') {
    const afterName = body.indexOf(0) + 1;
    return body.subarray(afterName, body.indexOf(0, afterName)).toString('utf8');
  }
  return null;
}
