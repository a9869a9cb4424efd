import type { Worker } from '../../src/jobs/worker.ts';
import { PAYER_ACCOUNT_JOB } from '../../src/modules/payments/payments.service.ts';

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

/** Claims what is due and runs the payer-account jobs among it (the payer's account kept for refunds); says how many ran. */
export async function runPayerAccountJobs(worker: Worker): Promise<number> {
  let ran = 0;
  for (const job of await worker.claim(200)) {
    if (job.kind !== PAYER_ACCOUNT_JOB) continue;
    await worker.run(job);
    ran += 1;
  }
  return ran;
}
