import { readFileSync } from 'node:fs';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { createParser } from 'eventsource-parser';

// OpenAI's published OpenAPI document (github.com/openai/openai-openapi, openapi.json) as a
// test oracle: every body and stream event the gateway or the mock writes on OpenAI's
// Responses and Conversations APIs can be checked against the component schema OpenAI
// publishes for it. The document is never copied into this repository (its licence is not
// ours, and a stale copy would hide drift): it is read at test time from the file named by
// OPENAI_OPENAPI_SPEC, and a test that needs it skips when the variable is unset.

/** The reason a test gives when it skips for want of the document. */
export const OPENAI_SPEC_MISSING =
  'OPENAI_OPENAPI_SPEC is not set: point it at openapi.json from github.com/openai/openai-openapi ' +
  '(e.g. `git -C <clone> show HEAD:openapi.json > /tmp/openapi.json`); .ci/run does this when a mirror is present';

/** One server-sent event as a client parses it: its `event:` name (if any) and its `data:` text parsed as JSON. */
export interface SseEvent {
  readonly event: string | undefined;
  readonly data: unknown;
}

export interface OpenaiSchema {
  /** Problems of `value` against `components.schemas[component]`, each naming its instance path; [] = valid. */
  validate(component: string, value: unknown): string[];
  /** The event component whose `type` is `type`, as the spec's ResponseStreamEvent union declares it; undefined = none. */
  responsesEventComponent(type: string): string | undefined;
  /**
   * Problems of a Responses API stream: each event's data against the component its `type`
   * names, the SSE `event:` name equal to that type, and `sequence_number` counting 0, 1, 2...
   */
  validateResponsesStream(events: readonly SseEvent[]): string[];
}

const SPEC_ID = 'openai-openapi';
/** JSON Schema's keyword, spelled so that no linter takes the objects for promises. */
const THEN = 'then';
const STREAM_UNION = 'ResponseStreamEvent';

type Node = Record<string, unknown>;

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The single value a branch's tag property takes, when the branch is a `$ref` to a component that requires it. */
function requiredTag(branch: unknown, property: string, components: Node): string | undefined {
  if (!isNode(branch) || typeof branch.$ref !== 'string' || !branch.$ref.startsWith('#/components/schemas/')) return undefined;
  const target = components[branch.$ref.slice('#/components/schemas/'.length)];
  if (!isNode(target) || !isNode(target.properties) || !Array.isArray(target.required) || !target.required.includes(property))
    return undefined;
  const tag = target.properties[property];
  if (!isNode(tag)) return undefined;
  const values = 'const' in tag ? [tag.const] : Array.isArray(tag.enum) ? tag.enum : [];
  return values.length === 1 && typeof values[0] === 'string' ? values[0] : undefined;
}

/** Subtrees that hold instances (examples), not schemas: left as they are. */
const instanceKeys = new Set(['example', 'examples', 'default', 'const', 'enum']);

/**
 * OpenAPI 3.0 spellings the 3.1 document still carries, in JSON Schema 2020-12 terms: a
 * `nullable: true` without `type` (which Ajv refuses; with a `type` Ajv reads it) becomes an
 * anyOf with null, a nullable enum lists null, and draft-4's boolean
 * `exclusiveMinimum`/`exclusiveMaximum` become the numeric bound they qualify.
 */
function modernize(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) modernize(item);
    return;
  }
  if (!isNode(node)) return;
  for (const [key, value] of Object.entries(node)) if (!instanceKeys.has(key)) modernize(value);
  for (const [exclusive, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof node[exclusive] !== 'boolean') continue;
    if (node[exclusive] === true && typeof node[bound] === 'number') {
      node[exclusive] = node[bound];
      delete node[bound];
    } else delete node[exclusive];
  }
  // OpenAPI's nullable admits null whatever the enum lists; Ajv's wants null in the enum too.
  if (node.nullable === true && Array.isArray(node.enum) && !node.enum.includes(null)) node.enum = [...node.enum, null];
  if (typeof node.nullable === 'boolean' && node.type === undefined) {
    const nullable = node.nullable;
    delete node.nullable;
    if (!nullable) return;
    const rest = { ...node };
    for (const key of Object.keys(node)) delete node[key];
    node.anyOf = [rest, { type: 'null' }];
  }
}

