import { PubSub } from '@google-cloud/pubsub';
import { EmulatorHosts } from '../../apps/local/emulators';

/** Deletes every subscription and topic of a project (leftovers of an interrupted run). */
export async function purgeProject(projectId: string): Promise<void> {
  const pubsub = new PubSub({ projectId });
  try {
    const [subscriptions] = await pubsub.getSubscriptions();
    await Promise.all(subscriptions.map((s) => s.delete().catch(() => undefined)));
    const [topics] = await pubsub.getTopics();
    await Promise.all(topics.map((t) => t.delete().catch(() => undefined)));
  } finally {
    await pubsub.close();
  }
}

/** Deletes every document of a project in the Firestore emulator. */
export async function clearFirestore(hosts: EmulatorHosts, projectId: string): Promise<void> {
  const url = `http://${hosts.firestoreHost}/emulator/v1/projects/${projectId}/databases/(default)/documents`;
  const res = await fetch(url, { method: 'DELETE', signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`DELETE ${url}: HTTP ${res.status} ${(await res.text()).slice(0, 200)}`);
}
