// Fills a migrated database with a year of a busy service's rows, in SQL (PostgreSQL's
// generate_series, SQLite's recursive CTE), for `npm run bench -- --scale` (bench/scale.bench.ts).
// Rows are made as the service makes them: ids of its format (src/shared/ids.ts: the prefix, the
// millisecond of creation in ULID's base 32, then 16 characters, here the row's number in hex so
// that rows can name each other without a lookup), statuses spread as a live service's are, times
// spread over 13 months. One merchant is the measured one (its keys work); 999 more share the rest.

export type FillEngine = 'sqlite' | 'postgres';

/** How many rows of each kind at factor 1; BENCH_SCALE_FACTOR multiplies each (the merchants stay 1,000). */
export const FULL_SIZE = {
  requests: 1_000_000,
  payments: 1_000_000,
  /** One in ten requests sets up a recurring consent. */
  recurring_consents: 100_000,
  /** One in fifty requests is a subscription's. */
  subscriptions: 20_000,
  /** Every other request's request.created and every other payment's payment.status_updated. */
  events: 1_000_000,
  /** One per event, to its merchant's endpoint of its mode. */
  webhook_deliveries: 1_000_000,
  /** Jobs given up on over the last 45 days (those older than 30 await the hourly prune). */
  failed_jobs: 4_000,
  /** The last 24 hours' stored replies of Idempotency-Keys. */
  idempotency_keys: 5_000,
};
export const MERCHANTS = 1000;
/** The measured merchant's share of every kind of row: ten times an even share. */
export const MEASURED_SHARE = 0.01;

const DAY = 86_400_000;
const HEX = '0123456789ABCDEF';
const BASE32 = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

type Dialect = {
  /** A FROM item of the integers 0 … n−1 as column `i`. */
  series(n: number, from?: number): string;
  hex16(expr: string): string;
  hex6(expr: string): string;
  /** n random hex characters (n even). */
  randomHex(n: number): string;
  filler(n: number): string;
  /** An epoch-milliseconds expression as the service writes it in JSON (ISO 8601, UTC). */
  iso(ms: string): string;
  /** The local date (YYYY-MM-DD, UTC here) of an epoch-milliseconds expression. */
  date(ms: string): string;
  /** 1-based position of a character in a string. */
  position(haystack: string, needle: string): string;
  /** The last n characters. */
  tail(expr: string, n: number): string;
};

