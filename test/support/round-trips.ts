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

type Method = (this: any, ...args: any[]) => unknown;

/** Runs `run` with `target[name]` seeing every call first (`watch`), then puts the method back. */
async function watching(
  target: object,
  name: string,
  watch: (self: any, args: any[]) => void,
  run: () => Promise<unknown>,
) {
  const methods = target as Record<string, Method>;
  const original = methods[name];
  methods[name] = function (this: unknown, ...args: any[]) {
    watch(this, args);
    return original.apply(this, args);
  };
  try {
    await run();
  } finally {
    methods[name] = original;
  }
}

/** The statements the service sends while `run` runs, each transaction of the mounted sandbox bank left out. */
export async function serviceStatements(run: () => Promise<unknown>): Promise<Statement[]> {
  const sent: Statement[] = [];
  const open = new WeakMap<object, Statement[]>();
  const keep = (statements: Statement[]) => {
    if (!statements.some((s) => s.text.includes('sandbox_'))) sent.push(...statements);
  };
  await watching(
    pg.Client.prototype,
    'query',
    (client: object, args) => {
      const text: string = typeof args[0] === 'string' ? args[0] : args[0]?.text;
      const word = text.trim().toLowerCase();
      const statement = { text, awaited: word !== 'begin' && !text.startsWith(UNAWAITED), inTransaction: true };
      if (word === 'begin') open.set(client, [statement]);
      else if (open.has(client)) {
        open.get(client)!.push(statement);
        if (word === 'commit' || word === 'rollback') {
          keep(open.get(client)!);
          open.delete(client);
        }
      } else keep([{ ...statement, inTransaction: false }]);
    },
    run,
  );
  return sent;
}

/** How many writes this process makes to PostgreSQL's socket (the test database's port) while `run` runs. */
export async function postgresWritesDuring(run: () => Promise<unknown>): Promise<number> {
  const port = Number(new URL(pgUrl).port || 5432);
  let writes = 0;
  await watching(
    net.Socket.prototype,
    '_writeGeneric',
    (socket: net.Socket) => {
      if (socket.remotePort === port) writes += 1;
    },
    run,
  );
  return writes;
}

/** How many statements this process asks PostgreSQL to describe (their result columns) while `run` runs. */
export async function postgresDescribesDuring(run: () => Promise<unknown>): Promise<number> {
  let describes = 0;
  await watching(
    (pg as unknown as { Connection: { prototype: object } }).Connection.prototype,
    'describe',
    () => {
      describes += 1;
    },
    run,
  );
  return describes;
}
