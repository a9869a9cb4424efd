import { randomBytes } from 'node:crypto';
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
/** How far back each poll looks again, so an event that committed late (an older id) is not missed. */
export const LOOKBACK_MS = 5_000;

/** The smallest event id of a moment: ids are `event_` + a ULID, whose first 10 characters are its time. */
export function eventIdFloor(at: number): string {
  return `event_${encodeTime(Math.max(0, Math.floor(at)), 10)}${'0'.repeat(16)}`;
}

/** The time an event id was made. */
export function eventIdTime(id: string): number {
  return decodeTime(id.slice('event_'.length));
}

/** Remembers what was forwarded, for as long as a later poll may return it again. */
export class SeenEvents {
  private readonly seen = new Map<string, number>();
  /** True the first time an id is offered. */
  add(id: string): boolean {
    if (this.seen.has(id)) return false;
    this.seen.set(id, eventIdTime(id));
    return true;
  }
  /** Where the next poll starts: a little before the newest event seen, never before `start`. */
  cursor(start: string): string {
    let newest = -1;
    for (const time of this.seen.values()) newest = Math.max(newest, time);
    if (newest < 0) return start;
    for (const [id, time] of this.seen) if (time < newest - 2 * LOOKBACK_MS) this.seen.delete(id);
    const floor = eventIdFloor(newest - LOOKBACK_MS);
    return floor > start ? floor : start;
  }
}

function requireTestKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0) throw new Error('--api-key is required: a test key, sk_test_…');
  if (!key.startsWith('sk_test_')) throw new Error('--api-key must be a test key (sk_test_…): listen and trigger work on test-mode events only');
  return key;
}

function httpUrl(value: unknown, flag: string): string {
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    throw new Error(`${flag} must be an http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`${flag} must be an http(s) URL, got ${JSON.stringify(value)}`);
  return url.toString().replace(/\/$/, '');
}

export function parseEventList(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const list = String(value).split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = list.find((type) => !(EVENT_TYPES as readonly string[]).includes(type));
  if (list.length === 0 || unknown) throw new Error(`--events must be comma-separated event types${unknown ? `; ${JSON.stringify(unknown)} is not one` : ''} (known: ${EVENT_TYPES.join(', ')})`);
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
    const reply = await fetch(target, { method: 'POST', body, headers, signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS), redirect: 'manual' });
    await reply.body?.cancel();
    return { status: reply.status, error: null };
  } catch (error) {
    const err = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    return { status: null, error: err.name === 'TimeoutError' ? `no reply within ${FORWARD_TIMEOUT_MS / 1000} s` : (err.cause?.code ?? err.cause?.message ?? err.message ?? String(error)) };
  }
}

const out = (line: string) => process.stdout.write(`${line}\n`);
const timeOf = () => new Date().toISOString().replace('T', ' ').slice(0, 19);

export const devCommands: Record<string, CliCommand> = {
  listen: {
    usage: '--forward-to URL --api-key sk_test_… [--events a,b] [--base-url URL]   forward test events to a local URL, signed with a secret it prints',
    options: { 'forward-to': { type: 'string' }, 'api-key': { type: 'string' }, events: { type: 'string' }, 'base-url': { type: 'string' } },
    async run(config, options) {
      if (!options['forward-to']) throw new Error('listen needs --forward-to URL (where to POST each event, e.g. http://localhost:4242/hooks)');
      const target = httpUrl(options['forward-to'], '--forward-to');
      const types = parseEventList(options.events);
      const { tono, baseUrl } = clientFor(config, options);
      const secret = randomBytes(32).toString('base64');
      const stop = new AbortController();
      const quit = () => stop.abort();
      process.once('SIGINT', quit);
      process.once('SIGTERM', quit);

      // The first call fixes the starting point: events from now on, not the backlog.
      const first = await tono.GET('/v1/events/feed', { params: { query: { wait: 0, ...(types && { types: types.join(',') }) } }, signal: stop.signal });
      if (first.error) throw new Error(`${baseUrl} refused the key: ${first.error.message}`);
      // no event yet: everything that comes is new
      const start = first.data.cursor ?? eventIdFloor(0);
      out(`Ready. Forwarding test events${types ? ` (${types.join(', ')})` : ''} from ${baseUrl} to ${target}`);
      out(`Webhook signing secret for this session: ${secret}`);
      out('(verify with it as with an endpoint\'s secret; Ctrl-C stops)');

      const seen = new SeenEvents();
      let forwarded = 0;
      let backoff = 500;
      while (!stop.signal.aborted) {
        let page;
        try {
          page = await tono.GET('/v1/events/feed', {
            params: { query: { after: seen.cursor(start), wait: 25, ...(types && { types: types.join(',') }) } },
            signal: stop.signal,
          });
        } catch (error) {
          if (stop.signal.aborted) break;
          out(`${timeOf()}  cannot reach ${baseUrl} (${(error as Error).message}); trying again`);
          await new Promise((resolve) => setTimeout(resolve, backoff));
          backoff = Math.min(backoff * 2, 10_000);
          continue;
        }
        backoff = 500;
        if (page.error) {
          if (page.response.status === 401) throw new Error(`${baseUrl} refused the key: ${page.error.message}`);
          out(`${timeOf()}  ${baseUrl} answered ${page.response.status} ${page.error.code}; trying again`);
          await new Promise((resolve) => setTimeout(resolve, 1000));
          continue;
        }
        for (const event of page.data.events) {
          if (!seen.add(event.id)) continue;
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
          out(`${timeOf()}  ${event.type.padEnd(28)} ${event.id}  -> ${result.status ?? `failed: ${result.error}`}  POST ${target}`);
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
        out(`usage: npm run --silent cli -- trigger EVENT_TYPE --api-key sk_test_… [--base-url URL]\n\nevent types:\n${TRIGGERABLE.map((t) => `  ${t}`).join('\n')}`);
        return type || options.help ? 0 : 2;
      }
      if (!(TRIGGERABLE as readonly string[]).includes(type)) throw new Error(`cannot trigger ${JSON.stringify(type)}; these can be: ${TRIGGERABLE.join(', ')}`);
      const { tono } = clientFor(config, options);
      const steps = await triggerEvent(tono, type as (typeof TRIGGERABLE)[number]);
      for (const step of steps) out(step);
      out(`Triggered ${type}.`);
      return 0;
    },
  },
};
