import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { childOptions } from './child-options';
import { ENV_NAMES } from '../../shared/config-schema';
import { SecretSetting } from '../config';

type SecretEnv = gcp.types.input.cloudfunctionsv2.FunctionServiceConfigSecretEnvironmentVariable;

export interface SecretsArgs {
  project: string;
  prefix: string;
  values: Record<SecretSetting, pulumi.Output<string>>;
  /** The one principal that may read them: the functions' runtime identity. */
  reader: pulumi.Input<string>;
}

/**
 * Herald's tokens and its secrets key (HERALD_SECRETS_KEY) in Secret Manager, handed to the
 * functions as environment variables by version: a new value is a new version, which
 * redeploys the functions onto it. Each is readable by the functions' identity alone.
 */
export class Secrets extends pulumi.ComponentResource {
  readonly environment: SecretEnv[];

  constructor(name: string, args: SecretsArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:secrets:Secrets', name, {}, opts);
    const child = childOptions(this, opts);
    this.environment = (Object.entries(args.values) as [SecretSetting, pulumi.Output<string>][]).map(([key, value]) => {
      const secretId = `${args.prefix}-${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
      const secret = new gcp.secretmanager.Secret(`${name}-${key}`, { project: args.project, secretId, replication: { auto: {} } }, child);
      // A replaced secrets key is disabled, not destroyed: data it encrypted stays readable if a
      // new value left it out by mistake (enable the version, put the key back after the first).
      const keep = key === 'secretsKey' ? { deletionPolicy: 'DISABLE' } : {};
      const version = new gcp.secretmanager.SecretVersion(`${name}-${key}`, { secret: secret.id, secretData: pulumi.secret(value), ...keep }, child);
      new gcp.secretmanager.SecretIamMember(`${name}-${key}-reader`, { project: args.project, secretId: secret.secretId, role: 'roles/secretmanager.secretAccessor', member: args.reader }, child);
      return { key: ENV_NAMES[key], projectId: args.project, secret: secret.secretId, version: version.version };
    });
    this.registerOutputs({});
  }
}
