import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { childOptions } from './child-options';
import { CompositeIndex, indexName } from '../firestore-plan';

export const DEFAULT_DATABASE = '(default)';

export interface FirestoreDataArgs {
  project: string;
  location: string;
  /** false: the project already has its (default) database; only indexes and TTL are declared. */
  createDatabase: boolean;
  /** ABANDON keeps the database and its data on pulumi destroy. */
  deletionPolicy: 'ABANDON' | 'DELETE';
  indexes: CompositeIndex[];
  ttlFields: { collection: string; field: string }[];
  /** Fields exempt from Firestore's automatic single-field indexes. */
  unindexedFields: readonly { collection: string; field: string }[];
}

/** Firestore in native mode, the composite indexes Herald's queries need and TTL on expiring records. */
export class FirestoreData extends pulumi.ComponentResource {
  readonly database?: gcp.firestore.Database;

  constructor(name: string, args: FirestoreDataArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:data:FirestoreData', name, {}, opts);
    if (args.createDatabase) {
      this.database = new gcp.firestore.Database(
        `${name}-database`,
        {
          project: args.project,
          name: DEFAULT_DATABASE,
          locationId: args.location,
          type: 'FIRESTORE_NATIVE',
          deletionPolicy: args.deletionPolicy,
          deleteProtectionState: args.deletionPolicy === 'ABANDON' ? 'DELETE_PROTECTION_ENABLED' : 'DELETE_PROTECTION_DISABLED',
        },
        childOptions(this, opts),
      );
    }
    const child = childOptions(this, opts, this.database ? [this.database] : []);
    for (const index of args.indexes) {
      new gcp.firestore.Index(
        `${name}-${indexName(index)}`,
        {
          project: args.project,
          database: DEFAULT_DATABASE,
          collection: index.collection,
          queryScope: 'COLLECTION',
          fields: [
            ...(index.contains !== undefined ? [{ fieldPath: index.contains, arrayConfig: 'CONTAINS' }] : []),
            ...index.fields.map((fieldPath, i) => ({ fieldPath, order: i === index.fields.length - 1 ? index.order : 'ASCENDING' })),
          ],
        },
        child,
      );
    }
    for (const ttl of args.ttlFields) {
      new gcp.firestore.Field(
        `${name}-${ttl.collection}-${ttl.field}-ttl`,
        {
          project: args.project,
          database: DEFAULT_DATABASE,
          collection: ttl.collection,
          field: ttl.field,
          ttlConfig: {},
          // Nothing queries the expiry; an index on an ever-growing timestamp would only hot-spot writes.
          indexConfig: {},
        },
        child,
      );
    }
    for (const f of args.unindexedFields) {
      new gcp.firestore.Field(`${name}-${f.collection}-${f.field}-unindexed`, { project: args.project, database: DEFAULT_DATABASE, collection: f.collection, field: f.field, indexConfig: {} }, child);
    }
    this.registerOutputs({});
  }
}
