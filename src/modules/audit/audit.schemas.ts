import { Type, type Static } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.ts';
import { listQueryFields } from '../../shared/pagination.ts';

export const ACTOR_KINDS = ['api_key', 'member', 'payer', 'operator', 'service'] as const;

export const AuditEventObject = Type.Object(
  {
    id: Type.String({ examples: ['aud_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    seq: Type.Integer({ description: "The record's number in the merchant's chain: 1, 2, …" }),
    created_at: Timestamp,
    mode: Nullable(Type.Enum(['live', 'test'], { description: 'Null for what has no mode (settings)' })),
    actor: Type.Object({
      kind: Type.Enum(ACTOR_KINDS),
      id: Type.String({
        description: 'The API key id, dashboard member id, payer email, operator name or job kind',
      }),
    }),
    action: Type.String({ examples: ['request.create'], description: 'What was done, `<object>.<verb>`' }),
    object_id: Nullable(Type.String()),
    ip: Nullable(Type.String()),
    user_agent: Nullable(Type.String()),
    request_id: Nullable(Type.String()),
    summary: Type.Record(Type.String(), Type.Unknown(), { description: 'What changed; secrets masked' }),
    prev_hash: Type.String({
      description: "The hash of the merchant's record before this one (64 zeros for the first)",
    }),
    hash: Type.String({ description: 'sha256(prev_hash + the canonical record), hex (docs/audit.md)' }),
  },
  { title: 'AuditEvent', description: 'One change to the merchant’s data, in the audit trail' },
);

export const ListAuditEventsQuery = Type.Object(
  {
    ...listQueryFields('aud'),
    actor_kind: Type.Optional(Type.Enum(ACTOR_KINDS, { description: 'Only changes made by this kind of actor' })),
    actor_id: Type.Optional(Type.String({ maxLength: 320, description: 'Only changes made by this actor' })),
    action: Type.Optional(
      Type.String({
        maxLength: 64,
        pattern: '^[a-z_]+(\\.[a-z_]+)+$',
        description: 'Only this action (`request.create`)',
        'x-expected': 'a dotted action such as request.create',
      }),
    ),
    object_id: Type.Optional(Type.String({ maxLength: 64, description: 'Only changes to this object' })),
    'created[gte]': Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'Only changes at or after this time',
        'x-expected': 'an ISO 8601 date-time',
      }),
    ),
    'created[lt]': Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'Only changes before this time',
        'x-expected': 'an ISO 8601 date-time',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListAuditEventsQuery = Static<typeof ListAuditEventsQuery>;

export const AuditEventList = Type.Object({ audit_events: Type.Array(AuditEventObject), has_more: Type.Boolean() });
