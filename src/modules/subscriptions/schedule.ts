import { atFixedOffset, inZone, localAt, type LocalDateTime } from '../../shared/zone.ts';
import { displayAmount } from '../../shared/money.ts';

/**
 * The subscription schedule (docs/limits-and-schedule.md): pure functions from
 * (options, authorisation time, time zone) to charge times. No I/O.
 *
 * The anchor
 * - A schedule hangs off an anchor: a local date (slot 0) and a local charge time of day, in the
 *   service time zone (`SERVICE_TIME_ZONE`, Pacific/Auckland by default). The anchor's weekday
 *   (weekly, fortnightly) or day of month (monthly, quarterly, annually) is kept for every run.
 * - With `start_at` (10:00 local on the start date): the anchor is the start date at 10:00.
 * - Without `start_at`: the anchor is the local date and time of day of the authorisation.
 *
 * Slots
 * - Slot n is the anchor date plus n periods, at the anchor's time of day. It is always computed
 *   from the anchor and n, never by adding to the previous charge, so clamping never drifts.
 * - weekly / fortnightly: anchor date + 7n / 14n calendar days (same weekday).
 * - monthly / quarterly / annually: the anchor's day of month, n / 3n / 12n months on. When that day
 *   does not exist in the month, the month's last day; the anchor day returns in the next month
 *   that has it (31st -> 28 Feb -> 31 Mar -> 30 Apr; a 29 Feb anchor -> 28 Feb in common years,
 *   29 Feb in leap years).
 * - DST: the charge time is local wall time, so 10:00 stays 10:00 across daylight-saving changes.
 *   A charge time inside a spring-forward gap (only possible for an authorisation-time anchor
 *   between 02:00 and 03:00 in New Zealand) moves forward by the gap (02:30 -> 03:30); a time that
 *   occurs twice when clocks go back is its first occurrence. Luxon does the zone maths; nothing
 *   here adds hours.
 *
 * The first charge
 * - With a future `start_at`: slot 0, at `start_at`.
 * - Without `start_at`: slot 0, immediately at authorisation.
 * - With a `start_at` at or before authorisation (a past start date): immediately at authorisation.
 *   Decision: the anchor stays the start date's day and 10:00, and the immediate charge stands for
 *   the latest slot at or before authorisation (it is that slot, taken late). The next charge is
 *   the following slot, the first one after authorisation, so the payer is never charged for
 *   slots missed before they approved and the billing day is the one they chose.
 *
 * The end
 * - `total_count` counts successful charges (skipped slots do not count).
 * - A slot is beyond the end when its charge time is after `end_at`.
 * - The schedule is complete when the successful count reaches `total_count`, or the next slot
 *   is beyond `end_at`, whichever comes first.
 *
 * Retries
 * - A failed charge is retried at the same local time of day: weekly and fortnightly 1, 2 and 3
 *   calendar days after the charge, monthly, quarterly and annually 1, 3 and 5 days after.
 *   For a slot, retries after `end_at` or at/after the next slot's time are dropped.
 *   A successful retry keeps the anchor: the next charge is still the next slot.
 *
 * Resume
 * - On resume the anchor becomes the resume date (its weekday or day of month) at the original
 *   charge time of day, and the next charge is slot 1 of that anchor: one period after resuming.
 *
 * Storing it
 * - A Schedule is plain data: keep `anchor.localDate`, `anchor.localTime`, `firstSlot` and
 *   `firstChargeAt` (with the options) and rebuild the anchor with `makeAnchor`.
 * - `slotDate(anchor, n)` names a slot; (subscription, slot date) is a natural unique charge key.
 *   A charged slot's date is never scheduled again, even across a resume (the new slots start a
 *   period after the resume date). A slot dropped by a pause can reappear if the subscription is
 *   paused and resumed again on the same day, so a pending slot dropped on pause should be
 *   deleted or reused, not left holding the key.
 */

export const SubscriptionPeriod = ['weekly', 'fortnightly', 'monthly', 'quarterly', 'annually'] as const;
export type SubscriptionPeriod = (typeof SubscriptionPeriod)[number];

export type ScheduleOptions = {
  period: SubscriptionPeriod;
  /** 10:00 local on the start date, or null to start at authorisation. */
  start_at: number | null;
  end_at: number | null;
  total_count: number | null;
};

