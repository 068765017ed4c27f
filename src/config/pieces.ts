// A parsed config crosses from the parser thread in pieces. One message holding all of a
// config of tens of thousands of routes takes the receiving thread hundreds of milliseconds
// to deserialise, in one block; pieces of a few thousand values each are a millisecond or
// two, and the receiver asks for the next one only after the event loop has turned.

type Key = string | number;

/** Entries to set on the container at `path` (from the root), in order. */
export interface Piece {
  readonly path: readonly Key[];
  readonly entries: ReadonlyArray<readonly [Key, unknown]>;
}

function isContainer(value: unknown): value is Record<Key, unknown> {
  return value !== null && typeof value === 'object';
}

function entriesOf(value: Record<Key, unknown>): Array<[Key, unknown]> {
  return Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
}

/** How many values a tree holds, containers included, for every container in it. */
function countValues(value: unknown, counts: Map<object, number>): number {
  if (!isContainer(value)) return 1;
  let n = 1;
  for (const [, v] of entriesOf(value)) n += countValues(v, counts);
  counts.set(value, n);
  return n;
}

/**
 * Splits a tree of plain objects, arrays and primitives (a structured-clone-able value)
 * into pieces of about `maxValues` values each. A container larger than that is sent empty,
 * then filled by the pieces that follow it. The root must be a plain object.
 */
export function splitIntoPieces(root: Record<string, unknown>, maxValues: number): Piece[] {
  const counts = new Map<object, number>();
  countValues(root, counts);
  const pieces: Piece[] = [];
  const split = (container: Record<Key, unknown>, path: readonly Key[]): void => {
    let batch: Array<[Key, unknown]> = [];
    let values = 0;
    const flush = (): void => {
      if (batch.length > 0) pieces.push({ path, entries: batch });
      batch = [];
      values = 0;
    };
    for (const [key, value] of entriesOf(container)) {
      const n = isContainer(value) ? (counts.get(value) ?? 1) : 1;
      if (n > maxValues) {
        batch.push([key, Array.isArray(value) ? [] : {}]);
        flush();
        split(value as Record<Key, unknown>, [...path, key]);
        continue;
      }
      if (values + n > maxValues) flush();
      batch.push([key, value]);
      values += n;
    }
    flush();
  };
  split(root, []);
  return pieces;
}

/** Sets one piece's entries on the tree being rebuilt from `root` (a plain object). */
export function placePiece(root: Record<string, unknown>, piece: Piece): void {
  let target = root as Record<Key, unknown>;
  for (const key of piece.path) target = target[key] as Record<Key, unknown>;
  for (const [key, value] of piece.entries) {
    // A data property, as the structured clone makes: a key such as `__proto__` stays a key.
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  }
}
