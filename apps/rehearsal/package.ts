import { cpSync, existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { BUILD_DIR, buildPackage, SOURCE_FILES } from '../../infra/build';

/**
 * The package Cloud Functions receives, laid out as the upload is: package.json, its lock file
 * and dist/ (infra/components/function-source.ts), copied (so the functions find their console
 * in dist/console as deployed, not the sources' console/dist), with the project's
 * node_modules linked in place of Cloud Build's `npm ci`.
 */
export function stagePackage(root: string, stageDir: string, options: { build: boolean; note: (line: string) => void }): string {
  // The same build the Pulumi program runs before it zips dist/.
  if (options.build) buildPackage(root, options.note);
  if (!existsSync(path.join(root, BUILD_DIR, 'functions', 'index.js'))) {
    throw new Error(`${path.join(root, BUILD_DIR)} holds no build: run without --no-build (the rehearsal builds it as pulumi up does)`);
  }
  rmSync(stageDir, { recursive: true, force: true });
  mkdirSync(stageDir, { recursive: true });
  for (const file of SOURCE_FILES) cpSync(path.join(root, file), path.join(stageDir, file));
  cpSync(path.join(root, BUILD_DIR), path.join(stageDir, BUILD_DIR), { recursive: true });
  symlinkSync(path.join(root, 'node_modules'), path.join(stageDir, 'node_modules'), 'dir');
  options.note(`staged the package as deployed in ${stageDir} (package.json, package-lock.json, ${BUILD_DIR}/)`);
  return stageDir;
}
