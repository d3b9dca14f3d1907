/**
 * What `npm start` prints once it serves, and `npm run rehearse` the same, so that a script
 * reading one reads the other: the serving line (test/support/local-herald.ts waits for it)
 * and the three `export` lines.
 */
export function servingBanner(b: { url: string; adminToken: string; ingestToken: string; projectId: string; emulators: { pubsubHost: string; firestoreHost: string }; title?: string; more: readonly string[] }): string[] {
  return [
    '',
    `Herald is running at ${b.url}  (health: ${b.url}/healthz)${b.title ?? ''}`,
    `  ingest   POST ${b.url}/ingest`,
    `  admin         ${b.url}/admin/destinations`,
    `  project  ${b.projectId}   Pub/Sub emulator ${b.emulators.pubsubHost}   Firestore emulator ${b.emulators.firestoreHost}`,
    ...b.more,
    '',
    'Tokens (set HERALD_ADMIN_TOKEN / HERALD_INGEST_TOKEN to choose your own):',
    `  export HERALD_URL=${b.url}`,
    `  export HERALD_ADMIN_TOKEN=${b.adminToken}`,
    `  export HERALD_INGEST_TOKEN=${b.ingestToken}`,
    '',
  ];
}
