import * as pulumi from '@pulumi/pulumi';

/**
 * Options for a component's children: Pulumi does not pass a component's `dependsOn` on to
 * them, so a child would not wait for the APIs it needs to be enabled first.
 */
export function childOptions(parent: pulumi.Resource, opts?: pulumi.ComponentResourceOptions, extra: pulumi.Resource[] = []): pulumi.CustomResourceOptions & { dependsOn: pulumi.Resource[] } {
  const given = opts?.dependsOn;
  const inherited = given === undefined ? [] : (Array.isArray(given) ? given : [given]).filter((r): r is pulumi.Resource => pulumi.Resource.isInstance(r));
  return { parent, dependsOn: [...inherited, ...extra] };
}
