import { LocalStack } from '../../apps/local/stack';

/**
 * What the reconciler's next round does for the Event types page (app/destinations/event-type-samples.ts),
 * without waiting its grace (HERALD_RECONCILE_AFTER_MS: a minute in test stacks): the stack's
 * own catalogue, over the intake journal's batches as they are now. Same code, same store.
 */
export async function catalogueNow(stack: Pick<LocalStack, 'runtime'>): Promise<void> {
  await stack.runtime.eventTypeCatalogue.observe(await stack.runtime.intake.due(new Date(), 1000));
}
