import { Type, type Static } from 'typebox';
import { AmountInput } from '../../http/schemas.ts';
import { addressSchemaFields } from '../customers/customers.schemas.ts';

const text = (max: number) => Type.Optional(Type.String({ maxLength: max }));

export const PayBody = Type.Object(
  {
    outcome: Type.Optional(
      Type.Enum(['approve', 'decline'], { default: 'approve', description: 'What the payer does at the sandbox bank' }),
    ),
    amount: Type.Optional(AmountInput('The payer-chosen amount, for requests with allow_dynamic_amount')),
    cust_info: Type.Optional(
      Type.Object(
        {
          email: Type.Optional(Type.String({ format: 'email', maxLength: 254, 'x-expected': 'an email address' })),
          first_name: text(100),
          last_name: text(100),
          phone: Type.Optional(
            Type.String({
              maxLength: 32,
              pattern: '^\\+?[0-9 ()-]{5,31}$',
              'x-expected': 'a phone number of digits, spaces, ()- and an optional leading +',
            }),
          ),
          ...addressSchemaFields((field) => text(field === 'postcode' ? 10 : 100)),
        },
        { additionalProperties: false, description: 'Payer details, as the payment page collects them' },
      ),
    ),
    marketing_opt_in: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type PayBody = Static<typeof PayBody>;
