import { Type, type Static } from 'typebox';

/** Spread into a list endpoint's query schema next to its own filters. */
export const listQueryFields = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1 to 1000' })),
  starting_after: Type.Optional(Type.String({ maxLength: 64, description: 'Return objects older than this id (the last id of the previous page)' })),
};
export const ListQuery = Type.Object(listQueryFields, { additionalProperties: false });
export type ListQuery = Static<typeof ListQuery>;

/** Ids are time-sortable, so "newest first after a cursor" is "id below the cursor, descending". */
export function pageOf<T>(rows: T[], limit: number): { items: T[]; hasMore: boolean } {
  return rows.length > limit ? { items: rows.slice(0, limit), hasMore: true } : { items: rows, hasMore: false };
}
