import * as pulumi from '@pulumi/pulumi';
import type { DestinationSpec } from '../../shared/domain/destinations/destination';

export interface DestinationInputs {
  /** The admin function's URL: `https://REGION-PROJECT.cloudfunctions.net/admin`. */
  adminUrl: string;
  adminToken: string;
  destinationId: string;
  spec: DestinationSpec;
}

export interface DestinationOutputs extends DestinationInputs {
  /** The destination's `whsec_…` signing secret, as Herald answered it. */
  secret: string;
}

/**
 * A destination declared in the stack is registered the way an operator registers one:
 * `PUT /admin/destinations/{id}`. Herald stays the only writer of its registry, so its lane
 * is created, its secret generated and its suspension state kept exactly as through the API.
 * Everything this provider uses is inside it: Pulumi serializes it into the state.
 */
export const destinationProvider: pulumi.dynamic.ResourceProvider<DestinationInputs, DestinationOutputs> = {
  async diff(_id, olds, news) {
    const replaces = olds.destinationId !== news.destinationId || olds.adminUrl !== news.adminUrl ? ['destinationId'] : [];
    const changes = replaces.length > 0 || JSON.stringify(olds.spec) !== JSON.stringify(news.spec) || olds.adminToken !== news.adminToken;
    return { changes, replaces, deleteBeforeReplace: true };
  },
  async create(inputs) {
    const body = await callAdmin(inputs, 'PUT');
    return { id: inputs.destinationId, outs: { ...inputs, secret: String(body.secret ?? '') } };
  },
  async update(_id, olds, news) {
    const body = await callAdmin(news, 'PUT');
    // Herald shows a secret only when it made or received one.
    return { outs: { ...news, secret: String(body.secret ?? olds.secret) } };
  },
  async delete(_id, props) {
    await callAdmin(props, 'DELETE');
  },
};

/**
 * One admin request, retried while a fresh deployment settles (IAM and the first instance
 * can take a minute): 403, 404, 429, 5xx and network errors. A 400 is the spec's fault: at once.
 */
export async function callAdmin(inputs: DestinationInputs, method: 'PUT' | 'DELETE', attempts = 12, delayMs = 10_000): Promise<Record<string, unknown>> {
  const url = `${inputs.adminUrl.replace(/\/+$/, '')}/destinations/${encodeURIComponent(inputs.destinationId)}`;
  let last = '';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      const res = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${inputs.adminToken}`, 'content-type': 'application/json' },
        ...(method === 'PUT' ? { body: JSON.stringify(inputs.spec) } : {}),
        redirect: 'manual',
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      if (res.ok || (method === 'DELETE' && res.status === 404)) return text ? (JSON.parse(text) as Record<string, unknown>) : {};
      last = `HTTP ${res.status}: ${text.slice(0, 500)}`;
      if (![403, 404, 429].includes(res.status) && res.status < 500) break;
    } catch (e) {
      last = (e as Error).message;
    }
    if (attempt < attempts) await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
  throw new Error(`${method} ${url} failed: ${last}`);
}

export interface DeclaredDestinationArgs {
  adminUrl: pulumi.Input<string>;
  adminToken: pulumi.Input<string>;
  destinationId: string;
  spec: DestinationSpec;
}

export class DeclaredDestination extends pulumi.dynamic.Resource {
  declare readonly secret: pulumi.Output<string>;

  constructor(name: string, args: DeclaredDestinationArgs, opts?: pulumi.CustomResourceOptions) {
    // A spec that carries its whsec_ secret is kept encrypted in the state.
    const spec = args.spec.secret === undefined ? args.spec : pulumi.secret(args.spec);
    super(destinationProvider, name, { ...args, spec, adminToken: pulumi.secret(args.adminToken), secret: undefined }, { ...opts, additionalSecretOutputs: ['secret'] }, 'herald', 'Destination');
  }
}