export type Anchor = {
  period: SubscriptionPeriod;
  /** Slot 0's local date, YYYY-MM-DD. */
  localDate: string;
  /** The local charge time of day, HH:mm:ss.SSS. */
  localTime: string;
  /** Day of month of `localDate` (1–31), kept by monthly, quarterly and annual schedules. */
  dayOfMonth: number;
  /** ISO weekday of `localDate` (1 = Monday … 7 = Sunday), kept by weekly and fortnightly schedules. */
  weekday: number;
};

export type Schedule = {
  zone: string;
  anchor: Anchor;
  /** The slot of the first charge: 0, or for a past start date the latest slot at or before authorisation. */
  firstSlot: number;
  /** When the first charge is taken: `start_at`, or the authorisation time. */
  firstChargeAt: number;
  end_at: number | null;
  total_count: number | null;
};

export { DEFAULT_ZONE } from '../../shared/zone.ts';
import { DEFAULT_ZONE } from '../../shared/zone.ts';

/** Wall times are compared and stored in these forms (`localTime` is always TIME_FORMAT). */
const WALL_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSS";
const TIME_FORMAT = 'HH:mm:ss.SSS';

const step = {
  weekly: (n: number) => ({ days: 7 * n }),
  fortnightly: (n: number) => ({ days: 14 * n }),
  monthly: (n: number) => ({ months: n }),
  quarterly: (n: number) => ({ months: 3 * n }),
  annually: (n: number) => ({ years: n }),
} as const;

const retryDays: Record<SubscriptionPeriod, readonly number[]> = {
  weekly: [1, 2, 3],
  fortnightly: [1, 2, 3],
  monthly: [1, 3, 5],
  quarterly: [1, 3, 5],
  annually: [1, 3, 5],
};

/**
 * Memoised pure calendar steps. The charge engine asks the same questions for many subscriptions
 * (the same anchors, slots and minutes of the day), and each luxon zone computation is costly.
 */
function memo<T>(compute: (key: string) => T): (key: string) => T {
  const cache = new Map<string, T>();
  return (key) => {
    let value = cache.get(key);
    if (value === undefined) {
      value = compute(key);
      if (cache.size >= 20_000) cache.clear();
      cache.set(key, value);
    }
    return value;
  };
}

const localDatePattern = /^\d{4}-\d{2}-\d{2}$/;
const localTimePattern = /^\d{2}:\d{2}(:\d{2}(\.\d{3})?)?$/;

/** An anchor from its stored parts: a local date and a local time of day (HH:mm, HH:mm:ss or HH:mm:ss.SSS). */
export function makeAnchor(period: SubscriptionPeriod, localDate: string, localTime: string): Anchor {
  return { ...anchorOf(`${period}|${localDate}|${localTime}`) };
}

const anchorOf = memo((key: string): Anchor => {
  const [period, localDate, localTime] = key.split('|') as [SubscriptionPeriod, string, string];
  const date = localAt(localDate, 'utc');
  const time = localAt(`1970-01-01T${localTime}`, 'utc');
  if (!localDatePattern.test(localDate) || !date.isValid)
    throw new RangeError(`makeAnchor: invalid local date ${localDate}`);
  if (!localTimePattern.test(localTime) || !time.isValid)
    throw new RangeError(`makeAnchor: invalid local time ${localTime}`);
  return { period, localDate, localTime: time.toFormat(TIME_FORMAT), dayOfMonth: date.day, weekday: date.weekday };
});

/** The anchor whose slot 0 is the local date and time of day of `at` in `zone`. */
export function anchorAt(period: SubscriptionPeriod, at: number, zone: string = DEFAULT_ZONE): Anchor {
  const local = inZone(at, zone);
  if (!local.isValid) throw new RangeError(`anchorAt: invalid time ${at} or zone ${zone}`);
  return makeAnchor(period, local.toISODate()!, local.toFormat(TIME_FORMAT));
}

/** The local date (YYYY-MM-DD) of slot n: the anchor date plus n periods, clamped to the month's end. */
export function slotDate(anchor: Anchor, n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`slotDate: slot must be a whole number >= 0, got ${n}`);
  return slotDateOf(`${anchor.period}|${anchor.localDate}|${n}`);
}

const slotDateOf = memo((key: string): string => {
  const [period, localDate, n] = key.split('|') as [SubscriptionPeriod, string, string];
  // Pure calendar arithmetic on a zone-less date; luxon clamps a missing day to the month's last day.
  return localAt(localDate, 'utc')
    .plus(step[period](Number(n)))
    .toISODate()!;
});

/**
 * The instant of a local wall time in `zone`. In a spring-forward gap luxon moves it forward by the
 * gap. When clocks go back the wall time happens twice and luxon's pick depends on the zone, so
 * the earlier occurrence (the offset in force the day before) is chosen here explicitly.
 */
