import { linkHasSessionsLeft, liveSince, liveUntil, PortalLinkRecord, PortalSessionRecord } from '../../domain/access/portal-access';
import { PortalStore } from '../../ports/accounts';

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

  async openSession(session: PortalSessionRecord): Promise<'opened' | 'used-up' | 'no-link'> {
    const link = this.linkRecords.get(session.linkId);
    if (!link || link.account !== session.account) return 'no-link';
    if (!linkHasSessionsLeft(link)) return 'used-up';
    link.sessionsOpened = (link.sessionsOpened ?? 0) + 1;
    this.sessionRecords.set(session.id, structuredClone(session));
    return 'opened';
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

  async revokeLink(account: string, id: string, at: string): Promise<PortalLinkRecord | undefined> {
    const link = this.linkRecords.get(id);
    if (!link || link.account !== account) return undefined;
    link.revokedAt ??= at;
    return structuredClone(link);
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
    const since = liveSince(new Date(at)).toISOString();
    const mine = <T extends { account: string; createdAt: string }>(records: Iterable<T>) => [...records].filter((r) => r.account === account && r.createdAt >= since);
    const live = liveUntil(mine(this.linkRecords.values()), mine(this.sessionRecords.values()), at, before);
    for (const r of [...live.links, ...live.sessions]) r.revokedAt = at;
    return { links: live.links.length, sessions: live.sessions.length };
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
