import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Herald's package root: beside functions/ in the sources, one level up from dist/functions/ when built. */
export function packageRoot(): string | undefined {
  for (const dir of [join(__dirname, '..', '..'), join(__dirname, '..', '..', '..')]) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string };
    if (manifest.name === 'herald') return dir;
  }
  return undefined;
}

/** Herald's version, from its package.json. */
export function packageVersion(): string {
  const root = packageRoot();
  const manifest = root === undefined ? {} : (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version?: string });
  return manifest.version ?? '0.0.0';
}
