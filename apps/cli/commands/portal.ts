import { Command } from 'commander';
import { z } from 'zod';
import { PORTAL_ID } from '../../../shared/domain/access/portal';
import { naming } from '../answers';
import { CommandContext, connectionOptions, validate } from '../context';
import { accountIdSchema } from '../credentials';
import { PortalApi, PortalLinkView, PortalSessionView } from '../portal-client';
import { table } from './destination-args';

/**
 * `herald portal links list|revoke` and `herald portal sessions list|revoke|revoke-all`: an
 * account's live customer portal links and sessions, and ending them (docs/console.md,
 * "Ending portal access"). The operator, or a key of the account (`read` to list, `write` to
 * revoke); Herald refuses what is revoked everywhere within 5 s.
 */

const ACCOUNT_ARG = { account: '<account>' };
const idSchema = (what: string) => z.string().regex(PORTAL_ID, `a ${what} id is 16 to 64 letters, digits, - and _, as herald portal ${what}s list shows it`);

/** A link's or session's scopes (a Herald from before scopes gives readOnly alone), and its destinations. */
const rights = (r: { readOnly: boolean; scopes?: readonly string[]; destinations?: string[] }) => `${(r.scopes ?? (r.readOnly ? ['read'] : ['read', 'write'])).join(',')}${r.destinations ? ` (${r.destinations.join(',')})` : ''}`;

export function linksTable(links: readonly PortalLinkView[]): string {
  return table([['ID', 'MINTED BY', 'RIGHTS', 'SESSIONS', 'CREATED AT', 'EXPIRES AT'], ...links.map((l) => [l.id, l.mintedBy, rights(l), String(l.sessions.length), l.createdAt, l.expiresAt])]);
}

export function sessionsTable(sessions: readonly PortalSessionView[]): string {
  return table([['ID', 'LINK', 'MINTED BY', 'RIGHTS', 'CREATED AT', 'EXPIRES AT'], ...sessions.map((s) => [s.id, s.linkId, s.mintedBy, rights(s), s.createdAt, s.expiresAt])]);
}

export function registerPortal(program: Command, ctx: CommandContext): void {
  const portal = program.command('portal').description("an account's customer portal links and sessions: list them, and end them before they expire");
  const api = (command: Command) => new PortalApi(ctx.client(command, 'admin'));

  const links = portal.command('links').description('portal links minted for an account (POST /admin/accounts/{id}/portal-links mints them)');

  const listLinks = links
    .command('list')
    .argument('<account>', 'account id')
    .description("an account's live portal links, newest first, with how many sessions each has open")
    .option('--json', 'print a JSON array (each link with its sessions) instead of a table');
  connectionOptions(listLinks, 'admin', { account: 'ignore' });
  listLinks.action(async (account: string) => {
    const input = validate(z.object({ account: accountIdSchema }), { account }, ACCOUNT_ARG, listLinks);
    const found = await api(listLinks).links(input.account);
    if (listLinks.opts<{ json?: boolean }>().json) ctx.json(found);
    else if (found.length === 0) ctx.note(`account ${input.account} has no live portal links`);
    else ctx.out(linksTable(found));
  });

  const revokeLink = links
    .command('revoke')
    .argument('<account>', 'account id')
    .argument('<link-id>', 'link id, as herald portal links list shows it')
    .description('revoke a link and every session opened from it: refused everywhere within 5 s');
  connectionOptions(revokeLink, 'admin', { account: 'ignore' });
  revokeLink.action(async (account: string, linkId: string) => {
    const input = validate(z.object({ account: accountIdSchema, linkId: idSchema('link') }), { account, linkId }, { ...ACCOUNT_ARG, linkId: '<link-id>' }, revokeLink);
    const missing = { what: `no portal link ${JSON.stringify(input.linkId)} in account ${JSON.stringify(input.account)}`, hint: `see the live ones with: herald portal links list ${input.account}` };
    await naming(() => api(revokeLink).revokeLink(input.account, input.linkId), missing);
    ctx.note(`revoked portal link ${input.linkId} of account ${input.account} and every session opened from it: Herald refuses them everywhere within 5 s`);
  });

  const sessions = portal.command('sessions').description('portal sessions opened from those links');

  const listSessions = sessions
    .command('list')
    .argument('<account>', 'account id')
    .description("an account's live portal sessions, newest first, with their link's rights")
    .option('--json', 'print a JSON array instead of a table');
  connectionOptions(listSessions, 'admin', { account: 'ignore' });
  listSessions.action(async (account: string) => {
    const input = validate(z.object({ account: accountIdSchema }), { account }, ACCOUNT_ARG, listSessions);
    const found = await api(listSessions).sessions(input.account);
    if (listSessions.opts<{ json?: boolean }>().json) ctx.json(found);
    else if (found.length === 0) ctx.note(`account ${input.account} has no live portal sessions`);
    else ctx.out(sessionsTable(found));
  });

  const revokeSession = sessions
    .command('revoke')
    .argument('<account>', 'account id')
    .argument('<session-id>', 'session id, as herald portal sessions list shows it')
    .description('end one session: refused everywhere within 5 s (its link may open another)');
  connectionOptions(revokeSession, 'admin', { account: 'ignore' });
  revokeSession.action(async (account: string, sessionId: string) => {
    const input = validate(z.object({ account: accountIdSchema, sessionId: idSchema('session') }), { account, sessionId }, { ...ACCOUNT_ARG, sessionId: '<session-id>' }, revokeSession);
    const missing = { what: `no portal session ${JSON.stringify(input.sessionId)} in account ${JSON.stringify(input.account)}`, hint: `see the live ones with: herald portal sessions list ${input.account}` };
    await naming(() => api(revokeSession).revokeSession(input.account, input.sessionId), missing);
    ctx.note(`revoked portal session ${input.sessionId} of account ${input.account}: Herald refuses it everywhere within 5 s`);
  });

  const revokeAll = sessions
    .command('revoke-all')
    .argument('<account>', 'account id')
    .description('end every portal session of the account, and every link minted so far: refused everywhere within 5 s')
    .option('--json', 'print the answer ({"endedAt", "links", "sessions"}) as JSON');
  connectionOptions(revokeAll, 'admin', { account: 'ignore' });
  revokeAll.addHelpText('after', '\nLinks minted afterwards work as usual. The operator, or a key of the account with write.');
  revokeAll.action(async (account: string) => {
    const input = validate(z.object({ account: accountIdSchema }), { account }, ACCOUNT_ARG, revokeAll);
    const ended = await api(revokeAll).endAll(input.account);
    if (revokeAll.opts<{ json?: boolean }>().json) ctx.json(ended);
    ctx.note(`ended every portal session of account ${input.account} as of ${ended.endedAt} (${ended.sessions} live session(s), ${ended.links} live link(s)): Herald refuses them everywhere within 5 s`);
  });
}
