// The statements the service sends to PostgreSQL while a call runs, and which of them it waits for:
// each awaited one is a write to the server's socket and a round trip; a BEGIN and the statements
// marked unawaited travel with the next awaited one (docs/performance.md, "What a call costs on
// PostgreSQL").
import net from 'node:net';
import pg from 'pg';
import { UNAWAITED } from '../../src/store/postgres/dialect.ts';
import { pgUrl } from '../helpers.ts';

/** `inTransaction`: sent on a connection inside a BEGIN; else alone (a shared read, or autocommit). */
export type Statement = { text: string; awaited: boolean; inTransaction: boolean };

/** The statements the service sends while `run` runs, each transaction of the mounted sandbox bank left out. */
export async function serviceStatements(run: () => Promise<unknown>): Promise<Statement[]> {
  const sent: Statement[] = [];
  const open = new WeakMap<object, Statement[]>();
  const keep = (statements: Statement[]) => {
    if (!statements.some((s) => s.text.includes('sandbox_'))) sent.push(...statements);
  };
  const proto = pg.Client.prototype as unknown as { query: (...args: any[]) => unknown };
  const query = proto.query;
  proto.query = function (this: object, ...args: any[]) {
    const text: string = typeof args[0] === 'string' ? args[0] : args[0]?.text;
    const word = text.trim().toLowerCase();
    const statement = { text, awaited: word !== 'begin' && !text.startsWith(UNAWAITED), inTransaction: true };
    if (word === 'begin') open.set(this, [statement]);
    else if (open.has(this)) {
      open.get(this)!.push(statement);
      if (word === 'commit' || word === 'rollback') {
        keep(open.get(this)!);
        open.delete(this);
      }
    } else keep([{ ...statement, inTransaction: false }]);
    return query.apply(this, args);
  };
  try {
    await run();
  } finally {
    proto.query = query;
  }
  return sent;
}

/** How many writes this process makes to PostgreSQL's socket (the test database's port) while `run` runs. */
export async function postgresWritesDuring(run: () => Promise<unknown>): Promise<number> {
  const port = Number(new URL(pgUrl).port || 5432);
  const socket = net.Socket.prototype as unknown as { _writeGeneric: (...args: unknown[]) => unknown };
  const write = socket._writeGeneric;
  let writes = 0;
  socket._writeGeneric = function (this: net.Socket, ...args: unknown[]) {
    if (this.remotePort === port) writes += 1;
    return write.apply(this, args);
  };
  try {
    await run();
  } finally {
    socket._writeGeneric = write;
  }
  return writes;
}