/**
 * Whether a branch that does not require the tag property could still hold `tag` there: no
 * enum or const of its own, or of a member of its allOf, rules the value out.
 */
function allowsTag(branch: unknown, property: string, tag: string, components: Node, depth = 0): boolean {
  let target = branch;
  if (isNode(branch) && typeof branch.$ref === 'string' && branch.$ref.startsWith('#/components/schemas/')) {
    target = components[branch.$ref.slice('#/components/schemas/'.length)];
  }
  if (!isNode(target) || depth > 8) return true;
  const spec = isNode(target.properties) ? target.properties[property] : undefined;
  if (isNode(spec)) {
    if ('const' in spec && spec.const !== tag) return false;
    if (Array.isArray(spec.enum) && !spec.enum.includes(tag)) return false;
  }
  const members = Array.isArray(target.allOf) ? target.allOf : [];
  return members.every((m) => allowsTag(m, property, tag, components, depth + 1));
}

/**
 * Rewrites each `discriminator` union (anyOf/oneOf plus `discriminator.propertyName`) so the
 * tag picks its branch: `if` the tag is a known value `then` that branch alone applies, `else`
 * the branches without a single required tag are tried. Same verdicts, but a failure reports
 * the picked branch's errors instead of every branch's, which is what makes them readable.
 * Ajv's own `discriminator` option wants oneOf and a tag on every branch, which this spec breaks.
 */
function routeDiscriminators(node: unknown, components: Node): void {
  if (Array.isArray(node)) {
    for (const item of node) routeDiscriminators(item, components);
    return;
  }
  if (!isNode(node)) return;
  for (const value of Object.values(node)) routeDiscriminators(value, components);
  const property = isNode(node.discriminator) ? node.discriminator.propertyName : undefined;
  const union = Array.isArray(node.anyOf) ? 'anyOf' : Array.isArray(node.oneOf) ? 'oneOf' : undefined;
  if (typeof property !== 'string' || union === undefined || 'if' in node) return;
  const branches = node[union] as unknown[];
  // Branches that share a tag stay a union under it.
  const tagged = new Map<string, unknown[]>();
  const untagged: unknown[] = [];
  for (const branch of branches) {
    const tag = requiredTag(branch, property, components);
    if (tag === undefined) untagged.push(branch);
    else tagged.set(tag, [...(tagged.get(tag) ?? []), branch]);
  }
  if (tagged.size === 0) return;
  delete node[union];
  node.if = { required: [property], properties: { [property]: { enum: [...tagged.keys()] } } };
  // A branch that does not require the tag (an input message's `type` is optional) joins each tag it allows.
  const picks = [...tagged].map(([tag, group]) => {
    const candidates = [...group, ...untagged.filter((b) => allowsTag(b, property, tag, components))];
    return { if: { properties: { [property]: { const: tag } } }, [THEN]: candidates.length === 1 ? candidates[0] : { anyOf: candidates } };
  });
  node[THEN] = { allOf: picks };
  node.else =
    untagged.length === 0 ? { required: [property], properties: { [property]: { enum: [...tagged.keys()] } } } : { anyOf: untagged };
}

function describe(error: ErrorObject): string {
  const at = error.instancePath === '' ? '(root)' : error.instancePath;
  const params = error.keyword === 'enum' || error.keyword === 'const' ? ` ${JSON.stringify(error.params)}` : '';
  return `${at} ${error.message ?? error.keyword}${params}`;
}

/** The errors worth reading: the picked branch's own, without the "must match then/else" that wrap them. */
function problems(errors: readonly ErrorObject[] | null | undefined): string[] {
  const all = errors ?? [];
  const specific = all.filter((e) => e.keyword !== 'if');
  return [...new Set((specific.length > 0 ? specific : all).map(describe))];
}

class LoadedSchema implements OpenaiSchema {
  readonly #ajv: Ajv2020;
  readonly #components: Node;
  readonly #validators = new Map<string, ValidateFunction>();
  #eventComponents: Map<string, string> | undefined;

