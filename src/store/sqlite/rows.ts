import type { SQLInputValue } from 'node:sqlite';

/** A statement's parameters as Kysely hands them over. */
export type Params = ReadonlyArray<unknown>;

/**
 * Rows as objects, built from the arrays node:sqlite returns. node:sqlite builds each row object
 * with a null prototype one property at a time, which V8 keeps as a slow dictionary; built here
 * they share one shape. Each statement gets a function that makes its row as one object literal
 * (V8 copies a prepared template), a tenth of the cost of adding 36 columns one at a time. As with
 * SQLite's own objects, a later column of the same name wins.
 */
export type RowMaker = (values: unknown[]) => Record<string, unknown>;

export function rowMakerFor(columns: string[]): RowMaker {
  if (columns.length === 0) return () => ({});
  // Names are quoted as JSON string literals, so any name is a key and nothing else; `__proto__`
  // as a computed key, since a literal's plain `__proto__:` would set the prototype instead.
  const keys = columns.map((column) => (column === '__proto__' ? '["__proto__"]' : JSON.stringify(column)));
  return new Function('values', `return { ${keys.map((key, i) => `${key}: values[${i}]`).join(', ')} };`) as RowMaker;
}

export function rowsOf(arrays: unknown[][], makeRow: RowMaker): any[] {
  const rows = new Array(arrays.length);
  for (let r = 0; r < arrays.length; r++) rows[r] = makeRow(arrays[r]!);
  return rows;
}

/** SQLite has no booleans: true and false are bound as 1 and 0. */
export function bindable(params: Params): SQLInputValue[] {
  return params.map((value) => (typeof value === 'boolean' ? (value ? 1 : 0) : value)) as SQLInputValue[];
}
