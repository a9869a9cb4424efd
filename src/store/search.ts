import { sql, type RawBuilder } from 'kysely';

// Case-insensitive "contains" for the dashboard's search boxes, the same on SQLite and
// PostgreSQL: both sides lowered, and % _ \ in the searched text matched as themselves.

export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

export function containsText(column: string, text: string): RawBuilder<boolean> {
  return sql<boolean>`lower(${sql.ref(column)}) like ${`%${escapeLike(text.toLowerCase())}%`} escape '\\'`;
}
