import type { Response } from 'express';
import { PushDelivery, parsePushEnvelope } from '../shared/domain/events/cloudevents-pubsub';
import { deliverPush } from '../shared/app/delivery/deliver';
import { routeEvent } from '../shared/app/intake/route';
import { parseJsonBytes } from '../shared/domain/events/json-body';
import { FunctionName } from '../shared/topology';
import { deliverDeps } from '../shared/runtime/delivery-deps';
import { routeDeps } from '../shared/runtime/intake-deps';
import { Runtime } from '../shared/runtime/runtime';
import { guarded, HeraldRequest, rawBodyOf, requireInternalCaller, requireMethod, sendJson } from './http';
import { runtime } from './process-runtime';

/**
 * Push endpoints: only Pub/Sub calls them. On GCP each push carries a Google OIDC token of
 * the push service account (audience: the function's URL), which Herald verifies; locally
 * the emulator sends none, so the subscription's URL carries the push token in `?token=`
 * (shared/app/access/push-auth.ts). Answers: 204 acks; 400 tells a caller that is not Pub/Sub what
 * is wrong; 500 (a Herald fault) makes Pub/Sub deliver the message again.
 */
export function pushHandler(name: FunctionName, work: (rt: Runtime, push: PushDelivery) => Promise<unknown>) {
  return guarded(
    () => runtime().log,
    name,
    async (req: HeraldRequest, res: Response) => {
      const rt = runtime();
      if (!requireMethod(req, res, ['POST'])) return;
      if (!(await requireInternalCaller(req, res, rt, name))) return;
      // Pub/Sub sends what a producer published: an attribute it cannot use is judged by `work` (a dead letter), never a 400 Pub/Sub would push again forever.
      const body = parseJsonBytes(rawBodyOf(req), { loneSurrogates: 'allow' });
      if (!body.ok) {
        sendJson(res, 400, { error: `not a Pub/Sub push request: ${body.message}`, issues: [{ path: 'body', message: `${body.message}; expected {"message": {...}, "subscription": "..."}` }] });
        return;
      }
      const push = parsePushEnvelope(body.value);
      if (!push.ok) {
        rt.log.warn(`${name}: malformed push request rejected`, { issues: push.issues });
        sendJson(res, 400, { error: 'not a Pub/Sub push request', issues: push.issues });
        return;
      }
      await work(rt, push.value);
      sendJson(res, 204);
    },
  );
}

export const routeHandler = pushHandler('route', (rt, push) => routeEvent(routeDeps(rt), push));

export const deliverHandler = pushHandler('deliver', (rt, push) => deliverPush(deliverDeps(rt), push));
