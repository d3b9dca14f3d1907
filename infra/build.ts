import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';

/** What compiles Herald's functions: the project's own TypeScript, with its build settings. */
export const BUILD_CONFIG = 'tsconfig.build.json';
/** The console's build script, and where a deployed package holds its output. */
export const CONSOLE_BUILD = 'console/build.mjs';
export const CONSOLE_OUT = 'dist/console';
/** What Cloud Build receives: the compiled package, its manifest and lock file (it runs `npm ci`). */
export const SOURCE_FILES = ['package.json', 'package-lock.json'] as const;
export const BUILD_DIR = 'dist';

export type Runner = (command: string, args: string[], options: { cwd: string }) => void;

const runNode: Runner = (command, args, options) => {
  execFileSync(command, args, { cwd: options.cwd, stdio: 'inherit' });
};

/**
 * Compiles dist/ before the program zips it, so `pulumi up` on a fresh clone (after `npm ci`)
 * deploys the code as it is, with no separate `npm run build` to remember or to forget after
 * a change. A package directory without the build config (a prebuilt package given as
 * herald:packageDir) is taken as it is. Resolves whether it built.
 */
export function buildPackage(packageDir: string, note: (line: string) => void, run: Runner = runNode): boolean {
  const config = path.join(packageDir, BUILD_CONFIG);
  if (!existsSync(config)) return false;
  const tsc = path.join(packageDir, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!existsSync(tsc)) throw new Error(`${tsc} is missing: run npm ci in ${packageDir} before pulumi up (the program compiles dist/ with the project's TypeScript)`);
  note(`compiling ${path.join(packageDir, 'dist')} (tsc -p ${BUILD_CONFIG})`);
  run(process.execPath, [tsc, '-p', BUILD_CONFIG], { cwd: packageDir });
  // The web console's files go inside dist/, the one directory uploaded, where the admin function looks.
  if (existsSync(path.join(packageDir, CONSOLE_BUILD))) {
    note(`building the console into ${path.join(packageDir, CONSOLE_OUT)}`);
    run(process.execPath, [CONSOLE_BUILD, '--out', CONSOLE_OUT], { cwd: packageDir });
  }
  return true;
}
