import { Type, type Static, type TSchema } from 'typebox';
import { ADDRESS_FIELDS } from './customers.rules.ts';

type AddressField = (typeof ADDRESS_FIELDS)[number];
import { Timestamp } from '../../http/schemas.ts';
import { listQueryFields } from '../../shared/pagination.ts';

/** One string field per address line (customers.rules.ts keeps the list). */
export const addressSchemaFields = <S extends TSchema>(schemaOf: (field: AddressField) => S) =>
  Object.fromEntries(ADDRESS_FIELDS.map((field) => [field, schemaOf(field)])) as { [K in AddressField]: S };

export const AddressObject = Type.Object(
  addressSchemaFields(() => Type.String()),
  { title: 'Address' },
);

export const CustomerObject = Type.Object(
  {
    id: Type.String({ examples: ['customer_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    business_user_id: Type.String(),
    email: Type.String(),
    phone: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
    address: AddressObject,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Customer' },
);
export const CustomerEnvelope = Type.Object({ customer: CustomerObject });

export const CustInfoObject = Type.Object(
  {
    id: Type.String({ examples: ['custinfo_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    payment_id: Type.String(),
    email: Type.String(),
    phone: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
    ...addressSchemaFields(() => Type.String()),
    marketing_opt_in: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'CustInfo' },
);

export const ListCustomersQuery = Type.Object(
  {
    ...listQueryFields('customer'),
    email: Type.Optional(Type.String({ maxLength: 254, description: 'Only the customer with this email' })),
  },
  { additionalProperties: false },
);
export type ListCustomersQuery = Static<typeof ListCustomersQuery>;
