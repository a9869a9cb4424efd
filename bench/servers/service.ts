// The service under test in its own process, on a temporary SQLite database.
import { startService } from '../lib.ts';

const service = await startService(JSON.parse(process.env.BENCH_ENV ?? '{}'));
process.stdout.write(`${JSON.stringify({ url: service.url, testKey: service.testKey, liveKey: service.liveKey, bankAccountId: service.bankAccountId })}\n`);
process.on('SIGTERM', () => {
  service.close().then(() => process.exit(0));
});
