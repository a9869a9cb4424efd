import { Type, type Static } from 'typebox';
import { Timestamp } from '../../http/schemas.ts';
import { listQueryFields } from '../../shared/pagination.ts';

export const AddressObject = Type.Object({
  address1: Type.String(), address2: Type.String(), address3: Type.String(), address4: Type.String(), city: Type.String(), postcode: Type.String(),
}, { title: 'Address' });

export const CustomerObject = Type.Object({
  id: Type.String({ examples: ['customer_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
  business_user_id: Type.String(),
  email: Type.String(),
  phone: Type.String(),
  first_name: Type.String(),
  last_name: Type.String(),
  address: AddressObject,
  created_at: Timestamp,
  updated_at: Timestamp,
}, { title: 'Customer' });
export const CustomerEnvelope = Type.Object({ customer: CustomerObject });

export const CustInfoObject = Type.Object({
  id: Type.String({ examples: ['custinfo_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
  payment_id: Type.String(),
  email: Type.String(),
  phone: Type.String(),
  first_name: Type.String(),
  last_name: Type.String(),
  address1: Type.String(),
  address2: Type.String(),
  address3: Type.String(),
  address4: Type.String(),
  city: Type.String(),
  postcode: Type.String(),
  marketing_opt_in: Type.Boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
}, { title: 'CustInfo' });

export const ListCustomersQuery = Type.Object(
  { ...listQueryFields('customer'), email: Type.Optional(Type.String({ maxLength: 254, description: 'Only the customer with this email' })) },
  { additionalProperties: false },
);
export type ListCustomersQuery = Static<typeof ListCustomersQuery>;
