import assert from 'node:assert/strict';
import type { Db } from '../src/store/db.ts';

type Response = { status: number; body: any; text: string };

/** Asserts the whole error: status and the exact `{ code, message, params }` body. */
export function assertError(
  response: Response,
  status: number,
  code: string,
  message: string,
  params: Record<string, unknown> = {},
): void {
  assert.deepEqual(
    { status: response.status, body: response.body },
    { status, body: { code, message, params } },
    response.text,
  );
}

/** The error shape every failure has, whatever its content. */
export function assertErrorShape(response: Response): void {
  const body = response.body;
  assert.ok(
    body && typeof body === 'object' && !Array.isArray(body),
    `not a JSON object: ${response.text.slice(0, 200)}`,
  );
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'params'], response.text.slice(0, 200));
  assert.equal(typeof body.code, 'string');
  assert.ok(body.message.length > 0);
  assert.ok(body.params && typeof body.params === 'object' && !Array.isArray(body.params));
}

/** Rows a merchant owns in the tables a request create writes to. */
export async function footprint(db: Db, userId: string) {
  const count = async (
    table: 'requests' | 'events' | 'idempotency_keys' | 'webhook_deliveries' | 'audit_events' | 'audit_pending',
    action?: string,
  ) => {
    let query = db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll().as('n'))
      .where('user_id', '=', userId);
    if (action) query = query.where('action', '=', action);
    return Number((await query.executeTakeFirstOrThrow()).n);
  };
  const jobs = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('kind', '=', 'request.expire')
    .executeTakeFirstOrThrow();
  return {
    requests: await count('requests'),
    events: await count('events'),
    deliveries: await count('webhook_deliveries'),
    // PostgreSQL keeps a record in audit_pending until it is chained (docs/audit.md).
    audited_creates: (await count('audit_events', 'request.create')) + (await count('audit_pending', 'request.create')),
    idempotency_keys: await count('idempotency_keys'),
    expiry_jobs: Number(jobs.n),
  };
}
