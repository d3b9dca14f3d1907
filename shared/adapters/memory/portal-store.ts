import { isLive, liveSince, PortalLinkRecord, PortalSessionRecord } from '../../domain/portal-access';
import { PortalStore } from '../../ports';

const newestFirst = (a: { createdAt: string; id: string }, b: { createdAt: string; id: string }) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id);

/** Portal links, sessions and marks in Maps: unit tests, and the contract the Firestore store keeps. */
export class MemoryPortalStore implements PortalStore {
  readonly linkRecords = new Map<string, PortalLinkRecord>();
  readonly sessionRecords = new Map<string, PortalSessionRecord>();
  private readonly marks = new Map<string, string>();
  /** Reads made, by kind: the verifier's caching is judged by these. */
  readonly reads = { link: 0, session: 0, mark: 0 };

  async createLink(link: PortalLinkRecord): Promise<void> {
    this.linkRecords.set(link.id, structuredClone(link));
  }

  async getLink(id: string): Promise<PortalLinkRecord | undefined> {
    this.reads.link++;
    const l = this.linkRecords.get(id);
    return l && structuredClone(l);
  }

  async createSession(session: PortalSessionRecord): Promise<void> {
    this.sessionRecords.set(session.id, structuredClone(session));
  }

  async getSession(id: string): Promise<PortalSessionRecord | undefined> {
    this.reads.session++;
    const s = this.sessionRecords.get(id);
    return s && structuredClone(s);
  }

  async links(account: string, since: Date, limit: number): Promise<PortalLinkRecord[]> {
    return this.of(this.linkRecords, account, since, limit);
  }

  async sessions(account: string, since: Date, limit: number): Promise<PortalSessionRecord[]> {
    return this.of(this.sessionRecords, account, since, limit);
  }

  private of<T extends { account: string; createdAt: string; id: string }>(records: Map<string, T>, account: string, since: Date, limit: number): T[] {
    return [...records.values()]
      .filter((r) => r.account === account && r.createdAt >= since.toISOString())
      .sort(newestFirst)
      .slice(0, limit)
      .map((r) => structuredClone(r));
  }

  async revokeLink(account: string, id: string, at: string): Promise<{ link: PortalLinkRecord; sessions: string[] } | undefined> {
    const link = this.linkRecords.get(id);
    if (!link || link.account !== account) return undefined;
    link.revokedAt ??= at;
    const sessions = [...this.sessionRecords.values()].filter((s) => s.linkId === id);
    for (const s of sessions) s.revokedAt ??= at;
    return { link: structuredClone(link), sessions: sessions.map((s) => s.id) };
  }

  async revokeSession(account: string, id: string, at: string): Promise<PortalSessionRecord | undefined> {
    const session = this.sessionRecords.get(id);
    if (!session || session.account !== account) return undefined;
    session.revokedAt ??= at;
    return structuredClone(session);
  }

  async endAll(account: string, at: string): Promise<{ links: number; sessions: number }> {
    const before = this.marks.get(account);
    if (before === undefined || before < at) this.marks.set(account, at);
    const now = new Date(at);
    const end = (records: Iterable<PortalLinkRecord | PortalSessionRecord>) => {
      let n = 0;
      for (const r of records) {
        if (r.account !== account || r.createdAt > at || r.createdAt < liveSince(now).toISOString() || !isLive(r, now, before)) continue;
        r.revokedAt = at;
        n++;
      }
      return n;
    };
    return { links: end(this.linkRecords.values()), sessions: end(this.sessionRecords.values()) };
  }

  async endedAt(account: string): Promise<string | undefined> {
    this.reads.mark++;
    return this.marks.get(account);
  }

  async deleteAccount(account: string): Promise<number> {
    let n = this.marks.delete(account) ? 1 : 0;
    for (const records of [this.linkRecords, this.sessionRecords] as Map<string, { account: string }>[]) {
      for (const [id, r] of records) if (r.account === account && records.delete(id)) n++;
    }
    return n;
  }
}
