import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTonoClient, type TonoClient } from '@tono/client';
import { decodeTime, encodeTime } from 'ulid';
import type { Config } from '../../config.ts';
import { EVENT_TYPES } from '../../modules/events/events.builders.ts';
import { deliverySignatureHeaders } from '../../modules/webhooks/signing.ts';
import type { CliCommand } from '../command.ts';
import { triggerEvent, TRIGGERABLE } from './trigger.ts';

// Developer commands that talk to a Tono over HTTP with a test key, like a merchant's code would:
// `listen` forwards the merchant's test events to a local URL, signed with a secret of its own;
// `trigger` makes an event happen through the test helpers (docs/webhooks.md, "Testing on a laptop").

const FORWARD_TIMEOUT_MS = 10_000;
/** How long each long poll may wait on the service for the next event. */
const LONG_POLL_SECONDS = 25;
/** How far back catch-up reads look, so an event that committed late (an older id) is not missed. */
export const LOOKBACK_MS = 5_000;
/**
 * When catch-up reads happen after new events are seen: one soon, for the usual straggler whose
 * transaction committed a moment after a newer event's; one at the end of the look-back, for a
 * slow one. Never more often than CATCH_UP_GAP_MS, however fast events come.
 */
export const CATCH_UP_AFTER_MS = [1_000, LOOKBACK_MS];
export const CATCH_UP_GAP_MS = 1_000;

/** The smallest event id of a moment: ids are `event_` + a ULID, whose first 10 characters are its time. */
export function eventIdFloor(at: number): string {
  return `event_${encodeTime(Math.max(0, Math.floor(at)), 10)}${'0'.repeat(16)}`;
}

/** The time an event id was made. */
export function eventIdTime(id: string): number {
  return decodeTime(id.slice('event_'.length));
}

/** A call to make to the feed, asked for at `at`: a catch-up read re-reads ids already passed, without waiting. */
export type FeedAsk = { after: string; wait: number; catchUp: boolean; at: number };

/**
 * Where `listen` is in the feed, and what it forwarded. An event's id is made when the event is,
 * but the feed shows it only once its transaction commits, which can be after a newer event's: its
 * id then sorts behind the cursor. A long poll that looked back LOOKBACK_MS would find it, but it
 * answers at once with the events already seen, so the loop would never wait and would hammer the
 * service until rate limited. So long polls follow the feed's own cursor, and each batch of new
 * events is followed by a few reads, without waiting, from LOOKBACK_MS before the newest of them
 * (the window fixed when they arrive, so that newer events coming all the while cannot move it
 * past a late one): an event that commits within LOOKBACK_MS of its id being made is still found.
 * Ids are remembered for as long as a read can return them again, so each is forwarded once.
 */
export class SeenEvents {
  readonly #start: string;
  #cursor: string;
  readonly #seen = new Set<string>();
  #newest = -1;
  /** Catch-up reads still to make, soonest first: each from its floor once due (ms, this process's clock). */
  #catchUps: Array<{ due: number; floor: string }> = [];
  #lastCatchUp = -Infinity;
  /** Where a catch-up goes on from when its page was full before it reached the cursor. */
  #resume: string | null = null;

  /** `start`: the feed's cursor when listen started; nothing at or before it is forwarded. */
  constructor(start: string) {
    this.#start = start;
    this.#cursor = start;
  }

