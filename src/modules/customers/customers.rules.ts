// Payer details and how they update the merchant's customer record, as plain functions.

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

const hasAddress = (d: PayerDetails) => [d.address1, d.city, d.postcode].some((v) => v !== '');

/**
 * The changes new details make to a customer: a field given now replaces the stored one; a field
 * not given keeps it. A given address replaces the whole stored address (its lines belong together).
 */
export function customerChanges(current: CustomerFields, details: PayerDetails): Partial<CustomerFields> {
  const changes: Partial<CustomerFields> = {};
  for (const field of PERSON_FIELDS) {
    const next = details[field];
    if (next !== null && next !== '' && next !== current[field]) changes[field] = next;
  }
  if (hasAddress(details)) {
    for (const field of ADDRESS_FIELDS) {
      if (details[field] !== current[field]) changes[field] = details[field];
    }
  }
  return changes;
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
  const hasNoAddress = ADDRESS_FIELDS.every((field) => info[field] === '');
  if (hasNoAddress) for (const field of ADDRESS_FIELDS) filled[field] = customer[field];
  return filled;
}
