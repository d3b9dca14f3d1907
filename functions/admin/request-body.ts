import { parseJsonBytes } from '../../shared/domain/events/json-body';
import { HeraldRequest, rawBodyOf } from '../http';

/** A body that is not the JSON a route takes: 400, every problem named. */
export class BadJson extends Error {
  constructor(
    message: string,
    readonly issues: { path: string; message: string }[] = [{ path: 'body', message }],
  ) {
    super(message);
  }
}

/** The request's JSON body; undefined when it is empty and `optional`. */
export function parseJsonBody(req: HeraldRequest, optional = false): unknown {
  const raw = rawBodyOf(req);
  if (raw.length === 0) {
    if (optional) return undefined;
    throw new BadJson('the request needs a JSON body');
  }
  const parsed = parseJsonBytes(raw);
  if (!parsed.ok) throw new BadJson(parsed.message, parsed.problem === 'surrogate' ? parsed.issues : undefined);
  return parsed.value;
}
