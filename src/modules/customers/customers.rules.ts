// Payer details and how they update the merchant's customer record, as plain functions.

export type PayerDetails = {
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  phone: string | null;
  address1: string;
  address2: string;
  address3: string;
  address4: string;
  city: string;
  postcode: string;
  marketing_opt_in: boolean;
};

export const EMPTY_DETAILS: PayerDetails = {
  email: null, first_name: null, last_name: null, phone: null,
  address1: '', address2: '', address3: '', address4: '', city: '', postcode: '', marketing_opt_in: false,
};

export type CustomerFields = {
  phone: string | null;
  first_name: string | null;
  last_name: string | null;
  address1: string;
  address2: string;
  address3: string;
  address4: string;
  city: string;
  postcode: string;
};

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
  for (const field of ['phone', 'first_name', 'last_name'] as const) {
    const next = details[field];
    if (next !== null && next !== '' && next !== current[field]) changes[field] = next;
  }
  if (hasAddress(details)) {
    for (const field of ['address1', 'address2', 'address3', 'address4', 'city', 'postcode'] as const) {
      if (details[field] !== current[field]) changes[field] = details[field];
    }
  }
  return changes;
}