function localInstant(localDate: string, localTime: string, zone: string): number {
  // Offsets change only on whole minutes, so the instant of HH:mm (gap and overlap rules included)
  // plus the seconds and milliseconds is the instant of HH:mm:ss.SSS.
  return (
    minuteInstant(`${zone}|${localDate}|${localTime.slice(0, 5)}`) +
    Math.round(Number(localTime.slice(6) || '0') * 1000)
  );
}

const minuteInstant = memo((key: string): number => {
  const [zone, localDate, minute] = key.split('|') as [string, string, string];
  const wallTime = `${localDate}T${minute}:00.000`;
  const chosen = localAt(wallTime, zone);
  if (!chosen.isValid) throw new RangeError(`invalid local time ${wallTime} or zone ${zone}`);
  const offsetBefore = chosen.minus({ days: 1 }).offset;
  if (offsetBefore === chosen.offset) return chosen.toMillis();
  const earlier = atFixedOffset(wallTime, offsetBefore).setZone(zone);
  return earlier.toFormat(WALL_FORMAT) === wallTime && earlier.toMillis() < chosen.toMillis()
    ? earlier.toMillis()
    : chosen.toMillis();
});

/** The nominal charge time of slot n: its local date at the anchor's local time of day, in `zone`. */
export function chargeAt(anchor: Anchor, n: number, zone: string = DEFAULT_ZONE): number {
  return localInstant(slotDate(anchor, n), anchor.localTime, zone);
}

/** Smallest slot n >= from whose time (by `timeOf`) is after `time`; slot times rise with n. */
function firstSlotAfter(timeOf: (n: number) => number, from: number, time: number): number {
  if (timeOf(from) > time) return from;
  let below = from;
  let distance = 1;
  while (timeOf(from + distance) <= time) {
    below = from + distance;
    distance *= 2;
  }
  let above = from + distance;
  while (above - below > 1) {
    const middle = Math.floor((below + above) / 2);
    if (timeOf(middle) > time) above = middle;
    else below = middle;
  }
  return above;
}

/** The schedule a subscription gets when the payer authorises it at `authorisedAt`. */
export function buildSchedule(options: ScheduleOptions, authorisedAt: number, zone: string = DEFAULT_ZONE): Schedule {
  const base = { zone, end_at: options.end_at, total_count: options.total_count };
  if (options.start_at === null) {
    return { ...base, anchor: anchorAt(options.period, authorisedAt, zone), firstSlot: 0, firstChargeAt: authorisedAt };
  }
  const anchor = anchorAt(options.period, options.start_at, zone);
  if (options.start_at > authorisedAt) return { ...base, anchor, firstSlot: 0, firstChargeAt: options.start_at };
  const latestDue = firstSlotAfter((n) => chargeAt(anchor, n, zone), 0, authorisedAt) - 1;
  return { ...base, anchor, firstSlot: latestDue, firstChargeAt: authorisedAt };
}

/** When slot n is charged: the first slot at `firstChargeAt`, later slots at their nominal time. */
export function slotTime(schedule: Schedule, n: number): number {
  if (n < schedule.firstSlot)
    throw new RangeError(`slotTime: slot ${n} is before the first slot ${schedule.firstSlot}`);
  return n === schedule.firstSlot ? schedule.firstChargeAt : chargeAt(schedule.anchor, n, schedule.zone);
}

/** The first slot (from `firstSlot` on) charged after `time`. */
export function nextSlotAfter(schedule: Schedule, time: number): number {
  return firstSlotAfter((n) => slotTime(schedule, n), schedule.firstSlot, time);
}

/** Whether slot n would be charged after `end_at` (and so is never charged). */
export function isBeyondEnd(schedule: Schedule, n: number): boolean {
  return schedule.end_at !== null && slotTime(schedule, n) > schedule.end_at;
}

/**
 * Whether the subscription is complete, given its successful charges so far and the slot that
 * would be charged next: the count reached `total_count`, or the next slot is after `end_at`.
 */
export function isComplete(schedule: Schedule, successfulCount: number, nextSlot: number): boolean {
  if (schedule.total_count !== null && successfulCount >= schedule.total_count) return true;
  return isBeyondEnd(schedule, nextSlot);
}

