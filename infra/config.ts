import * as pulumi from '@pulumi/pulumi';
import { z } from 'zod';
import { issuesFromZod } from '../shared/domain/event';

const infraConfigSchema = z.strictObject({
  topicPrefix: z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,30}$/, 'topicPrefix must start with a letter and hold only a-z, 0-9 and -, at most 31 characters')
    .default('herald'),
});

export type InfraConfig = z.infer<typeof infraConfigSchema>;

/** Reads the stack's `herald:*` config once; a bad value stops the preview with the field named. */
export function readInfraConfig(config = new pulumi.Config('herald')): InfraConfig {
  const raw = { topicPrefix: config.get('topicPrefix') };
  const parsed = infraConfigSchema.safeParse(Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined)));
  if (!parsed.success) {
    const lines = issuesFromZod(parsed.error).map((i) => `  herald:${i.path}: ${i.message}`);
    throw new Error(`invalid Pulumi config:\n${lines.join('\n')}`);
  }
  return parsed.data;
}
