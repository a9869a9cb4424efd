// A worker thread that checkpoints one SQLite database's WAL on its own connection, so the copy of
// WAL pages into the database file, and that file's fsync, never stop the service's event loop.
// The parent posts 'checkpoint'; the reply is SQLite's result: [busy, frames in the WAL, frames copied].
import { parentPort, workerData } from 'node:worker_threads';
import { DatabaseSync } from 'node:sqlite';

const database = new DatabaseSync((workerData as { file: string }).file, { timeout: 1000 });
const checkpoint = database.prepare('PRAGMA wal_checkpoint(PASSIVE)');
checkpoint.setReturnArrays(true);

parentPort!.on('message', (message: string) => {
  if (message === 'checkpoint') {
    try {
      parentPort!.postMessage({ result: checkpoint.get() });
    } catch (error) {
      parentPort!.postMessage({ error: (error as Error).message });
    }
  }
});
parentPort!.postMessage({ ready: true });
