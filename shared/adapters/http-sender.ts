import { Agent, Dispatcher, request } from 'undici';
import { AttemptResult } from '../domain/delivery';
import { HttpRequest, HttpSender } from '../ports';

const EXCERPT_BYTES = 1024;
export const USER_AGENT = 'Herald/0.1';

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * POSTs with undici: no redirect is ever followed (undici's request() has no redirect
 * handling unless asked), and one deadline covers connect, headers and the body excerpt.
 */
export class UndiciHttpSender implements HttpSender {
  constructor(private readonly dispatcher: Dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 256 })) {}

  async send(req: HttpRequest): Promise<AttemptResult> {
    const started = performance.now();
    const signal = AbortSignal.timeout(req.timeoutMs);
    const elapsed = () => Math.round(performance.now() - started);
    try {
      const res = await request(req.url, {
        method: 'POST',
        headers: { 'user-agent': USER_AGENT, ...req.headers },
        body: req.body,
        signal,
        dispatcher: this.dispatcher,
      });
      const bodyExcerpt = await readExcerpt(res.body);
      const retryAfter = firstHeader(res.headers['retry-after']);
      const location = firstHeader(res.headers.location);
      return {
        kind: 'response',
        status: res.statusCode,
        durationMs: elapsed(),
        bodyExcerpt,
        ...(retryAfter !== undefined ? { retryAfter } : {}),
        ...(location !== undefined ? { location } : {}),
      };
    } catch (e) {
      if (signal.aborted) return { kind: 'timeout', durationMs: elapsed(), timeoutMs: req.timeoutMs };
      const err = e as Error & { code?: string; cause?: { code?: string } };
      const code = err.code ?? err.cause?.code;
      return { kind: 'network', durationMs: elapsed(), error: code ? `${code}: ${err.message}` : err.message };
    }
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }
}

async function readExcerpt(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size >= EXCERPT_BYTES) break; // the rest is not ours to wait for
  }
  if (size >= EXCERPT_BYTES) body.destroy();
  return Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
}
