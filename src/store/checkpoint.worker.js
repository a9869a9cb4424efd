// A worker thread that checkpoints one SQLite database's WAL on its own connection, so the copy of
// WAL pages into the database file, and that file's fsync, never stop the service's event loop.
// The parent posts 'checkpoint'; the reply is SQLite's result: [busy, frames in the WAL, frames copied].
// Plain JavaScript: a .ts file would load Node's TypeScript stripper into the thread (28 MB of
// resident memory for the thread instead of 18 MB).
import { parentPort, workerData } from 'node:worker_threads';
import { DatabaseSync } from 'node:sqlite';

const database = new DatabaseSync(workerData.file, { timeout: 1000 });
const checkpoint = database.prepare('PRAGMA wal_checkpoint(PASSIVE)');
checkpoint.setReturnArrays(true);

parentPort.on('message', (message) => {
  if (message === 'checkpoint') {
    try {
      parentPort.postMessage({ result: checkpoint.get() });
    } catch (error) {
      parentPort.postMessage({ error: error.message });
    }
  }
});
parentPort.postMessage({ ready: true });
