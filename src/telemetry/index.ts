// telemetry/: the Prometheus metrics registry, the structured logger and OpenTelemetry traces. Built once by
// server/. Imports nothing from other src/ folders; breaker states reach the gauge through
// a callback so this folder needs no knowledge of resilience/.

export { AccessLog } from './access-log.js';
export { type CacheResult, CacheStats, type CacheStatsRow } from './cache-stats.js';
export { GuardrailStats, type GuardrailStatsView } from './guardrail-stats.js';
export { createLogger, flushLogger, type Logger, type LoggerOptions } from './logger.js';
export { type BreakerStateCode, Metrics } from './metrics.js';
export { type RecentCandidate, type RecentModel, RecentTraffic, SLOT_MS, SLOTS, type TrafficPoint } from './recent-traffic.js';
export { addProcessMetrics, counter, gauge, histogram } from './registry.js';
export { type ClientSpanStart, genAiOperation, genAiSystem, type Span, Tracing, type TracingOptions } from './tracing.js';
