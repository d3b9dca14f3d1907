import { readOverview } from '../../shared/app/admin/health-admin';
import { overviewQuerySchema } from '../../shared/domain/health/health-rates';
import { RouteSpec } from './route';

/** Herald's own health, the whole deployment's: the console's Overview panel (docs/observability.md). */
export const HEALTH_ROUTES: RouteSpec[] = [
  {
    method: 'GET',
    path: '/overview',
    summary:
      "Herald's own health over a window (operator only): acceptedPerSecond, deliveredPerSecond, endToEndP99Ms, deadLettered, lanesOldestBacklogSeconds, with source (process in local mode, cloud-monitoring when deployed, none when telemetry is off: reason says why)",
    query: overviewQuerySchema,
    responses: {
      200: '{window, source, acceptedPerSecond, deliveredPerSecond, endToEndP99Ms, deadLettered, lanesOldestBacklogSeconds, lanesBacklogBasis, asOf}; counts and coveredSeconds in local mode; reason when source is none; a number is null where there is none yet',
      400: 'invalid query',
      403: 'an account key or portal session cannot',
      503: 'Cloud Monitoring could not be read just now',
    },
    run: (d, _params, _body, query) => readOverview(d, d.caller, query),
  },
];
