// Payer details and how they reach the merchant's customer record, as plain functions.

// The one list of a payer's details: every type, schema, form and copy of them is built from these.

/** Who the payer is: absent rather than empty when not given. */
export const PERSON_FIELDS = ['first_name', 'last_name', 'phone'] as const;
/** Where the payer lives: the lines belong together, and are empty strings when not given. */
export const ADDRESS_FIELDS = ['address1', 'address2', 'address3', 'address4', 'city', 'postcode'] as const;

export type PersonFields = { [K in (typeof PERSON_FIELDS)[number]]: string | null };
export type AddressFields = { [K in (typeof ADDRESS_FIELDS)[number]]: string };

export type PayerDetails = { email: string | null } & PersonFields & AddressFields & { marketing_opt_in: boolean };

export const EMPTY_ADDRESS = Object.fromEntries(ADDRESS_FIELDS.map((field) => [field, ''])) as AddressFields;

export const EMPTY_DETAILS: PayerDetails = {
  email: null,
  ...(Object.fromEntries(PERSON_FIELDS.map((field) => [field, null])) as PersonFields),
  ...EMPTY_ADDRESS,
  marketing_opt_in: false,
};

/** The fields of a customer record that payer details update. */
export type CustomerFields = PersonFields & AddressFields;

/** The address lines of anything that has them. */
export function addressOf(row: AddressFields): AddressFields {
  return Object.fromEntries(ADDRESS_FIELDS.map((field) => [field, row[field]])) as AddressFields;
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

const isGiven = (value: string | null | undefined): value is string =>
  value !== undefined && value !== null && value !== '';

/** Whether details carry an address: a first line, a city or a postcode. */
const hasAddress = (details: Partial<AddressFields>) =>
  [details.address1, details.city, details.postcode].some(isGiven);

const hasNoAddress = (row: AddressFields) => ADDRESS_FIELDS.every((field) => row[field] === '');

/**
 * What details the merchant gave change on its customer: a field given replaces the stored one, a
 * field not given keeps it, and a given address replaces the whole stored address (its lines
 * belong together).
 */
export function merchantReplacements(current: CustomerFields, given: Partial<CustomerFields>): Partial<CustomerFields> {
  const changes: Partial<CustomerFields> = {};
  for (const field of PERSON_FIELDS) {
    const next = given[field];
    if (isGiven(next) && next !== current[field]) changes[field] = next;
  }
  if (hasAddress(given)) {
    for (const field of ADDRESS_FIELDS) {
      const next = given[field] ?? '';
      if (next !== current[field]) changes[field] = next;
    }
  }
  return changes;
}

/**
 * What details a payer typed change on a customer. Nothing proves the payer owns the email they
 * typed, so their details only fill what the customer lacks (an empty name or phone, an address
 * when none is stored) and never replace what the customer already has.
 */
export function payerFills(current: CustomerFields, typed: Partial<CustomerFields>): Partial<CustomerFields> {
  const changes: Partial<CustomerFields> = {};
  for (const field of PERSON_FIELDS) {
    const next = typed[field];
    if (isGiven(next) && !isGiven(current[field])) changes[field] = next;
  }
  if (hasAddress(typed) && hasNoAddress(current)) {
    for (const field of ADDRESS_FIELDS) {
      const line = typed[field];
      if (isGiven(line)) changes[field] = line;
    }
  }
  return changes;
}

/**
 * The changes details from a checkout make to an existing customer: the fields the merchant gave
 * replace stored ones, then what the payer typed fills what is still empty.
 */
export function customerChanges(
  current: CustomerFields,
  typed: Partial<CustomerFields>,
  merchantGiven: Partial<CustomerFields> = {},
): Partial<CustomerFields> {
  const replaced = merchantReplacements(current, merchantGiven);
  return { ...replaced, ...payerFills({ ...current, ...replaced }, typed) };
}

/**
 * Details recorded with a payment, completed from the customer record where the payment says
 * nothing (a subscription's charge carries what the payer gave at approval, often the email alone):
 * a person field missing takes the customer's, and no address at all takes the customer's address.
 */
export function filledFromCustomer<T extends CustomerFields>(info: T, customer: CustomerFields): T {
  const filled = { ...info };
  for (const field of PERSON_FIELDS) {
    if ((filled[field] === null || filled[field] === '') && customer[field]) filled[field] = customer[field];
  }
  if (hasNoAddress(info)) for (const field of ADDRESS_FIELDS) filled[field] = customer[field];
  return filled;
}
