import { randomUUID } from 'node:crypto';
import type { TSchema } from 'typebox';
import { schemaErrorToAppError, validatorCompiler } from '../../http/validation.ts';
import type { AppError } from '../../shared/errors.ts';

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
 * The idempotency key a confirmation page carries, made when it is shown: submitting the same
 * confirmation twice does the thing once (a charge, a refund).
 */
export function newConfirmationKey(): string {
  return `dashboard-${randomUUID()}`;
}

/** The confirmation's key as posted, or null when it is not one newConfirmationKey made. */
export function confirmationKeyOf(posted: string): string | null {
  return /^dashboard-[0-9a-f-]{36}$/.test(posted) ? posted : null;
}
