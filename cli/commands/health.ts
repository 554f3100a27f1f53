/** `health`: the deployment's health numbers (backlogs, dead letters, failing integrations), as the console's home page shows them. */
import { callVerb, type Noun } from '../command';

export const health: Noun = {
  summary: "The deployment's health numbers: backlogs, dead letters, failing integrations, the oldest open Operation",
  verbs: {
    get: callVerb('Show the health numbers (read from the database, cached for 5 s)', 'GET /health'),
  },
  default: 'get',
};
