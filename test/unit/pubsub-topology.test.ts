import { subscriptionMetadata } from '../../shared/adapters/pubsub-topology';
import { heraldTopology, laneTopology } from '../../shared/topology';

/** What each subscription is created with, on GCP and on the emulator. */
const target = { endpointFor: (fn: string) => `http://127.0.0.1:8080/${fn}?token=t` };

test('a lane and the route subscription keep their retry policy on GCP, as the Pulumi program declares it', () => {
  const lane = laneTopology('orders').subscription;
  expect(subscriptionMetadata(lane, 'p', target).retryPolicy).toEqual({ minimumBackoff: { seconds: 10 }, maximumBackoff: { seconds: 600 } });
});

test('on the emulator push subscriptions get no retry policy (its retry queue strands messages), the rest is the same', () => {
  const onEmulator = { ...target, emulator: true };
  for (const spec of [laneTopology('orders').subscription, ...heraldTopology().subscriptions.filter((s) => s.pushTo)]) {
    const metadata = subscriptionMetadata(spec, 'p', onEmulator);
    expect(metadata).not.toHaveProperty('retryPolicy');
    const { retryPolicy: _dropped, ...rest } = subscriptionMetadata(spec, 'p', target);
    expect(metadata).toEqual(rest);
  }
});
