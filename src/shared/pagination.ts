import { Type, type Static } from 'typebox';

/** Page size when `limit` is not given (list endpoints that page; some list everything without it). */
export const DEFAULT_PAGE_SIZE = 100;

/**
 * Spread into a list endpoint's query schema next to its own filters. `starting_after` must be an
 * id of the listed type (`idPrefix`_ULID): a cursor of another shape matches nothing, so it is
 * refused rather than answered with an empty or unfiltered page.
 */
export const listQueryFields = (idPrefix: string) => ({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 1000,
      description: `Page size, 1 to 1000 (default ${DEFAULT_PAGE_SIZE})`,
      'x-expected': 'a whole number from 1 to 1000',
    }),
  ),
  starting_after: Type.Optional(
    Type.String({
      pattern: `^${idPrefix}_[0-9A-Z]{26}$`,
      description: `Return objects older than this id (the last id of the previous page), a ${idPrefix}_… id`,
      'x-expected': `an id of the form ${idPrefix}_<26 characters>`,
    }),
  ),
});
export const ListQuery = (idPrefix: string) => Type.Object(listQueryFields(idPrefix), { additionalProperties: false });
export type ListQuery = Static<ReturnType<typeof ListQuery>>;

/** Ids are time-sortable, so "newest first after a cursor" is "id below the cursor, descending". */
export function pageOf<T>(rows: T[], limit: number): { items: T[]; hasMore: boolean } {
  return rows.length > limit ? { items: rows.slice(0, limit), hasMore: true } : { items: rows, hasMore: false };
}
