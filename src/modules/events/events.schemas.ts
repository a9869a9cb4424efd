import { Type, type Static } from 'typebox';
import { Timestamp } from '../../http/schemas.ts';
import { listQueryFields } from '../../shared/pagination.ts';
import { DeliveryObject } from '../webhooks/webhooks.schemas.ts';
import { EVENT_TYPES } from './events.builders.ts';

export const EventObject = Type.Object(
  {
    id: Type.String({ examples: ['event_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    type: Type.Enum(EVENT_TYPES),
    version: Type.Optional(Type.Literal(1, { description: 'Absent on request.status_updated' })),
    created_at: Timestamp,
    data: Type.Record(Type.String(), Type.Unknown(), { description: 'Exactly the fields documented for the type (docs/webhooks.md)' }),
  },
  { title: 'Event', description: 'The event exactly as POSTed to webhook endpoints' },
);

export const ListEventsQuery = Type.Object(
  {
    ...listQueryFields('event'),
    type: Type.Optional(Type.Enum(EVENT_TYPES, { description: 'Only events of this type' })),
    object_id: Type.Optional(Type.String({ maxLength: 64, description: 'Only events about this object (request_…, payment_…, …)' })),
  },
  { additionalProperties: false },
);
export type ListEventsQuery = Static<typeof ListEventsQuery>;

export const EventList = Type.Object({ events: Type.Array(EventObject), has_more: Type.Boolean() });
export const EventDetail = Type.Object({ event: EventObject, deliveries: Type.Array(DeliveryObject) });

export const ResendBody = Type.Object(
  { webhook_id: Type.Optional(Type.String({ maxLength: 64, description: 'Send to this endpoint only; default: every endpoint whose filter takes the event' })) },
  { additionalProperties: false },
);
export type ResendBody = Static<typeof ResendBody>;
