// guardrails/: checks on prompts, answers, streams and MCP tool calls, as pure functions of
// their config and the text they are given (no I/O, no timers). May import only config/
// (types and the RE2 compile check) and providers/ (the canonical form's types); the
// request path composes them as stages and transforms. See docs/decisions/0040-guardrails.md.

export { compileRegexGuardrail, type PatternFinding, type RegexGuardrail } from './regex.js';
