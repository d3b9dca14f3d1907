import type { Response } from 'express';
import { PushDelivery, parsePushEnvelope } from '../shared/domain/cloudevents-pubsub';
import { deliverFromLane } from '../shared/app/deliver';
import { routeEvent } from '../shared/app/route';
import { deliverDeps, Runtime } from '../shared/runtime';
import { guarded, HeraldRequest, rawBodyOf, requireMethod, sendJson, tokenMatches } from './http';
import { runtime } from './runtime';

/**
 * Push endpoints: only Pub/Sub calls them. On GCP, IAM lets only the push service account
 * invoke them; where a push token is configured (local mode, whose emulator sends no OIDC
 * header) it must come in the `token` query parameter the subscription's URL carries.
 * Answers: 204 acks; 400 tells a caller that is not Pub/Sub what is wrong; 500 (a Herald
 * fault) makes Pub/Sub deliver the message again.
 */
/** Where a push token is configured, internal callers carry it in the `token` query parameter. */
export function requireInternalToken(req: HeraldRequest, res: Response, rt: Runtime): boolean {
  const expected = rt.config.pushToken;
  if (expected === undefined || tokenMatches(typeof req.query.token === 'string' ? req.query.token : undefined, expected)) return true;
  sendJson(res, 401, { error: 'internal requests must carry the push token in ?token= (the subscription URL holds it)' });
  return false;
}

export function pushHandler(name: string, work: (rt: Runtime, push: PushDelivery) => Promise<unknown>) {
  return guarded(
    () => runtime().log,
    name,
    async (req: HeraldRequest, res: Response) => {
      const rt = runtime();
      if (!requireMethod(req, res, ['POST'])) return;
      if (!requireInternalToken(req, res, rt)) return;
      let body: unknown;
      try {
        body = JSON.parse(rawBodyOf(req).toString('utf8'));
      } catch {
        sendJson(res, 400, { error: 'not a Pub/Sub push request: body is not JSON', issues: [{ path: 'body', message: 'expected {"message": {...}, "subscription": "..."}' }] });
        return;
      }
      const push = parsePushEnvelope(body);
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

export const routeHandler = pushHandler('route', (rt, push) =>
  routeEvent({ bus: rt.bus, lanes: rt.lanes, directory: rt.directory, log: rt.log, names: rt.names, deadLetterTopic: rt.topology.topics.deadLetter.name }, push),
);

export const deliverHandler = pushHandler('deliver', (rt, push) => deliverFromLane(deliverDeps(rt), push));
