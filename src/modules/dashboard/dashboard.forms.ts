import { randomUUID } from 'node:crypto';
import type { TSchema } from 'typebox';
import { schemaErrorToAppError, validatorCompiler } from '../../http/validation.ts';
import { AppError } from '../../shared/errors.ts';

// Form posts become the API's JSON bodies, checked against the API's own schemas, so a page and
// the API accept and refuse the same things.

/** "10", "10.5", "$10.50", "1,000.00" as the API's "10.50 NZD"; other text passes through for the schema to refuse. */
export function amountText(raw: string): string {
  const cleaned = raw.replace(/^\$/, '').replace(/,/g, '').trim();
  if (/^\d+(\.\d{1,2})?$/.test(cleaned)) {
    const [whole, fraction = ''] = cleaned.split('.');
    return `${String(Number(whole))}.${fraction.padEnd(2, '0')} NZD`;
  }
  return raw.endsWith(' NZD') ? raw : `${raw} NZD`;
}

/** Dollars typed in a form as whole cents; null when blank; NaN when not an amount (the schema refuses it). */
export function dollarsToCents(raw: string): number | null {
  if (!raw) return null;
  const cleaned = raw.replace(/^\$/, '').replace(/,/g, '').trim();
  if (!/^\d+(\.\d{1,2})?$/.test(cleaned)) return Number.NaN;
  const [whole, fraction = ''] = cleaned.split('.');
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0'));
}

const validators = new WeakMap<TSchema, (data: unknown) => boolean>();

/** The API's own check of a body: null when it passes, else the error the API would give. */
export function apiBodyProblem(schema: TSchema, body: unknown): AppError | null {
  let validate = validators.get(schema) as (((data: unknown) => boolean) & { errors?: any[] | null }) | undefined;
  if (!validate) {
    validate = validatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '' } as any) as (
      data: unknown,
    ) => boolean;
    validators.set(schema, validate);
  }
  if (validate(body)) return null;
  return schemaErrorToAppError((validate as any).errors ?? [], 'body');
}

/**
 * The one-time key a form carries (its hidden `idempotency_key`), made when the form's page is
 * shown (a GET), kept through a review and its confirmation and when the form is shown again after
 * a refusal: posting the same form twice (a double click, a reload of the reply, Back and send again)
 * does the thing once (a request, an endpoint, a key, a bank account, a refund, a charge).
 */
export function newConfirmationKey(): string {
  return `dashboard-${randomUUID()}`;
}

/** The form's key as posted, or null when it is not one newConfirmationKey made. */
export function confirmationKeyOf(posted: string): string | null {
  return /^dashboard-[0-9a-f-]{36}$/.test(posted) ? posted : null;
}

/** A form post's one-time key (`idempotency_key`), or null when it carries none (a page from before keys). */
export function formKeyOf(form: Record<string, unknown>): string | null {
  return typeof form.idempotency_key === 'string' ? confirmationKeyOf(form.idempotency_key) : null;
}

/**
 * Whether the service refused a form's key as sent before with other values: the form made what it
 * made the first time, and is shown again with a new key (SENT_BEFORE says so).
 */
export function isSentBeforeWithOtherValues(error: unknown): boolean {
  return error instanceof AppError && error.code === 'conflict.idempotency_key_reused';
}

export const SENT_BEFORE =
  'This form was sent before with other values, and did what it did then; nothing more was done. Check the form, and send it again to do it once more.';
