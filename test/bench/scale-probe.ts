/**
 * What the scale phases share: the admin API as the console calls it (JSON, a bearer token),
 * and one measured step (milliseconds, and Firestore's billed reads both as the wire meter
 * saw them, whoever sent them in this process, and as the runtime's stores counted them).
 */
import { performance } from 'node:perf_hooks';
import { OperationCounter } from '../../shared/adapters/firestore/stores';
import { FirestoreMeter, opsDelta, OpsByCollection, totalOps } from './firestore-meter';
import { BenchFailure } from './harness';
import { round } from './stats';

export interface Measured {
  what: string;
  ms: number;
  /** Documents read, as billed, on the wire (every Firestore client of this process). */
  reads: number;
  /** The same as the runtime's stores counted them (OperationCounter). */
  counted: number;
  /** Wire reads by collection, the busiest first, for seeing where they went. */
  byCollection: Record<string, number>;
}

export class Probe {
  constructor(
    readonly meter: FirestoreMeter,
    private readonly ops: () => OperationCounter,
  ) {}

  snapshot(): OpsByCollection {
    return JSON.parse(JSON.stringify(this.meter.byCollection)) as OpsByCollection;
  }

  /** Runs `step` and measures it; `ops` names another runtime's counter than the default one. */
  async measure<T>(what: string, step: () => Promise<T>, ops: OperationCounter = this.ops()): Promise<{ value: T; m: Measured }> {
    const before = this.snapshot();
    const counted0 = ops.reads;
    const t0 = performance.now();
    const value = await step();
    const ms = round(performance.now() - t0, 1)!;
    const delta = opsDelta(this.meter.byCollection, before);
    const byCollection = Object.fromEntries(
      Object.entries(delta)
        .filter(([, o]) => o.reads > 0)
        .sort(([, a], [, b]) => b.reads - a.reads)
        .map(([c, o]) => [c, o.reads]),
    );
    return { value, m: { what, ms, reads: totalOps(delta).reads, counted: ops.reads - counted0, byCollection } };
  }
}

/** The admin API (`<stack>/admin`) with one bearer token: the operator's, or a portal session's. */
export class AdminClient {
  constructor(
    private readonly base: string,
    private readonly token: string | undefined,
  ) {}

  withToken(token: string): AdminClient {
    return new AdminClient(this.base, token);
  }

  /** The status and parsed body; `expect` lists the statuses that are not a failure of the run. */
  async call<T = unknown>(method: string, path: string, body?: unknown, expect: number[] = [200, 201, 204]): Promise<{ status: number; body: T }> {
    const res = await fetch(`${this.base}/admin${path}`, {
      method,
      headers: { ...(this.token ? { authorization: `Bearer ${this.token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (!expect.includes(res.status)) throw new BenchFailure(`${method} /admin${path} answered ${res.status}: ${text.slice(0, 300)}`);
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
  }

  get<T = unknown>(path: string): Promise<T> {
    return this.call<T>('GET', path).then((r) => r.body);
  }
}

export const mib = (bytes: number): number => round(bytes / 2 ** 20, 1)!;