  constructor(spec: Node) {
    const components = isNode(spec.components) && isNode(spec.components.schemas) ? spec.components.schemas : undefined;
    if (components === undefined) throw new Error('OPENAI_OPENAPI_SPEC does not hold components.schemas: is it openapi.json?');
    this.#components = components;
    // The union's members are read before the rewrite moves them under if/then.
    this.#eventComponents = eventComponentsOf(components);
    modernize(components);
    routeDiscriminators(components, components);
    // strict: false lets the spec's vendor keywords (x-oaiMeta, x-stainless-const...) and
    // OpenAPI's (discriminator, example) pass unread; formats are not checked: the spec's
    // include ones no JSON Schema library knows (`unixtime`).
    this.#ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, validateFormats: false, logger: false });
    this.#ajv.addSchema(spec, SPEC_ID);
  }

  validate(component: string, value: unknown): string[] {
    const check = this.#validator(component);
    return check(value) ? [] : problems(check.errors);
  }

  responsesEventComponent(type: string): string | undefined {
    return this.#eventComponents?.get(type);
  }

  validateResponsesStream(events: readonly SseEvent[]): string[] {
    const out: string[] = [];
    for (const [i, sse] of events.entries()) {
      const data = sse.data;
      const type = isNode(data) && typeof data.type === 'string' ? data.type : undefined;
      if (type === undefined) {
        out.push(`event ${i}: data has no string type`);
        continue;
      }
      if (sse.event !== undefined && sse.event !== type) out.push(`event ${i} (${type}): SSE event name is ${sse.event}`);
      if (isNode(data) && data.sequence_number !== i)
        out.push(`event ${i} (${type}): sequence_number is ${String(data.sequence_number)}, expected ${i}`);
      const component = this.responsesEventComponent(type);
      if (component === undefined) {
        out.push(`event ${i}: type ${type} is no member of ${STREAM_UNION}`);
        continue;
      }
      for (const problem of this.validate(component, data)) out.push(`event ${i} (${type}): ${problem}`);
    }
    return out;
  }

  /** Compiled on first use and kept: compiling the Response graph takes a few hundred ms. */
  #validator(component: string): ValidateFunction {
    let check = this.#validators.get(component);
    if (check !== undefined) return check;
    if (!(component in this.#components)) throw new Error(`the OpenAI spec has no component schema ${component}`);
    check = this.#ajv.compile({ $ref: `${SPEC_ID}#/components/schemas/${component}` });
    this.#validators.set(component, check);
    return check;
  }
}

/** type value -> component, from the members of the spec's stream-event union and each member's `type` enum. */
function eventComponentsOf(components: Node): Map<string, string> {
  const union = components[STREAM_UNION];
  const members = isNode(union) ? (union.anyOf ?? union.oneOf) : undefined;
  if (!Array.isArray(members)) throw new Error(`the OpenAI spec's ${STREAM_UNION} is not an anyOf/oneOf union`);
  const map = new Map<string, string>();
  for (const member of members) {
    if (!isNode(member) || typeof member.$ref !== 'string') continue;
    const name = member.$ref.split('/').at(-1) as string;
    const tag = requiredTag(member, 'type', components);
    if (tag !== undefined) map.set(tag, name);
  }
  return map;
}

let loaded: LoadedSchema | null | undefined;

/**
 * The spec named by OPENAI_OPENAPI_SPEC, loaded once per process; null when the variable is
 * unset (the test skips with OPENAI_SPEC_MISSING). A variable naming a file that is missing
 * or is not the spec throws: whoever set it expects the checks to run.
 */
export function openaiSchema(): OpenaiSchema | null {
  if (loaded !== undefined) return loaded;
  const file = process.env.OPENAI_OPENAPI_SPEC;
  if (file === undefined || file === '') return (loaded = null);
  const spec: unknown = JSON.parse(readFileSync(file, 'utf8'));
  if (!isNode(spec)) throw new Error(`OPENAI_OPENAPI_SPEC (${file}) is not a JSON object`);
  loaded = new LoadedSchema(spec);
  return loaded;
}

/** The events of a `text/event-stream` body, each `data:` parsed as JSON (a `[DONE]` marker is kept as that string). */
export function parseSseEvents(body: string): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = createParser({
    onEvent: (message) => {
      const text = message.data;
      events.push({ event: message.event, data: text === '[DONE]' ? text : (JSON.parse(text) as unknown) });
    },
  });
  parser.feed(body);
  return events;
}
