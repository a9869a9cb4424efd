import type { Worker } from '../../src/jobs/worker.ts';

// Runs refunds the way the worker would, for tests that build the service without workers.

const RUNNABLE = new Set(['payment.payer_account', 'refund.execute']);

/** Runs the due payer-account and refund jobs until none is left; says how many ran. */
export async function runRefundJobs(worker: Worker): Promise<number> {
  let ran = 0;
  for (let round = 0; round < 10; round += 1) {
    const due = (await worker.claim(200)).filter((job) => RUNNABLE.has(job.kind));
    if (due.length === 0) break;
    for (const job of due) await worker.run(job);
    ran += due.length;
  }
  return ran;
}
