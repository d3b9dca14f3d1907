import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { z } from 'zod';
import { ACCOUNT_EXTENSION } from '../../../shared/domain/access/account';
import { eventAttributesSchema } from '../../../shared/domain/events/event';
import { BinaryEvent } from '../client';
import { CliIo, CommandContext, connectionOptions, issuesOf, usageError, validate } from '../context';
import { UsageError } from '../errors';

/** `herald publish`: one CloudEvent to POST /ingest in binary mode. */

const EXTENSION_NAME = /^[a-z0-9]{1,20}$/;
const MEDIA_TYPE = /^[\w.+-]+\/[\w.+-]+\s*(;.*)?$/;

/** Attributes with options of their own (or none at all), never set through --ext. */
const NOT_EXTENSIONS: Record<string, string> = {
  id: 'use --id',
  source: 'use --source',
  type: 'use --type',
  subject: 'use --subject',
  time: 'use --time',
  datacontenttype: 'use --content-type',
  specversion: 'it is always 1.0',
  data: 'use --data',
  data_base64: 'use --data-file',
  herald: 'the name is reserved by Herald',
  [ACCOUNT_EXTENSION]: 'use --account (or HERALD_ACCOUNT)',
};

const required = (what: string) =>
  z
    .string({ error: (i) => (i.input === undefined ? `is required: ${what}` : 'must be a string') })
    .min(1, `must not be empty: ${what}`);

/** `--ext key=value`, repeatable, into extension attributes. */
export const extensionsSchema = z.array(z.string()).transform((pairs, ctx) => {
  const extensions: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    const fail = (message: string) => ctx.addIssue({ code: 'custom', message: `${JSON.stringify(pair)}: ${message}` });
    if (eq < 0) fail('write it as key=value, e.g. --ext tenant=acme');
    else if (name in NOT_EXTENSIONS) fail(`${name} is not an extension attribute; ${NOT_EXTENSIONS[name]}`);
    else if (!EXTENSION_NAME.test(name)) fail('an extension name is 1 to 20 lowercase letters or digits (CloudEvents naming rule)');
    else if (name in extensions) fail(`${name} is given twice`);
    else extensions[name] = pair.slice(eq + 1);
  }
  return extensions;
});

export const publishSchema = z
  .object({
    type: required('the event type, e.g. --type com.example.order.created'),
    source: required('where the event comes from, a URI reference such as /shop or https://example.com/shop'),
    id: z.string().min(1, 'must not be empty (leave --id out for a random UUID)').optional(),
    subject: z.string().min(1, 'must not be empty').optional(),
    time: z.iso.datetime({ offset: true, error: 'must be an RFC 3339 timestamp such as 2026-01-02T03:04:05Z' }).optional(),
    data: z.string().optional(),
    dataFile: z.string().min(1, 'must name a file, or - for stdin').optional(),
    contentType: z.string().regex(MEDIA_TYPE, 'must be a media type such as application/json or text/plain').optional(),
    ext: extensionsSchema.default({}),
  })
  .refine((o) => o.data === undefined || o.dataFile === undefined, { message: 'give --data or --data-file, not both', path: ['data'] });

export type PublishInput = z.output<typeof publishSchema>;

/** application/json when the bytes are JSON, text/plain when they are other UTF-8 text. */
export function inferContentType(bytes: Buffer): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return 'application/octet-stream';
  }
  try {
    JSON.parse(text);
    return 'application/json';
  } catch {
    return 'text/plain';
  }
}

async function readStdin(io: CliIo, flag: string): Promise<Buffer> {
  if (!io.stdin) throw new UsageError(`${flag} -: there is no stdin to read`, [], 'pass the data with --data or --data-file instead');
  const chunks: Buffer[] = [];
  for await (const chunk of io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}

async function readData(input: PublishInput, io: CliIo): Promise<Buffer | undefined> {
  if (input.data !== undefined) return input.data === '-' ? readStdin(io, '--data') : Buffer.from(input.data, 'utf8');
  if (input.dataFile === undefined) return undefined;
  if (input.dataFile === '-') return readStdin(io, '--data-file');
  try {
    return await readFile(input.dataFile);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const why = err.code === 'ENOENT' ? 'no such file' : err.code === 'EISDIR' ? 'it is a directory' : (err.code ?? err.message);
    throw new UsageError(`cannot read --data-file ${input.dataFile}: ${why}`);
  }
}

/** Herald's own attribute rules (lengths, URI-references), so a sure refusal is caught before sending. */
function checkAttributes(event: BinaryEvent, command: Command): void {
  const { contentType, extensions = {}, data: _data, ...core } = event;
  const attributes = { specversion: '1.0', ...core, ...(contentType !== undefined ? { datacontenttype: contentType } : {}), ...extensions };
  const names: Record<string, string> = { datacontenttype: '--content-type' };
  for (const name of Object.keys(extensions)) names[name] = `--ext ${name}`;
  const result = issuesOf(eventAttributesSchema, attributes, names);
  if (!result.ok) throw usageError(command, result.issues);
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function registerPublish(program: Command, ctx: CommandContext): void {
  const command = program
    .command('publish')
    .description('publish one CloudEvent to Herald (POST /ingest, binary mode); prints the accepted id')
    .option('--type <type>', 'event type (required), e.g. com.example.order.created')
    .option('--source <source>', 'event source (required), a URI reference such as /shop')
    .option('--id <id>', 'event id (default: a random UUID)')
    .option('--subject <subject>', 'event subject')
    .option('--time <time>', 'event time, RFC 3339 (default: stamped by Herald on arrival)')
    .option('--data <data>', 'event data, JSON or text; - reads stdin')
    .option('--data-file <path>', 'read the event data from a file; - reads stdin')
    .option('--content-type <type>', 'media type of the data (default: application/json if the data is JSON, text/plain if other text, application/octet-stream if binary)')
    .option('--ext <key=value>', 'extension attribute, repeatable: --ext tenant=acme --ext region=eu', collect);
  connectionOptions(command, 'ingest');
  command.addHelpText(
    'after',
    `
Examples:
  herald publish --type com.example.order.created --source /shop --data '{"orderId":42}'
  echo 'hello' | herald publish --type com.example.note --source /cli --data -
  herald publish --type com.example.image --source /cam --data-file photo.png --content-type image/png
  herald publish --account acme --type com.example.order.created --source /shop --data '{"orderId":42}'

With the ingest token, --account (or HERALD_ACCOUNT) picks the event's account; none means
"default". An account key with the publish scope publishes for its own account.`,
  );
  command.action(async () => {
    const input = validate(publishSchema, command.opts(), {}, command);
    const { client, account } = ctx.connect(command, 'ingest');
    const data = await readData(input, ctx.io);
    const contentType = input.contentType ?? (data !== undefined ? inferContentType(data) : undefined);
    const event: BinaryEvent = {
      id: input.id ?? randomUUID(),
      source: input.source,
      type: input.type,
      ...(input.subject !== undefined ? { subject: input.subject } : {}),
      ...(input.time !== undefined ? { time: input.time } : {}),
      // The ingest token publishes for the account the event names; a key, for its own (another is refused).
      extensions: account !== undefined ? { ...input.ext, [ACCOUNT_EXTENSION]: account } : input.ext,
      ...(data !== undefined ? { data } : {}),
      ...(contentType !== undefined ? { contentType } : {}),
    };
    checkAttributes(event, command);
    for (const id of await client.publish(event)) ctx.out(id);
  });
}
