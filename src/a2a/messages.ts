// Parts, messages and artifacts between 0.3 and 1.0, on the JSON wire. 0.3 tags each object
// with `kind`, nests a file's bytes or URI under `file`, and leaves optional members out; 1.0
// (ProtoJSON) picks a part's content by member (`text`, `raw`, `url`, `data`), writes absent
// strings and lists by leaving them out too, and spells roles `ROLE_USER`. A data part whose
// value is not an object has no 0.3 form: it travels wrapped as `{value}` with the metadata flag
// `data_part_compat`, the convention the reference SDK uses so the wrap can be undone.

import {
  arrayAt,
  isObject,
  type JsonObject,
  loose,
  member,
  metadataOf,
  nonEmpty,
  objectAt,
  put,
  ShapeError,
  stringAt,
  strings,
} from './wire.js';

const WRAPPED_DATA_FLAG = 'data_part_compat';

// Re-encoding decodes and encodes again, as the SDK's bytes field does, so both sides see the
// same canonical base64.
const canonicalBase64 = (b64: string): string => Buffer.from(b64, 'base64').toString('base64');

export function partTo1(value: unknown, path: string): JsonObject {
  const part = objectAt(value, path);
  const out: JsonObject = {};
  const metadata = metadataOf(part);
  switch (part.kind) {
    case 'text':
      out.text = stringAt(part.text, `${path}.text`);
      put(out, 'metadata', metadata);
      return out;
    case 'file': {
      const file = objectAt(part.file, `${path}.file`);
      if ('bytes' in file) out.raw = canonicalBase64(stringAt(file.bytes, `${path}.file.bytes`));
      else if ('uri' in file) out.url = stringAt(file.uri, `${path}.file.uri`);
      else throw new ShapeError(`${path}.file`, 'must hold bytes or uri');
      put(out, 'metadata', metadata);
      put(out, 'filename', nonEmpty(file.name));
      put(out, 'mediaType', nonEmpty(file.mimeType));
      return out;
    }
    case 'data': {
      if (part.data === undefined || part.data === null) throw new ShapeError(`${path}.data`, 'is required');
      let data: unknown = part.data;
      let outMetadata = metadata;
      if (metadata !== undefined && metadata[WRAPPED_DATA_FLAG] === true) {
        if (isObject(data) && 'value' in data) data = data.value;
        const { [WRAPPED_DATA_FLAG]: _flag, ...rest } = metadata;
        outMetadata = Object.keys(rest).length > 0 ? rest : undefined;
      }
      out.data = data;
      put(out, 'metadata', outMetadata);
      return out;
    }
    default:
      throw new ShapeError(`${path}.kind`, 'must be "text", "file" or "data"');
  }
}

const isSet = (v: unknown): boolean => v !== undefined && v !== null;

export function partTo03(value: unknown, path: string): JsonObject {
  const part = objectAt(value, path);
  const metadata = metadataOf(part);
  let out: JsonObject;
  if (isSet(part.text)) {
    out = { kind: 'text', text: loose(part.text) };
  } else if (isSet(part.raw) || isSet(part.url)) {
    const file: JsonObject = isSet(part.raw) ? { bytes: canonicalBase64(stringAt(part.raw, `${path}.raw`)) } : { uri: loose(part.url) };
    put(file, 'mimeType', nonEmpty(member(part, 'mediaType')));
    put(file, 'name', nonEmpty(part.filename));
    out = { kind: 'file', file };
  } else if (isSet(part.data)) {
    if (isObject(part.data)) {
      out = { kind: 'data', data: part.data };
    } else {
      return { kind: 'data', data: { value: part.data }, metadata: { ...metadata, [WRAPPED_DATA_FLAG]: true } };
    }
  } else {
    throw new ShapeError(path, 'must hold text, raw, url or data');
  }
  put(out, 'metadata', metadata);
  return out;
}

export function messageTo1(value: unknown, path: string): JsonObject {
  const message = objectAt(value, path);
  const messageId = message.messageId;
  if (typeof messageId !== 'string' || messageId === '') throw new ShapeError(`${path}.messageId`, 'is required');
  if (message.role !== 'user' && message.role !== 'agent') throw new ShapeError(`${path}.role`, 'must be "user" or "agent"');
  const parts = arrayAt(message.parts, `${path}.parts`).map((p, i) => partTo1(p, `${path}.parts[${i}]`));
  const out: JsonObject = { messageId };
  put(out, 'contextId', nonEmpty(message.contextId));
  put(out, 'taskId', nonEmpty(message.taskId));
  out.role = message.role === 'user' ? 'ROLE_USER' : 'ROLE_AGENT';
  if (parts.length > 0) out.parts = parts;
  put(out, 'metadata', metadataOf(message));
  put(out, 'extensions', strings(message.extensions));
  put(out, 'referenceTaskIds', strings(message.referenceTaskIds));
  return out;
}

// 1.0 readers turn any role but ROLE_USER (1) into 0.3's `agent`, as the reference SDK does.
const isUserRole = (role: unknown): boolean => role === 'ROLE_USER' || role === 1;

export function messageTo03(value: unknown, path: string): JsonObject {
  const message = objectAt(value, path);
  const parts = arrayAt(message.parts ?? [], `${path}.parts`).map((p, i) => partTo03(p, `${path}.parts[${i}]`));
  const out: JsonObject = {
    kind: 'message',
    messageId: loose(member(message, 'messageId')),
    role: isUserRole(message.role) ? 'user' : 'agent',
    parts,
  };
  put(out, 'contextId', nonEmpty(member(message, 'contextId')));
  put(out, 'taskId', nonEmpty(member(message, 'taskId')));
  put(out, 'metadata', metadataOf(message));
  put(out, 'extensions', strings(message.extensions));
  put(out, 'referenceTaskIds', strings(member(message, 'referenceTaskIds')));
  return out;
}

export function artifactTo1(value: unknown, path: string): JsonObject {
  const artifact = objectAt(value, path);
  const parts = arrayAt(artifact.parts, `${path}.parts`).map((p, i) => partTo1(p, `${path}.parts[${i}]`));
  const out: JsonObject = {};
  put(out, 'artifactId', nonEmpty(artifact.artifactId));
  put(out, 'name', nonEmpty(artifact.name));
  put(out, 'description', nonEmpty(artifact.description));
  if (parts.length > 0) out.parts = parts;
  put(out, 'metadata', metadataOf(artifact));
  put(out, 'extensions', strings(artifact.extensions));
  return out;
}

export function artifactTo03(value: unknown, path: string): JsonObject {
  const artifact = objectAt(value, path);
  const parts = arrayAt(artifact.parts ?? [], `${path}.parts`).map((p, i) => partTo03(p, `${path}.parts[${i}]`));
  const out: JsonObject = { artifactId: loose(member(artifact, 'artifactId')), parts };
  put(out, 'name', nonEmpty(artifact.name));
  put(out, 'description', nonEmpty(artifact.description));
  put(out, 'metadata', metadataOf(artifact));
  put(out, 'extensions', strings(artifact.extensions));
  return out;
}

/** A list member converted item by item; absent or empty lists stay absent. */
export function listOf(value: unknown, path: string, convert: (item: unknown, itemPath: string) => JsonObject): JsonObject[] | undefined {
  if (value === undefined || value === null) return undefined;
  const items = arrayAt(value, path).map((item, i) => convert(item, `${path}[${i}]`));
  return items.length > 0 ? items : undefined;
}
