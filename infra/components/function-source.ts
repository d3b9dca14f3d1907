import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import * as gcp from '@pulumi/gcp';
import * as pulumi from '@pulumi/pulumi';
import { childOptions } from './child-options';
import { BUILD_DIR, SOURCE_FILES } from '../build';

export interface FunctionSourceArgs {
  project: string;
  region: string;
  /** Holds package.json, package-lock.json and dist/ (compiled by the program itself: infra/build.ts). */
  packageDir: string;
}


/**
 * The built package, zipped into a bucket. The object is named by its content hash, so a
 * changed build is a new object and every function is redeployed onto it.
 */
export class FunctionSource extends pulumi.ComponentResource {
  readonly bucket: gcp.storage.Bucket;
  readonly object: gcp.storage.BucketObject;

  constructor(name: string, args: FunctionSourceArgs, opts?: pulumi.ComponentResourceOptions) {
    super('herald:functions:Source', name, {}, opts);
    const files = sourceFiles(args.packageDir);
    const hash = createHash('sha256');
    for (const file of files) hash.update(file).update('\0').update(readFileSync(path.join(args.packageDir, file)));
    this.bucket = new gcp.storage.Bucket(
      `${name}-sources`,
      {
        project: args.project,
        location: args.region,
        uniformBucketLevelAccess: true,
        publicAccessPrevention: 'enforced',
        // Only build inputs live here: pulumi destroy may empty it.
        forceDestroy: true,
      },
      childOptions(this, opts),
    );
    this.object = new gcp.storage.BucketObject(
      `${name}-source`,
      {
        bucket: this.bucket.name,
        name: `herald-${hash.digest('hex').slice(0, 20)}.zip`,
        source: new pulumi.asset.AssetArchive({
          ...Object.fromEntries(SOURCE_FILES.map((f) => [f, new pulumi.asset.FileAsset(path.join(args.packageDir, f))])),
          [BUILD_DIR]: new pulumi.asset.FileArchive(path.join(args.packageDir, BUILD_DIR)),
        }),
      },
      childOptions(this, opts),
    );
    this.registerOutputs({ bucket: this.bucket.name, object: this.object.name });
  }
}

/** Every file the archive holds, relative and sorted; fails early, and says why, when the build is missing. */
export function sourceFiles(packageDir: string): string[] {
  const missing = SOURCE_FILES.filter((f) => !existsSync(path.join(packageDir, f)));
  if (missing.length) throw new Error(`herald:packageDir ${packageDir} lacks ${missing.join(' and ')}`);
  const main = (JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { main?: string }).main;
  if (main === undefined || !existsSync(path.join(packageDir, main))) {
    throw new Error(`${path.join(packageDir, main ?? 'package.json main')} is missing: the package in herald:packageDir must hold the compiled ${BUILD_DIR}/ (npm run build there), which Cloud Functions runs`);
  }
  if (!path.normalize(main).startsWith(`${BUILD_DIR}${path.sep}`)) throw new Error(`package.json main (${main}) must lie in ${BUILD_DIR}/, the only compiled code uploaded`);
  const walk = (dir: string): string[] =>
    readdirSync(path.join(packageDir, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
  return [...SOURCE_FILES, ...walk(BUILD_DIR)].sort();
}
