import type { IncomingHttpHeaders } from 'node:http';
import type { Attributes, Context, Span } from '@opentelemetry/api';

// OpenTelemetry traces (ADR 0018), off by default. The SDK is loaded only when
// `telemetry.otlp` is set, so a gateway without it pays neither its start-up nor a single
// branch beyond `tracing === null` per request. Contexts are passed explicitly (no context
// manager, no AsyncLocalStorage): the request path knows its own span and hands it on.
// Span names and attributes follow the OpenTelemetry GenAI semantic conventions.

export type { Span } from '@opentelemetry/api';

export interface TracingOptions {
  /** The collector's OTLP/HTTP traces URL. */
  readonly endpoint: string;
  /** Resolved header values (an API key): secrets, never logged. */
  readonly headers: Readonly<Record<string, string>>;
  readonly serviceName: string;
  readonly serviceVersion: string;
  /** `service.instance.id`: host and pid. */
  readonly instance: string;
  /** Share of new traces kept; a continued trace follows its parent's sampled flag. */
  readonly sampleRatio: number;
  /** How long one export may take before it is dropped (ms). */
  readonly exportTimeoutMs?: number;
}

/** What an upstream attempt span is created from. */
export interface ClientSpanStart {
  /** `gen_ai.operation.name`: chat, embeddings, text_completion, ... */
  readonly operation: string;
  readonly model: string;
  /** `gen_ai.provider.name`, e.g. openai, anthropic, azure.ai.openai. */
  readonly system: string;
  readonly attributes: Attributes;
}

type Api = typeof import('@opentelemetry/api');

/** The running tracer: one per process, built at start-up, flushed and shut down at exit. */
export class Tracing {
  readonly #api: Api;
  readonly #tracer: ReturnType<Api['trace']['getTracer']>;
  readonly #propagator: import('@opentelemetry/api').TextMapPropagator;
  readonly #shutdown: () => Promise<void>;

  private constructor(
    api: Api,
    tracer: ReturnType<Api['trace']['getTracer']>,
    propagator: import('@opentelemetry/api').TextMapPropagator,
    shutdown: () => Promise<void>,
  ) {
    this.#api = api;
    this.#tracer = tracer;
    this.#propagator = propagator;
    this.#shutdown = shutdown;
  }

  /** Loads the SDK and starts a batching OTLP/HTTP exporter. */
  static async start(options: TracingOptions): Promise<Tracing> {
    const [api, core, otlp, resources, sdk] = await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/core'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace'),
    ]);
    const exporter = new otlp.OTLPTraceExporter({
      url: options.endpoint,
      headers: { ...options.headers },
      timeoutMillis: options.exportTimeoutMs ?? 10_000,
    });
    const provider = new sdk.TracerProvider({
      resource: resources.resourceFromAttributes({
        'service.name': options.serviceName,
        'service.version': options.serviceVersion,
        'service.instance.id': options.instance,
      }),
      sampler: new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(options.sampleRatio) }),
      // Batches bound what a slow or absent collector can hold: spans beyond the queue are dropped, never awaited.
      spanProcessors: [new sdk.BatchSpanProcessor({ exporter, maxQueueSize: 4096, scheduledDelayMillis: 1000 })],
    });
    const tracer = provider.getTracer('switchyard', options.serviceVersion);
    return new Tracing(api, tracer, new core.W3CTraceContextPropagator(), () => provider.shutdown());
  }

  /**
   * The span of one request to the gateway, continuing the client's `traceparent` when it
   * sent one. Named `METHOD /route`; an unknown path is named by its method alone, so that
   * a scanner cannot mint span names.
   */
  startServer(method: string, route: string | null, path: string, headers: IncomingHttpHeaders): Span {
    const api = this.#api;
    const parent = this.#propagator.extract(api.ROOT_CONTEXT, headers, api.defaultTextMapGetter);
    return this.#tracer.startSpan(
      route === null ? method : `${method} ${route}`,
      {
        kind: api.SpanKind.SERVER,
        attributes: { 'http.request.method': method, 'url.path': path, ...(route === null ? {} : { 'http.route': route }) },
      },
      parent,
    );
  }

  /** The span of one upstream attempt, a child of the request's: `{operation} {model}`. */
  startClient(parent: Span, start: ClientSpanStart): Span {
    const api = this.#api;
    return this.#tracer.startSpan(
      `${start.operation} ${start.model}`,
      {
        kind: api.SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': start.operation,
          'gen_ai.request.model': start.model,
          'gen_ai.provider.name': start.system,
          ...start.attributes,
        },
      },
      this.#contextOf(parent),
    );
  }

  /**
   * The span of one tools/call, a child of the /mcp request's, as the GenAI conventions name
   * a tool's execution: `execute_tool {tool}`, with `gen_ai.operation.name` and
   * `gen_ai.tool.name`, and the MCP method and session.
   */
  startTool(parent: Span, tool: string, attributes: Record<string, string | number | boolean>): Span {
    const api = this.#api;
    return this.#tracer.startSpan(
      `execute_tool ${tool}`,
      {
        kind: api.SpanKind.CLIENT,
        attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tool, 'mcp.method.name': 'tools/call', ...attributes },
      },
      this.#contextOf(parent),
    );
  }

  /** Writes `traceparent` (and `tracestate`) for `span` into upstream request headers. */
  inject(span: Span, headers: Record<string, string>): void {
    this.#propagator.inject(this.#contextOf(span), headers, this.#api.defaultTextMapSetter);
  }

  /** Ends a span as failed: `error.type` and an ERROR status with a message. */
  fail(span: Span, errorType: string, message: string, end = true): void {
    span.setAttribute('error.type', errorType);
    span.setStatus({ code: this.#api.SpanStatusCode.ERROR, message });
    if (end) span.end();
  }

  /** Sends what is queued and stops the exporter (bounded by its export timeout). */
  shutdown(): Promise<void> {
    return this.#shutdown();
  }

  #contextOf(span: Span): Context {
    return this.#api.trace.setSpan(this.#api.ROOT_CONTEXT, span);
  }
}

const GEN_AI_SYSTEMS: ReadonlyMap<string, string> = new Map([
  ['azure_openai', 'azure.ai.openai'],
  ['gemini', 'gcp.gemini'],
  ['vertex', 'gcp.vertex_ai'],
  ['bedrock', 'aws.bedrock'],
]);

/** `gen_ai.provider.name` for a provider type, as the OpenTelemetry semantic conventions name the service. */
export function genAiSystem(providerType: string): string {
  return GEN_AI_SYSTEMS.get(providerType) ?? providerType;
}

/** `gen_ai.operation.name` for one of the gateway's operations. */
export function genAiOperation(operation: string): string {
  if (operation === 'completions') return 'text_completion';
  if (operation === 'embeddings') return 'embeddings';
  return 'chat';
}
