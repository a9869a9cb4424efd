// A row of the jobs table for store tests: a plain table of the store's own, with every column given.
export const jobRow = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  kind: 'k',
  run_at: 100,
  clock_id: null,
  payload: '{}',
  dedupe_key: null,
  locked_by: null,
  locked_until: null,
  last_error: null,
  failed_at: null,
  created_at: 1,
  ...extra,
});
