import { FunctionName } from '../shared/topology';
import { callerOf } from './admin/auth';
import { publicRequest } from './admin';
import { pathOf, requireInternalCaller, requireMethod } from './http';
import { publisher } from './ingest';
import { Door, PUBLIC_BODY_LIMIT, PUSH_BODY_LIMIT } from './request-gate';

/**
 * Each function's door (request-gate.ts): what admits a request on its headers alone, and the
 * body an admitted request may bring. The handlers ask the same questions again and get the
 * same answers (checkedOnce), so each check is made once per request.
 */

const ingestDoor: Door = {
  admit: async (req, res, rt) => requireMethod(req, res, ['POST']) && (await publisher(req, res, rt)) !== undefined,
  limitBytes: (_req, rt) => rt.config.maxBodyBytes,
};

const adminDoor: Door = {
  admit: async (req, res, rt) => publicRequest(req.method, pathOf(req)) !== undefined || (await callerOf(req, res, rt)) !== undefined,
  limitBytes: (req, rt) => (publicRequest(req.method, pathOf(req)) !== undefined ? PUBLIC_BODY_LIMIT : rt.config.maxBodyBytes),
};

/** Pub/Sub pushes and Cloud Scheduler's calls: the push token locally, Google OIDC on GCP. */
const internalDoor = (fn: FunctionName, limitBytes: number): Door => ({
  admit: async (req, res, rt) => requireMethod(req, res, ['POST']) && (await requireInternalCaller(req, res, rt, fn)),
  limitBytes: () => limitBytes,
});

export const DOORS: Record<FunctionName, Door> = {
  ingest: ingestDoor,
  admin: adminDoor,
  route: internalDoor('route', PUSH_BODY_LIMIT),
  deliver: internalDoor('deliver', PUSH_BODY_LIMIT),
  replay: internalDoor('replay', PUSH_BODY_LIMIT),
  pump: internalDoor('pump', PUSH_BODY_LIMIT),
  // It takes no body at all, and says so (400) to its authenticated caller whatever was sent.
  'suspension-check': internalDoor('suspension-check', PUSH_BODY_LIMIT),
};
