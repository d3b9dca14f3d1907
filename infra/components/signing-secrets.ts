import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { childOptions } from './child-options';

export interface SigningSecretsArgs {
  project: string;
  prefix: string;
  /** Each declared destination's `whsec_…` secret, as Herald answered it. */
  secrets: Record<string, pulumi.Output<string>>;
  /** Who may read them besides the project's owners: the teams whose receivers verify the signatures. */
  readers: readonly string[];
}

/**
 * The signing secrets of the destinations declared in the stack, in Secret Manager: where a
 * subscriber's deployment reads the secret it verifies with, instead of copying it out of a
 * stack output. Herald itself keeps each secret on its destination record (it signs with it
 * on every attempt, without a Secret Manager read per delivery); destinations registered
 * through the API or the CLI get theirs in the API's answer.
 */
export class SigningSecrets extends pulumi.ComponentResource {
  /** Destination id → the Secret Manager secret's resource name. */
  readonly names: Record<string, pulumi.Output<string>>;

  constructor(name: string, args: SigningSecretsArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:secrets:SigningSecrets', name, {}, opts);
    const child = childOptions(this, opts);
    this.names = Object.fromEntries(
      Object.entries(args.secrets).map(([id, value]) => {
        const secretId = `${args.prefix}-destination-${id}-signing`;
        const secret = new gcp.secretmanager.Secret(`${name}-${id}`, { project: args.project, secretId, replication: { auto: {} } }, child);
        new gcp.secretmanager.SecretVersion(`${name}-${id}`, { secret: secret.id, secretData: pulumi.secret(value) }, child);
        for (const member of args.readers) {
          new gcp.secretmanager.SecretIamMember(`${name}-${id}-${member.replace(/[^A-Za-z0-9]+/g, '-')}`, { project: args.project, secretId: secret.secretId, role: 'roles/secretmanager.secretAccessor', member }, child);
        }
        return [id, secret.name];
      }),
    );
    this.registerOutputs({ names: this.names });
  }
}
