import { Type, type Static } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.ts';
import { listQueryFields } from '../../shared/pagination.ts';
import { EVENT_TYPES } from './events.builders.ts';

export const EventObject = Type.Object(
  {
    id: Type.String({ examples: ['event_01JD2Q8Z7M3V4K5N6P7R8S9T0V'] }),
    type: Type.Enum(EVENT_TYPES),
    version: Type.Optional(Type.Literal(1, { description: 'Absent on request.status_updated' })),
    created_at: Timestamp,
    data: Type.Record(Type.String(), Type.Unknown(), {
      description: 'Exactly the fields documented for the type (docs/webhooks.md)',
    }),
  },
  { title: 'Event', description: 'The event exactly as POSTed to webhook endpoints' },
);

export const ListEventsQuery = Type.Object(
  {
    ...listQueryFields('event'),
    type: Type.Optional(Type.Enum(EVENT_TYPES, { description: 'Only events of this type' })),
    object_id: Type.Optional(
      Type.String({ maxLength: 64, description: 'Only events about this object (request_…, payment_…, …)' }),
    ),
  },
  { additionalProperties: false },
);
export type ListEventsQuery = Static<typeof ListEventsQuery>;

export const EventList = Type.Object({ events: Type.Array(EventObject), has_more: Type.Boolean() });

export const ResendBody = Type.Object(
  {
    webhook_id: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'Send to this endpoint only; default: every endpoint whose filter takes the event',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ResendBody = Static<typeof ResendBody>;

export const EventFeedQuery = Type.Object(
  {
    after: Type.Optional(
      Type.String({
        pattern: '^event_[0-9A-HJKMNP-TV-Z]{26}$',
        description:
          'Return events newer than this one (an event id, or any id of the form: ids sort by time); default: the newest event now, so only events from now on',
        'x-expected': 'an event id (event_…)',
      }),
    ),
    types: Type.Optional(
      Type.String({
        maxLength: 1100,
        description: 'Comma-separated event types to return; default every type',
        'x-expected': 'comma-separated event types',
      }),
    ),
    wait: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 30,
        description:
          'Seconds to hold the call open while there is no new event (long polling); default 0, an immediate answer',
        'x-expected': 'a whole number of seconds from 0 to 30',
      }),
    ),
  },
  { additionalProperties: false },
);
export type EventFeedQuery = Static<typeof EventFeedQuery>;

export const EventFeed = Type.Object(
  {
    events: Type.Array(EventObject, { description: 'Oldest first, at most 100' }),
    cursor: Nullable(
      Type.String({ description: 'Pass as `after` to get what comes next; null while the merchant has no event' }),
    ),
  },
  { title: 'EventFeed' },
);