const dialects: Record<FillEngine, Dialect> = {
  postgres: {
    series: (n, from = 0) => `generate_series(${from}::bigint, ${from + n - 1}) as g(i)`,
    hex16: (expr) => `upper(lpad(to_hex(${expr}), 16, '0'))`,
    hex6: (expr) => `upper(lpad(to_hex(${expr}), 6, '0'))`,
    randomHex: (n) => `upper(substr(md5(random()::text) || md5(random()::text), 1, ${n}))`,
    filler: (n) => `repeat('x', ${n})`,
    iso: (ms) => `to_char(to_timestamp((${ms}) / 1000.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
    date: (ms) => `to_char(to_timestamp((${ms}) / 1000.0) at time zone 'UTC', 'YYYY-MM-DD')`,
    position: (haystack, needle) => `strpos(${haystack}, ${needle})`,
    tail: (expr, n) => `right(${expr}, ${n})`,
  },
  sqlite: {
    series: (n, from = 0) =>
      `(with recursive s(i) as (select ${from} union all select i + 1 from s where i < ${from + n - 1}) select i from s) as g`,
    hex16: (expr) => `printf('%016X', ${expr})`,
    hex6: (expr) => `printf('%06X', ${expr})`,
    randomHex: (n) => `hex(randomblob(${n / 2}))`,
    filler: (n) => `replace(hex(zeroblob(${n / 2})), '0', 'x')`,
    iso: (ms) => `strftime('%Y-%m-%dT%H:%M:%fZ', (${ms}) / 1000.0, 'unixepoch')`,
    date: (ms) => `date((${ms}) / 1000, 'unixepoch')`,
    position: (haystack, needle) => `instr(${haystack}, ${needle})`,
    tail: (expr, n) => `substr(${expr}, -${n})`,
  },
};

/** The 10 characters of ULID time for an epoch-milliseconds expression (a column, so it is computed once). */
function time10(ms: string): string {
  return Array.from(
    { length: 10 },
    (_, k) => `substr('${BASE32}', cast(((${ms}) >> ${5 * (9 - k)}) & 31 as integer) + 1, 1)`,
  ).join(' || ');
}

/** An id of the service's format made at `ms`, unique by `n`. */
const idOf = (d: Dialect, prefix: string, ms: string, n: string) => idWith(prefix, ms, d.hex16(n));
/** An id made at `ms` whose last 16 characters are `suffix` (an expression). */
const idWith = (prefix: string, ms: string, suffix: string) => `'${prefix}_' || ${time10(ms)} || ${suffix}`;

/** 0 … 255 from the last two characters of an id (its row number's last byte). */
const lastByte = (d: Dialect, id: string) =>
  `cast(16 * (${d.position(`'${HEX}'`, `substr(${d.tail(id, 2)}, 1, 1)`)} - 1) + ${d.position(`'${HEX}'`, d.tail(id, 1))} - 1 as bigint)`;

export type FillOptions = {
  engine: FillEngine;
  factor: number;
  now: number;
  measured: { userId: string; bankAccountId: string };
  /**
   * The sealed secret every endpoint gets: one the service can open, so a delivery the service
   * makes to one (its health job's notice, say) fails as any unreachable endpoint's does. The
   * endpoints are on this machine's discard port, so none sends a byte off it.
   */
  endpointSecret: string;
  /** Runs one statement (no result needed). */
  run(sql: string): Promise<void>;
  /** Seconds taken by each step, as it ends. */
  onStep?(step: string, seconds: number): void;
};

export type FillCounts = Record<string, number>;

/** The row counts a factor gives. */
export function countsFor(factor: number): typeof FULL_SIZE {
  const scaled = Object.fromEntries(
    Object.entries(FULL_SIZE).map(([kind, n]) => [kind, Math.max(10, Math.round(n * factor))]),
  ) as typeof FULL_SIZE;
  // The shapes below need these exact proportions.
  scaled.recurring_consents = Math.floor(scaled.requests / 10);
  scaled.subscriptions = Math.floor(scaled.requests / 50);
  scaled.payments = Math.min(
    scaled.payments,
    5 * scaled.subscriptions + 2 * scaled.recurring_consents + Math.floor((scaled.requests * 7) / 10),
  );
  return scaled;
}

export async function fill(options: FillOptions): Promise<typeof FULL_SIZE> {
  const d = dialects[options.engine];
  const n = countsFor(options.factor);
  const now = options.now;
  const span = 395 * DAY;
  const t0 = now - span - 3_600_000;
  const step = async (name: string, statements: string[]) => {
    const started = performance.now();
    for (const statement of statements) await options.run(statement);
    options.onStep?.(name, (performance.now() - started) / 1000);
  };
  // A row's merchant and mode follow from a multiplicative hash of its number: the measured
  // merchant (0) has one row in a hundred, the other 999 share the rest; a fifth is test mode.
  // (The low bits of a product modulo 2^32 follow the factor's, so its high bits are taken.)
  const hash = (i: string) => `(((${i}) * 2654435761) % 4294967296) / 4096`;
  const merchantOf = (h: string) => `case when ${h} % 100 = 0 then 0 else 1 + ${h} % 999 end`;
  const modeOf = (h: string) => `case when (${h} / 100) % 10 < 2 then 'test' else 'live' end`;
  const requestTime = (r: string) => `(${t0} + (${r}) * ${span} / ${n.requests})`;
  const requestId = (r: string, t: string) => idOf(d, 'request', t, r);

  await step('merchants', [
    `create temp table bench_merchants (idx bigint primary key, user_id text not null, bank_account_id text not null)`,
    `insert into bench_merchants (idx, user_id, bank_account_id) values (0, '${options.measured.userId}', '${options.measured.bankAccountId}')`,
    `insert into bench_merchants (idx, user_id, bank_account_id)
       select i, ${idOf(d, 'user', `${t0 - 30 * DAY} + i * 60000`, 'i')}, ${idOf(d, 'bankaccount', `${t0 - 30 * DAY} + i * 60000`, 'i')}
       from ${d.series(MERCHANTS - 1, 1)}`,
    `insert into users (id, name, email, password_hash, test_clock_offset_ms, created_at, updated_at)
       select user_id, 'Merchant ' || idx, 'merchant-' || idx || '@example.com', 'scrypt$' || ${d.filler(24)} || '$' || ${d.filler(44)}, 0,
         ${t0 - 30 * DAY} + idx * 60000, ${t0 - 30 * DAY} + idx * 60000
       from bench_merchants where idx > 0`,
    `insert into bank_accounts (id, user_id, account_number, name, created_at)
       select bank_account_id, user_id, '12-3456-' || ${d.hex6('idx')} || '0-00', null, ${t0 - 30 * DAY} + idx * 60000
       from bench_merchants where idx > 0`,
    `insert into api_keys (id, user_id, mode, key_hash, hint, created_at, revoked_at, last_used_at)
       select 'key_' || substr(user_id, 6, 10) || ${d.hex16('idx * 2 + m.n')}, user_id, m.mode, lower(${d.randomHex(64)}),
         'sk_' || m.mode || '_…abcd', ${t0 - 30 * DAY} + idx * 60000, null, ${now - DAY}
       from bench_merchants, (select 0 as n, 'live' as mode union all select 1, 'test') m where idx > 0`,
    `insert into webhook_endpoints (id, user_id, mode, url, secret, events, created_at, deleted_at, disabled_at, description)
       select 'webhook_' || substr(user_id, 6, 10) || ${d.hex16('idx * 2 + m.n')}, user_id, m.mode,
         'http://127.0.0.1:9/merchant-' || idx || '/hooks', '${options.endpointSecret}', null,
         ${t0 - 29 * DAY} + idx * 60000,
         case when idx = 0 and m.mode = 'test' then ${now - 2 * DAY} else null end, null, null
       from bench_merchants, (select 0 as n, 'live' as mode union all select 1, 'test') m`,
  ]);

  // Requests: r % 10 = 1 set up a recurring consent (c = r / 10), r % 50 = 3 a subscription
  // (s = r / 50); the rest are one-off, and seven in ten of those were paid.
  const paidDigits = [0, 2, 4, 5, 6, 7, 8];
  await step('requests', [
    `insert into requests (id, user_id, mode, status, type, kind, message, amount_cents, bank_account_id,
       merchant_identifier, reference, flow, qr_data, recurring_options, subscription_options, cust_info,
       created_at, updated_at, expires_at, deleted_at)
     select ${requestId('x.r', 'x.t')}, m.user_id, ${modeOf('x.h')},
       case when x.kind <> 'single' then (case x.kind when 'recurring' then 'paid' else 'active' end)
         when x.r % 10 in (${paidDigits.join(', ')}) then 'paid'
         when x.t < ${now - 7 * DAY} then 'expired' else 'active' end,
       'single', x.kind, 'Order ' || x.r,
       case when x.kind = 'single' then 500 + x.h % 20000 else null end, m.bank_account_id,
       case when x.h % 3 = 0 then 'INV-' || x.r else null end, 'REF-' || x.r, 'link',
       'data:image/png;base64,' || ${d.filler(330)},
       case when x.kind = 'recurring' then '{"period":"monthly","max_per_period_cents":100000,"max_per_payment_cents":null,"total_count":null,"total_amount_cents":null,"end_at":null}' else null end,
       case when x.kind = 'subscription' then '{"amount_cents":1500,"period":"monthly","start_at":null,"end_at":null,"total_count":null}' else null end,
       case when x.kind <> 'single' then '{"email":"payer-' || x.r || '@example.com"}' else null end,
       x.t, x.t + 60000,
       case when x.kind = 'single' and x.r % 10 not in (${paidDigits.join(', ')}) then x.t + ${7 * DAY} else null end,
       null
     from (select i as r, ${requestTime('i')} as t, ${hash('i')} as h,
             case when i % 10 = 1 then 'recurring' when i % 50 = 3 then 'subscription' else 'single' end as kind
           from ${d.series(n.requests)}) x
     join bench_merchants m on m.idx = ${merchantOf('x.h')}`,
  ]);

  // A recurring consent or subscription, its customer and the payer's account kept for it, from its request.
  await step('recurring consents and subscriptions', [
    `insert into customers (id, user_id, mode, email, created_at, updated_at)
       select 'customer_' || substr(id, 9), user_id, mode, 'payer-' || substr(message, 7) || '@example.com', created_at + 30000, created_at + 30000
       from requests where kind <> 'single'`,
    `insert into recurring_consents (id, user_id, mode, status, request_id, bank_account_id, customer_id, email, token_hash,
       bank_id, bank_consent_id, bank_access_token, period, max_per_period_cents, created_at, updated_at, revoked_at, expired_at,
       revoked_by, used_count, used_cents, period_count, period_cents, description, starts_at)
     select 'recurring_' || substr(id, 9), user_id, mode, x.new_status, id, bank_account_id, 'customer_' || substr(id, 9),
       'payer-' || substr(message, 7) || '@example.com', lower(${d.randomHex(64)}), 'sandbox', 'epc-' || substr(id, 19),
       'sealed:v1:' || ${d.filler(100)}, 'monthly', 100000, created_at + 30000, created_at + 30000,
       case when x.new_status = 'revoked' then ${now - DAY} else null end, case when x.new_status = 'expired' then ${now - DAY} else null end,
       case when x.new_status = 'revoked' then 'payer' else null end, 2, 4000, 0, 0, message, created_at
     from (select *, case ${lastByte(d, 'id')} % 100 when 0 then 'expired' when 1 then 'revoked' when 2 then 'revoked' else 'active' end as new_status
           from requests where kind = 'recurring') x`,
    `insert into subscriptions (id, user_id, mode, request_id, customer_id, email, bank_account_id, payer_details, status,
       amount_cents, period, zone, anchor_date, anchor_time, first_slot, first_charge_at, next_slot, next_charge_at,
       successful_count, failed_count, skipped_count, bank_id, bank_consent_id, bank_access_token, cancelled_by, cancelled_at,
       created_at, updated_at, description)
     select 'subscription_' || substr(id, 9), user_id, mode, id, 'customer_' || substr(id, 9), 'payer-' || substr(message, 7) || '@example.com',
       bank_account_id, '{"email":"payer-' || substr(message, 7) || '@example.com"}', x.new_status, 1500, 'monthly', 'Pacific/Auckland',
       ${d.date('created_at')}, '09:00:00.000', 0, created_at + 30000,
       case when x.new_status = 'active' then 5 else null end,
       case when x.new_status = 'active' then ${now + DAY} + (${lastByte(d, 'id')} % 28) * ${DAY} else null end,
       5, 0, 0, 'sandbox', 'epc-' || substr(id, 19), 'sealed:v1:' || ${d.filler(100)},
       case when x.new_status = 'cancelled' then 'merchant' else null end, case when x.new_status = 'cancelled' then ${now - DAY} else null end,
       created_at + 30000, created_at + 30000, message
     from (select *, case when ${lastByte(d, 'id')} % 7 = 0 then 'cancelled' else 'active' end as new_status
           from requests where kind = 'subscription') x`,
    `insert into enduring_payer_accounts (enduring_id, payer_account_sealed, created_at)
       select id, 'sealed:v1:' || ${d.filler(170)}, created_at from recurring_consents
       union all select id, 'sealed:v1:' || ${d.filler(170)}, created_at from subscriptions`,
  ]);

  // Payments j: five charges of each subscription, two executions on each consent, then one-off
  // payments of the paid one-off requests. Each takes its request's merchant and mode.
  const subscriptionPayments = 5 * n.subscriptions;
  const recurringPayments = 2 * n.recurring_consents;
  const digitCase = `case w.q % 7 ${paidDigits.map((digit, k) => `when ${k} then ${digit}`).join(' ')} end`;
  await step('payments', [
    `insert into payments (id, user_id, mode, request_id, status, amount_cents, settled_cents, bank_id, particulars, code,
       reference, bank_payment_id, recurring_consent_id, subscription_id, idempotency_key, fingerprint, failure_reason,
       created_at, updated_at, completed_at, channel, payer_account_sealed)
     select ${idOf(d, 'payment', 'z.tp', 'z.j')}, m.user_id, ${modeOf('z.h')}, z.rid, z.status, z.amount,
       case when z.status = 'successful' then z.amount else 0 end, 'sandbox', 'V-' || ${d.hex6('z.j')}, 'TONO',
       'REF-' || z.r, 'dp-' || ${d.hex16('z.j')},
       case when z.kind = 'recurring' then 'recurring_' || substr(z.rid, 9) else null end,
       case when z.kind = 'subscription' then 'subscription_' || substr(z.rid, 9) else null end,
       case when z.kind = 'recurring' then 'key-' || z.j else null end,
       case when z.kind = 'recurring' then ${d.filler(64)} else null end,
       case when z.status = 'failed' then 'declined' else null end,
       z.tp, z.tp + 2000, z.tp + 2000,
       case z.kind when 'recurring' then 'api' when 'single' then 'page' else null end,
       case when z.status = 'successful' then 'sealed:v1:' || ${d.filler(170)} else null end
     from (select y.*, ${requestId('y.r', 'y.t')} as rid,
             case when y.kind = 'single' then y.t + 90000 else y.t + 60000 + y.k * (${now} - y.t) / 6 end as tp,
             case when y.kind = 'subscription' then 1500 when y.kind = 'recurring' then 2000 else 500 + y.h % 20000 end as amount,
             case when y.hj % 100 < 94 then 'successful' else 'failed' end as status
           from (select x.*, ${requestTime('x.r')} as t, ${hash('x.r')} as h, ${hash('x.j')} as hj
                 from (select w.j, w.kind, w.k,
                         case w.kind when 'subscription' then 50 * w.q + 3 when 'recurring' then 10 * w.q + 1
                           else 10 * (w.q / 7) + ${digitCase} end as r
                       from (select i as j,
                               case when i < ${subscriptionPayments} then 'subscription' when i < ${subscriptionPayments + recurringPayments} then 'recurring' else 'single' end as kind,
                               case when i < ${subscriptionPayments} then i % ${n.subscriptions}
                                 when i < ${subscriptionPayments + recurringPayments} then (i - ${subscriptionPayments}) % ${n.recurring_consents}
                                 else i - ${subscriptionPayments + recurringPayments} end as q,
                               case when i < ${subscriptionPayments} then i / ${n.subscriptions}
                                 when i < ${subscriptionPayments + recurringPayments} then (i - ${subscriptionPayments}) / ${n.recurring_consents} + 1
                                 else 0 end as k
                             from ${d.series(n.payments)}) w) x) y) z
     join bench_merchants m on m.idx = ${merchantOf('z.h')}`,
    `insert into subscription_charges (id, subscription_id, slot, slot_date, charge_at, status, attempts, last_payment_id, created_at, updated_at)
       select 'charge_' || substr(id, 9), subscription_id, x.slot, ${d.date(`x.anchor + x.slot * ${31 * DAY}`)},
         created_at, case when status = 'successful' then 'successful' else 'failed' end, 1, id, created_at, updated_at
       from (select p.*, (select count(*) from payments o where o.subscription_id = p.subscription_id and o.id < p.id) as slot,
               (select r.created_at from requests r where r.id = p.request_id) as anchor
             from payments p where p.subscription_id is not null) x`,
    `insert into cust_infos (id, payment_id, email, created_at, updated_at, user_id, mode)
       select 'custinfo_' || substr(id, 9), id, 'payer-' || lower(${d.tail('id', 6)}) || '@example.com', created_at, created_at, user_id, mode
       from payments where status = 'successful' and recurring_consent_id is null`,
  ]);

  // Events of every other request and payment, each delivered once to its merchant's endpoint of
  // its mode: succeeded mostly, at the first try or later, a few cancelled, and some failed after
  // 20 tries, none in the last week (the health job would take an endpoint whose every delivery of a
  // day failed for one that is down, and notify its merchant during the figures).
  const body = (type: string, source: string) =>
    `'{"id":"' || ${source}.id || '","type":"${type}","version":1,"created_at":"' || ${d.iso(`${source}.created_at`)} || '","data":{"id":"' || ${source}.object_id || '","status":"' || ${source}.status || '","note":"' || ${d.filler(300)} || '"}}'`;
  await step('events', [
    `insert into events (id, user_id, mode, type, object_id, body, created_at)
       select id, user_id, mode, 'request.created', object_id, ${body('request.created', 'r')}, created_at
       from (select ${idWith('event', 'r.created_at + 100', `'0' || ${d.tail('r.id', 15)}`)} as id, r.user_id, r.mode, r.id as object_id,
               r.created_at + 100 as created_at, r.status
             from requests r where ${lastByte(d, 'r.id')} % 2 = 0) r`,
    `insert into events (id, user_id, mode, type, object_id, body, created_at)
       select id, user_id, mode, 'payment.status_updated', object_id, ${body('payment.status_updated', 'p')}, created_at
       from (select ${idWith('event', 'p.created_at + 2100', `'F' || ${d.tail('p.id', 15)}`)} as id, p.user_id, p.mode, p.id as object_id,
               p.created_at + 2100 as created_at, p.status
             from payments p where ${lastByte(d, 'p.id')} % 2 = 1) p`,
  ]);
  await step('webhook deliveries and attempts', [
    `insert into webhook_deliveries (id, event_id, endpoint_id, user_id, mode, status, attempts, first_attempt_at, last_attempt_at,
       next_attempt_at, failed_at, succeeded_at, superseded_by, with_secret, created_at)
     select 'delivery_' || ${time10('x.created_at + 5')} || ${d.tail('x.id', 16)}, x.id, w.id, x.user_id, x.mode, x.status, x.attempts,
       case when x.attempts > 0 then x.created_at + 20 else null end,
       case when x.attempts > 0 then x.created_at + 20 + (x.attempts - 1) * 8000 else null end,
       null, case when x.status = 'failed' then x.created_at + 20 + 19 * 8000 else null end,
       case when x.status = 'succeeded' then x.created_at + 60 + (x.attempts - 1) * 8000 else null end,
       null, 0, x.created_at + 5
     from (select e.*, case when e.v < 5 and e.old then 'failed' when e.v < 8 then 'cancelled' else 'succeeded' end as status,
             case when e.v < 5 and e.old then 20 when e.v < 8 then 0 when e.v < 16 then 3 when e.v < 32 then 2 else 1 end as attempts
           from (select id, user_id, mode, created_at, ${lastByte(d, `substr(id, 1, length(id) - 2)`)} as v,
                   created_at < ${now - 7 * DAY} as old from events) e) x
     join webhook_endpoints w on w.user_id = x.user_id and w.mode = x.mode`,
    `insert into webhook_attempts (id, delivery_id, attempt, started_at, latency_ms, status_code, response_body, error)
       select 'attempt_' || ${time10('d.created_at + 15 + g.i * 8000')} || ${d.tail('d.id', 16)} || g.i, d.id, g.i, d.created_at + 15 + g.i * 8000,
         40 + g.i, case when d.status = 'succeeded' and g.i = d.attempts then 200 else 500 end,
         case when d.status = 'succeeded' and g.i = d.attempts then '' else 'Internal Server Error' end, null
       from webhook_deliveries d join ${d.series(20, 1)} on g.i <= d.attempts`,
  ]);

  // Jobs the service keeps: each active subscription's next charge, each open request's expiry, and
  // jobs given up on (finished jobs are deleted as they finish).
  const failedKinds = ['payment.reconcile', 'mail.send', 'refund.execute', 'recurring_consent.revoke_at_bank'];
  await step('jobs, mail and idempotency keys', [
    `insert into jobs (id, kind, run_at, clock_id, payload, dedupe_key, attempts, created_at)
       select 'job_' || substr(id, 14), 'subscription.charge', next_charge_at, case when mode = 'test' then user_id else null end,
         '{"subscription_id":"' || id || '"}', 'subscription.charge:' || id, 0, updated_at
       from subscriptions where status = 'active'`,
    `insert into jobs (id, kind, run_at, clock_id, payload, dedupe_key, attempts, created_at)
       select 'job_' || substr(id, 9), 'request.expire', expires_at, case when mode = 'test' then user_id else null end,
         '{"request_id":"' || id || '"}', 'request.expire:' || id, 0, created_at
       from requests where status = 'active' and expires_at is not null`,
    `insert into jobs (id, kind, run_at, clock_id, payload, lane, attempts, last_error, failed_at, created_at)
       select ${idOf(d, 'job', `${now} - i * ${Math.floor((45 * DAY) / n.failed_jobs)}`, 'i')},
         case i % 4 ${failedKinds.map((kind, k) => `when ${k} then '${kind}'`).join(' ')} end,
         ${now} - i * ${Math.floor((45 * DAY) / n.failed_jobs)}, null, '{"payment_id":"payment_x"}',
         case when i % 4 = 1 then 'mail.send' else null end, 12, 'gave up: ' || ${d.filler(60)},
         ${now} - i * ${Math.floor((45 * DAY) / n.failed_jobs)}, ${now} - i * ${Math.floor((45 * DAY) / n.failed_jobs)} - ${DAY}
       from ${d.series(n.failed_jobs)}`,
    `insert into mail_messages (id, to_address, template, data, related_type, related_id, user_id, mode, status, attempts, dedupe_key, created_at, sent_at)
       select 'mail_' || substr(id, 9), 'payer-' || lower(${d.tail('subscription_id', 6)}) || '@example.com', 'charge_receipt',
         '{"merchant":"Merchant","title":"Plan","amount":"$15.00","date":"' || ${d.iso('created_at')} || '","particulars":"' || particulars || '","code":"TONO","reference":"","test":false}',
         'subscription', subscription_id, user_id, mode, 'sent', 1, 'charge_receipt:' || id, created_at + 3000, created_at + 4000
       from payments where subscription_id is not null and status = 'successful'`,
    `insert into idempotency_keys (user_id, mode, key, endpoint, fingerprint, status_code, response, created_at, expires_at)
       select m.user_id, ${modeOf('x.h')}, 'key-' || x.i, 'POST /v1/requests', ${d.filler(64)}, 201, 'sealed:v1:' || ${d.filler(1400)},
         x.t, x.t + ${DAY}
       from (select i, ${hash('i')} as h, ${now} - ${DAY} + i * ${Math.floor(DAY / n.idempotency_keys)} as t from ${d.series(n.idempotency_keys)}) x
       join bench_merchants m on m.idx = ${merchantOf('x.h')}`,
    `drop table bench_merchants`,
  ]);
  return n;
}