/** Retry times after a failed charge at `chargeAt`: +1, +2, +3 days (weekly, fortnightly) or +1, +3, +5 days, same local time. */
export function retryTimes(period: SubscriptionPeriod, chargeTime: number, zone: string = DEFAULT_ZONE): number[] {
  const local = inZone(chargeTime, zone);
  if (!local.isValid) throw new RangeError(`retryTimes: invalid time ${chargeTime} or zone ${zone}`);
  const date = localAt(local.toISODate()!, 'utc');
  return retryDays[period].map((days) =>
    localInstant(date.plus({ days }).toISODate()!, local.toFormat(TIME_FORMAT), zone),
  );
}

/** The retries of slot n that the schedule allows: none after `end_at`, none at or after the next slot. */
export function retriesForSlot(schedule: Schedule, n: number): number[] {
  const nextSlotTime = chargeAt(schedule.anchor, n + 1, schedule.zone);
  return retryTimes(schedule.anchor.period, slotTime(schedule, n), schedule.zone).filter(
    (time) => time < nextSlotTime && (schedule.end_at === null || time <= schedule.end_at),
  );
}

/** The anchor after a resume at `resumedAt`: the resume date, the original charge time of day. */
export function resumeAnchor(anchor: Anchor, resumedAt: number, zone: string = DEFAULT_ZONE): Anchor {
  const resumeDate = inZone(resumedAt, zone).toISODate();
  if (resumeDate === null) throw new RangeError(`resumeAnchor: invalid time ${resumedAt} or zone ${zone}`);
  return makeAnchor(anchor.period, resumeDate, anchor.localTime);
}

/** The schedule after a resume: the next charge is slot 1 of the new anchor, one period after resuming. */
export function resumeSchedule(schedule: Schedule, resumedAt: number): Schedule {
  const anchor = resumeAnchor(schedule.anchor, resumedAt, schedule.zone);
  return { ...schedule, anchor, firstSlot: 1, firstChargeAt: chargeAt(anchor, 1, schedule.zone) };
}

/** The charge times from slot `from` on, at most `max`, stopping at `end_at`; assumes every charge succeeds for `total_count`. */
export function upcomingCharges(
  schedule: Schedule,
  from: number,
  max: number,
  successfulSoFar = 0,
): { slot: number; at: number }[] {
  const charges: { slot: number; at: number }[] = [];
  for (let n = Math.max(from, schedule.firstSlot); charges.length < max; n += 1) {
    if (isComplete(schedule, successfulSoFar + charges.length, n)) break;
    charges.push({ slot: n, at: slotTime(schedule, n) });
  }
  return charges;
}

const everyWords: Record<SubscriptionPeriod, string> = {
  weekly: 'every week',
  fortnightly: 'every fortnight',
  monthly: 'every month',
  quarterly: 'every 3 months',
  annually: 'every year',
};

function describeEnd(endAt: number, zone: string): string {
  const local = inZone(endAt, zone).setLocale('en-US');
  // An end given as a date is stored as the last millisecond of that local day: show the date only.
  if (local.endOf('day').toMillis() === endAt) return local.toFormat('d LLLL yyyy');
  return `${local.toFormat('h:mm')}${local.toFormat('a').toLowerCase()} on ${local.toFormat('d LLLL yyyy')}`;
}

function clampNote(period: SubscriptionPeriod, start: LocalDateTime): string | null {
  if (period === 'weekly' || period === 'fortnightly') return null;
  if (period === 'annually')
    return start.month === 2 && start.day === 29 ? 'on 28 February when there is no 29th' : null;
  return start.day > 28 ? 'on the last day of shorter months' : null;
}

/**
 * The schedule in plain words for the payer page, for example
 * "$15.00 every fortnight from 3 March 2027, 6 payments".
 */
export function describeSchedule(
  options: ScheduleOptions & { amount_cents: number },
  zone: string = DEFAULT_ZONE,
): string {
  const parts: string[] = [];
  let lead = `${displayAmount(options.amount_cents)} ${everyWords[options.period]}`;
  if (options.start_at === null) {
    lead += ' starting when you approve';
  } else {
    const start = inZone(options.start_at, zone).setLocale('en-US');
    lead += ` from ${start.toFormat('d LLLL yyyy')}`;
    const note = clampNote(options.period, start);
    if (note) lead += ` (${note})`;
  }
  parts.push(lead);
  if (options.total_count !== null) {
    const count = `${options.total_count} ${options.total_count === 1 ? 'payment' : 'payments'}`;
    parts.push(options.end_at === null ? count : `at most ${count}`);
  }
  if (options.end_at !== null) parts.push(`until ${describeEnd(options.end_at, zone)}`);
  return parts.join(', ');
}
