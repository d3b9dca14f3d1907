import { LaneNotDeclaredError, LaneProvisioner } from '../../ports/messaging';

/**
 * Dedicated lanes on a deployment whose Pulumi stack declares them (herald:dedicatedLanes,
 * HERALD_LANE_PROVISIONING=declared). The runtime identity then holds no project-wide Pub/Sub
 * role: it publishes only to topics it was granted, and Pub/Sub cannot grant publish on topics
 * made later (its IAM has no conditions on resource names), so it makes none. A declared
 * lane exists and is Pulumi's; any other is refused, by name, before anything is written.
 */
export class DeclaredLanes implements LaneProvisioner {
  private readonly declared: ReadonlySet<string>;

  constructor(declared: readonly string[]) {
    this.declared = new Set(declared);
  }

  async ensureLane(destinationId: string): Promise<void> {
    if (!this.declared.has(destinationId)) throw new LaneNotDeclaredError(destinationId);
  }

  /** Pulumi's to remove (with herald:dedicatedLanes); lanes from before lanes were shared are removed by hand (docs/deploying.md). */
  async removeLane(): Promise<void> {}
}