  /** The call to make at `now`. */
  next(now: number): FeedAsk {
    if (this.#resume !== null) return { after: this.#resume, wait: 0, catchUp: true, at: now };
    const soonest = this.#catchUps[0];
    const due = soonest && Math.max(soonest.due, this.#lastCatchUp + CATCH_UP_GAP_MS);
    if (due !== undefined && due <= now) {
      let after = this.#cursor;
      for (const catchUp of this.#catchUps) if (catchUp.due <= now && catchUp.floor < after) after = catchUp.floor;
      return { after, wait: 0, catchUp: true, at: now };
    }
    // a long poll that ends by the next catch-up read, so a quiet feed does not hold that up
    const wait = due === undefined ? LONG_POLL_SECONDS : Math.min(LONG_POLL_SECONDS, Math.ceil((due - now) / 1000));
    return { after: this.#cursor, wait, catchUp: false, at: now };
  }

  /** The events of the answer to `ask` not forwarded yet, oldest first. */
  took<E extends { id: string }>(ask: FeedAsk, page: { events: E[]; cursor: string | null }, now: number): E[] {
    if (ask.catchUp) {
      if (this.#resume === null) {
        this.#catchUps = this.#catchUps.filter((catchUp) => catchUp.due > ask.at);
        this.#lastCatchUp = ask.at;
      }
      // A page that is not full reaches the cursor's own event: one that stops short was cut off.
      this.#resume = page.events.length > 0 && page.cursor !== null && page.cursor < this.#cursor ? page.cursor : null;
    }
    if (page.cursor !== null && page.cursor > this.#cursor) this.#cursor = page.cursor;
    const fresh = page.events.filter((event) => !this.#seen.has(event.id));
    for (const event of fresh) {
      this.#seen.add(event.id);
      this.#newest = Math.max(this.#newest, eventIdTime(event.id));
    }
    if (fresh.length > 0) {
      const floor = this.#floor();
      this.#catchUps.push(...CATCH_UP_AFTER_MS.map((after) => ({ due: now + after, floor })));
      this.#catchUps.sort((a, b) => a.due - b.due);
    }
    // No read to come starts below the lowest of these (later catch-ups start at #floor() or
    // above), so ids at or below it cannot come again.
    let lowest = this.#floor();
    if (this.#resume !== null && this.#resume < lowest) lowest = this.#resume;
    for (const catchUp of this.#catchUps) if (catchUp.floor < lowest) lowest = catchUp.floor;
    for (const id of this.#seen) if (id <= lowest) this.#seen.delete(id);
    return fresh;
  }

  /** Where a catch-up read for the newest event seen starts: never before `start`. */
  #floor(): string {
    const floor = eventIdFloor(this.#newest - LOOKBACK_MS);
    // biome-ignore lint/complexity/useMathMinMax: these are ids, compared as text
    return floor > this.#start ? floor : this.#start;
  }
}

/** How long a 429 asks to wait: Retry-After in seconds (or as a date), at least a second, so a bad header cannot make a tight loop. */
export function retryAfterMs(header: string | null, now: number): number {
  const value = header?.trim() ?? '';
  const at = /^\d+$/.test(value) ? now + Number(value) * 1000 : Date.parse(value);
  return Number.isNaN(at) ? 1000 : Math.max(1000, at - now);
}

function requireTestKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0) throw new Error('--api-key is required: a test key, sk_test_…');
  if (!key.startsWith('sk_test_'))
    throw new Error('--api-key must be a test key (sk_test_…): listen and trigger work on test-mode events only');
  return key;
}

function httpUrl(value: unknown, flag: string): string {
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    throw new Error(`${flag} must be an http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`${flag} must be an http(s) URL, got ${JSON.stringify(value)}`);
  return url.toString().replace(/\/$/, '');
}

export function parseEventList(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const list = String(value)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = list.find((type) => !(EVENT_TYPES as readonly string[]).includes(type));
  if (list.length === 0 || unknown)
    throw new Error(
      `--events must be comma-separated event types${unknown ? `; ${JSON.stringify(unknown)} is not one` : ''} (known: ${EVENT_TYPES.join(', ')})`,
    );
  return list;
}

function clientFor(config: Config, options: Record<string, any>): { tono: TonoClient; baseUrl: string } {
  const apiKey = requireTestKey(options['api-key']);
  const baseUrl = httpUrl(options['base-url'] ?? config.publicBaseUrl, '--base-url');
  return { tono: createTonoClient({ apiKey, baseUrl }), baseUrl };
}

type Forwarded = { status: number | null; error: string | null };

async function forward(target: string, body: string, headers: Record<string, string>): Promise<Forwarded> {
  try {
    const reply = await fetch(target, {
      method: 'POST',
      body,
      headers,
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
      redirect: 'manual',
    });
    await reply.body?.cancel();
    return { status: reply.status, error: null };
  } catch (error) {
    const err = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    return {
      status: null,
      error:
        err.name === 'TimeoutError'
          ? `no reply within ${FORWARD_TIMEOUT_MS / 1000} s`
          : (err.cause?.code ?? err.cause?.message ?? err.message ?? String(error)),
    };
  }
}

const out = (line: string) => process.stdout.write(`${line}\n`);
const timeOf = () => new Date().toISOString().replace('T', ' ').slice(0, 19);

export const devCommands: Record<string, CliCommand> = {
  listen: {
    usage:
      '--forward-to URL --api-key sk_test_… [--events a,b] [--base-url URL]   forward test events to a local URL, signed with a secret it prints',
    options: {
      'forward-to': { type: 'string' },
      'api-key': { type: 'string' },
      events: { type: 'string' },
      'base-url': { type: 'string' },
    },
    async run(config, options) {
      if (!options['forward-to'])
        throw new Error('listen needs --forward-to URL (where to POST each event, e.g. http://localhost:4242/hooks)');
      const target = httpUrl(options['forward-to'], '--forward-to');
      const types = parseEventList(options.events);
      const { tono, baseUrl } = clientFor(config, options);
      const secret = randomBytes(32).toString('base64');
      const stop = new AbortController();
      const quit = () => stop.abort();
      process.once('SIGINT', quit);
      process.once('SIGTERM', quit);

      const feed = (query: { after?: string; wait: number }) =>
        tono.GET('/v1/events/feed', {
          params: { query: { ...query, ...(types && { types: types.join(',') }) } },
          signal: stop.signal,
        });
      const pause = (ms: number) => sleep(ms, undefined, { signal: stop.signal }).catch(() => {});
      /** Says why a call was refused, and waits before the next: as long as a 429 asks, else a second. */
      const refused = async (response: Response, code: string) => {
        const ms = response.status === 429 ? retryAfterMs(response.headers.get('retry-after'), Date.now()) : 1000;
        out(
          `${timeOf()}  ${baseUrl} answered ${response.status} ${code}; trying again${response.status === 429 ? ` in ${Math.ceil(ms / 1000)} s, as it asks` : ''}`,
        );
        await pause(ms);
      };

      // The first call fixes the starting point: events from now on, not the backlog.
      let first = await feed({ wait: 0 });
      while (first.error && first.response.status === 429) {
        await refused(first.response, first.error.code);
        if (stop.signal.aborted) return 0;
        first = await feed({ wait: 0 });
      }
      if (first.error) throw new Error(`${baseUrl} refused the key: ${first.error.message}`);
      // no event yet: everything that comes is new
      const start = first.data.cursor ?? eventIdFloor(0);
      out(`Ready. Forwarding test events${types ? ` (${types.join(', ')})` : ''} from ${baseUrl} to ${target}`);
      out(`Webhook signing secret for this session: ${secret}`);
      out("(verify with it as with an endpoint's secret; Ctrl-C stops)");

      const seen = new SeenEvents(start);
      let forwarded = 0;
      let backoff = 500;
      while (!stop.signal.aborted) {
        const ask = seen.next(Date.now());
        let page: Awaited<ReturnType<typeof feed>>;
        try {
          page = await feed({ after: ask.after, wait: ask.wait });
        } catch (error) {
          if (stop.signal.aborted) break;
          out(`${timeOf()}  cannot reach ${baseUrl} (${(error as Error).message}); trying again`);
          await pause(backoff);
          backoff = Math.min(backoff * 2, 10_000);
          continue;
        }
        backoff = 500;
        if (page.error) {
          if (page.response.status === 401) throw new Error(`${baseUrl} refused the key: ${page.error.message}`);
          await refused(page.response, page.error.code);
          continue;
        }
        for (const event of seen.took(ask, page.data, Date.now())) {
          const body = JSON.stringify(event);
          const headers = {
            'content-type': 'application/json',
            'user-agent': 'Tono-CLI-listen/1',
            'x-service-event-id': event.id,
            'x-service-delivery-attempt': '1',
            ...deliverySignatureHeaders(body, secret, event.id, Date.now()),
          };
          const result = await forward(target, body, headers);
          forwarded++;
          out(
            `${timeOf()}  ${event.type.padEnd(28)} ${event.id}  -> ${result.status ?? `failed: ${result.error}`}  POST ${target}`,
          );
        }
      }
      out(`Stopped after forwarding ${forwarded} event${forwarded === 1 ? '' : 's'}.`);
      return 0;
    },
  },
  trigger: {
    usage: `EVENT_TYPE --api-key sk_test_… [--base-url URL]   make a test event happen (${TRIGGERABLE.length} types; \`trigger --help\` lists them)`,
    options: { 'api-key': { type: 'string' }, 'base-url': { type: 'string' }, help: { type: 'boolean' } },
    async run(config, options, positionals) {
      const type = positionals[0];
      if (options.help || !type) {
        out(
          `usage: npm run --silent cli -- trigger EVENT_TYPE --api-key sk_test_… [--base-url URL]\n\nevent types:\n${TRIGGERABLE.map((t) => `  ${t}`).join('\n')}`,
        );
        return type || options.help ? 0 : 2;
      }
      if (!(TRIGGERABLE as readonly string[]).includes(type))
        throw new Error(`cannot trigger ${JSON.stringify(type)}; these can be: ${TRIGGERABLE.join(', ')}`);
      const { tono } = clientFor(config, options);
      const steps = await triggerEvent(tono, type as (typeof TRIGGERABLE)[number]);
      for (const step of steps) out(step);
      out(`Triggered ${type}.`);
      return 0;
    },
  },
};
