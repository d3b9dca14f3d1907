import { openApiDocument } from './openapi';
import { ACCOUNT_ROUTES, PORTAL_ROUTES } from './account-routes';
import { ACCOUNT_SCOPED } from './destination-routes';
import { HEALTH_ROUTES } from './health-routes';
import { packageVersion } from './package-root';
import { REPLAY_ROUTES } from './replay-routes';
import { matchable, Route, underAccount } from './route';

/** Every admin route with its documentation (/openapi.json is generated from these). */
export const ROUTES: Route[] = [...ACCOUNT_SCOPED, ...ACCOUNT_SCOPED.map(underAccount), ...ACCOUNT_ROUTES, ...PORTAL_ROUTES, ...REPLAY_ROUTES, ...REPLAY_ROUTES.map(underAccount), ...HEALTH_ROUTES].map(matchable);

/** Built once: it only changes with the code. */
let openApi: string | undefined;

/** GET /admin/openapi.json's body: the API's description, generated from ROUTES. */
export function openApiJson(): string {
  openApi ??= JSON.stringify(openApiDocument(ROUTES, packageVersion()));
  return openApi;
}
