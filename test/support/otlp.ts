import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A stand-in OTLP/HTTP JSON collector for tests that export traces: every span it is sent,
// and the headers and resources of each export.

export interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: OtlpValue }[];
  status?: { code?: number; message?: string };
}

/** A minimal OTLP/HTTP JSON receiver: every span it is sent, and the headers of each export. */
export class Collector {
  readonly spans: OtlpSpan[] = [];
  readonly headers: IncomingHttpHeaders[] = [];
  readonly server: Server;
  resources: { key: string; value: OtlpValue }[][] = [];

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.headers.push(req.headers);
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: { resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
        };
        for (const rs of body.resourceSpans) {
          this.resources.push(rs.resource.attributes);
          for (const ss of rs.scopeSpans) this.spans.push(...ss.spans);
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1/traces`;
  }

  /** Waits (bounded) until a span matching `match` has arrived. */
  async waitFor(match: (s: OtlpSpan) => boolean, timeoutMs = 15_000): Promise<OtlpSpan> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const found = this.spans.find(match);
      if (found !== undefined) return found;
      if (Date.now() > until) throw new Error(`no matching span after ${timeoutMs} ms; got ${this.spans.map((s) => s.name).join(', ')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
