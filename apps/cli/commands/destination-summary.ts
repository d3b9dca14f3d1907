import { DEFAULT_ACCOUNT } from '../../../shared/domain/ids';
import { DestinationInfo, RedeliverResult } from '../client';
import { accountFlag } from '../answers';
import { batchSentence } from '../batch-flags';
import { orderingSentence } from '../ordering-flags';

/** What the destination commands say to people: a destination's state and hour, counts, its target. */

export const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** 0.9916 → "99.2 %". */
export function percent(rate: number): string {
  return `${(rate * 100).toFixed(1)} %`;
}

function hourText(attempts: number, successRate: number | undefined): string {
  return `${plural(attempts, 'attempt', 'attempts')}${successRate === undefined ? '' : `, ${percent(successRate)} succeeded`}`;
}

/** What `destinations show` says to people (stderr), beside the JSON: state, rolling hour, suspension. */
export function destinationSummary(d: DestinationInfo): string[] {
  const lines: string[] = [];
  const s = d.suspension;
  if (d.status === 'suspended' && s) {
    lines.push(`${d.id}: SUSPENDED since ${s.at} (${s.cause}${s.by ? ` by ${s.by}` : ''}): ${s.reason}`);
    lines.push(`  when suspended, last hour: ${hourText(s.attempts1h, s.successRate1h)}`);
    lines.push(`  notified: ${s.notification?.to ?? "nobody (no technicalEmail): the notice is in Herald's log and under suspension.notification"}`);
  } else {
    lines.push(`${d.id}: ${d.status}`);
  }
  if (d.batch) lines.push(`  sends ${batchSentence(d.batch)}`);
  if (d.ordering) lines.push(`  sends ${orderingSentence(d.ordering)}`);
  if (d.stats) {
    lines.push(`  last hour: ${hourText(d.stats.attempts1h, d.stats.successRate1h)}`);
    const last = d.stats.lastErrors[0];
    if (last) lines.push(`  last error: ${last.at}  ${last.error}`);
    if (d.filter !== undefined) lines.push(`  filter ${d.filter}: last hour took ${d.stats.filterPassed1h ?? 0}, dropped ${d.stats.filtered1h ?? 0}, erred on ${d.stats.filterErrors1h ?? 0}`);
  }
  // Older Herald versions show no account: then it is `default`, which needs no --account.
  const inAccount = d.account === undefined || d.account === DEFAULT_ACCOUNT ? undefined : d.account;
  if (d.status === 'suspended') lines.push(`  its events are QUEUED; once the endpoint is fixed: herald destinations reactivate ${d.id}${accountFlag(inAccount)}`);
  return lines;
}

export function redeliveredText(id: string, r: RedeliverResult): string {
  const which = r.status === 'DEAD' ? 'dead' : 'queued';
  return `${id}: ${plural(r.redelivered, `${which} delivery`, `${which} deliveries`)} sent again`;
}

export function target(d: DestinationInfo): string {
  return d.url ?? d.topic ?? '';
}
