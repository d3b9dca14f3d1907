import { createHash } from 'node:crypto';
import { seededRandom } from '../chaos/scenario';

/**
 * A benchmark event's data: what a billing platform's webhook carries (an invoice paid: ids,
 * amounts, times, a customer, line items), about `bytes` long as JSON, the same for the same
 * id. Its values are as random as real ones (ids are random base62, amounts and emails vary),
 * so anything Herald compresses compresses as a real payload would (gzip: ~1.6× one event
 * alone, ~5× a hundred together), not as a run of one repeated character.
 */
export function realisticData(id: string, bytes = 1024): Record<string, unknown> {
  const random = seeded(id);
  const token = (n: number) => Array.from({ length: n }, () => BASE62[Math.floor(random() * 62)]).join('');
  const amount = () => Math.floor(random() * 100_000);
  const created = 1_790_000_000 + Math.floor(random() * 10_000_000);
  const lines: Record<string, unknown>[] = [];
  const data: Record<string, unknown> = {
    id: `in_${token(24)}`,
    object: 'invoice',
    event: id,
    account_country: 'US',
    amount_due: amount(),
    amount_paid: amount(),
    amount_remaining: 0,
    attempt_count: 1 + Math.floor(random() * 3),
    billing_reason: 'subscription_cycle',
    created,
    currency: 'usd',
    customer: `cus_${token(14)}`,
    customer_email: `user${Math.floor(random() * 1e6)}@example.org`,
    customer_name: NAMES[Math.floor(random() * NAMES.length)],
    hosted_invoice_url: `https://invoice.example.com/i/acct_${token(16)}/${token(32)}`,
    lines,
    number: `${token(8).toUpperCase()}-${String(Math.floor(random() * 10_000)).padStart(4, '0')}`,
    status: 'paid',
    subscription: `sub_${token(24)}`,
  };
  // Line items while another fits, then a memo of words to the size.
  const line = () => ({ id: `il_${token(24)}`, amount: amount(), description: `${1 + Math.floor(random() * 9)} × ${PLANS[Math.floor(random() * PLANS.length)]}`, period: { start: created, end: created + 2_592_000 }, price: `price_${token(24)}` });
  for (let next = line(); JSON.stringify(data).length + JSON.stringify(next).length + 1 + MEMO <= bytes; next = line()) lines.push(next);
  let memo = '';
  while (memo.length < bytes - JSON.stringify(data).length - MEMO) memo += `${WORDS[Math.floor(random() * WORDS.length)]} `;
  data.memo = memo.slice(0, Math.max(0, bytes - JSON.stringify(data).length - MEMO));
  return data;
}

/** What `"memo":""` adds to the JSON. */
const MEMO = ',"memo":""'.length;
const WORDS = ['thank', 'you', 'for', 'your', 'business', 'payment', 'received', 'renewal', 'of', 'the', 'annual', 'plan', 'questions', 'contact', 'billing'];
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const NAMES = ['Ada Lovelace', 'Grace Hopper', 'Alan Turing', 'Barbara Liskov', 'Edsger Dijkstra', 'Frances Allen', 'Donald Knuth', 'Radia Perlman'];
const PLANS = ['Pro plan (at $29.00 / month)', 'Team seats (at $12.00 / month)', 'Storage add-on, 100 GB', 'Support, business hours', 'API calls over quota'];

/** The chaos run's generator (mulberry32) seeded from `text`: the same payload for the same id in every run. */
function seeded(text: string): () => number {
  return seededRandom(createHash('sha256').update(text).digest().readUInt32LE(0));
}
