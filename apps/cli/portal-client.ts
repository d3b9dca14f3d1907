import type { PortalLinkView, PortalSessionView } from '../../shared/app/admin/portal-admin';
import { objectOf, unexpected } from './answers';
import { HeraldClient } from './client';

/** Herald's portal access API (`/admin/accounts/{id}/portal-links…`, `…/portal-sessions…`): what is live, and ending it. */

export type { PortalLinkView, PortalSessionView };

export interface EndedSessions {
  endedAt: string;
  links: number;
  sessions: number;
}

const path = (account: string, ...parts: string[]) => `/admin/accounts/${[account, ...parts].map((p) => encodeURIComponent(p)).join('/')}`;

export class PortalApi {
  constructor(private readonly client: HeraldClient) {}

  private async send(method: string, to: string): Promise<unknown> {
    return (await this.client.request('admin', method, to, {})).body;
  }

  /** One array field of an object answer, or an "unexpected body" error naming the call. */
  private async list<T>(call: string, to: string, field: string): Promise<T[]> {
    const answer = await this.send('GET', to);
    const o = objectOf(call, answer);
    if (!Array.isArray(o[field])) throw unexpected(call, answer);
    return o[field] as T[];
  }

  links(account: string): Promise<PortalLinkView[]> {
    return this.list('GET /admin/accounts/{id}/portal-links', path(account, 'portal-links'), 'links');
  }

  sessions(account: string): Promise<PortalSessionView[]> {
    return this.list('GET /admin/accounts/{id}/portal-sessions', path(account, 'portal-sessions'), 'sessions');
  }

  async revokeLink(account: string, linkId: string): Promise<void> {
    await this.send('DELETE', path(account, 'portal-links', linkId));
  }

  async revokeSession(account: string, sessionId: string): Promise<void> {
    await this.send('DELETE', path(account, 'portal-sessions', sessionId));
  }

  async endAll(account: string): Promise<EndedSessions> {
    const call = 'POST /admin/accounts/{id}/portal-sessions/revoke';
    const answer = await this.send('POST', path(account, 'portal-sessions', 'revoke'));
    const o = objectOf(call, answer);
    if (typeof o.endedAt !== 'string' || typeof o.sessions !== 'number' || typeof o.links !== 'number') throw unexpected(call, answer);
    return o as unknown as EndedSessions;
  }
}
