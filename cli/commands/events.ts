/** `events`: an integration's events (the outbox, last 30 days) with how their deliveries stand, and a resend of one. */
import { callVerb, listVerb, type Noun } from '../command';
import { option } from '../flags';

export const events: Noun = {
  summary: "An integration's events (last 30 days) with their delivery counts, and resending one",
  verbs: {
    list: listVerb(
      "List an integration's events of the last 30 days, newest first, with their deliveries per status",
      '/integrations/{integration_id}/events',
      {
        type: option('<TYPE,...>', 'Only these event types (comma-separated)'),
        order: option('<asc|desc>', 'By creation time: desc newest first (default), asc oldest first'),
      },
    ),
    get: callVerb('Show an event with its deliveries per status and the payload as sent', 'GET /events/{event_id}'),
    resend: callVerb('Send an event again to every active subscription that wants it now (scale and enterprise plans)', 'POST /events/{event_id}/resend'),
  },
};
