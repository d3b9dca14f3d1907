import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildPackage, Runner } from '../../../infra/build';

/** `pulumi up` compiles dist/ itself: nothing to remember between `npm ci` and a deploy. */

const ROOT = path.resolve(__dirname, '../../..');

function packageDir(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'herald-build-'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  return dir;
}

test('a project with its build config is compiled with its own TypeScript', () => {
  const dir = packageDir({ 'tsconfig.build.json': '{}', 'node_modules/typescript/bin/tsc': '' });
  const calls: Parameters<Runner>[] = [];
  const notes: string[] = [];
  expect(buildPackage(dir, (l) => notes.push(l), (...args) => void calls.push(args))).toBe(true);
  expect(calls).toEqual([[process.execPath, [path.join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: dir }]]);
  expect(notes[0]).toMatch(/^compiling .*dist \(tsc -p tsconfig.build.json\)$/);
  rmSync(dir, { recursive: true });
});

test('with the console sources there, the console is built into dist/console, which is uploaded', () => {
  const dir = packageDir({ 'tsconfig.build.json': '{}', 'node_modules/typescript/bin/tsc': '', 'console/build.mjs': '' });
  const calls: Parameters<Runner>[] = [];
  expect(buildPackage(dir, () => undefined, (...args) => void calls.push(args))).toBe(true);
  expect(calls[1]).toEqual([process.execPath, ['console/build.mjs', '--out', 'dist/console'], { cwd: dir }]);
  rmSync(dir, { recursive: true });
});

test('a prebuilt package (no build config) is taken as it is; a project without npm ci is refused with what to do', () => {
  const prebuilt = packageDir({ 'package.json': '{}' });
  expect(buildPackage(prebuilt, () => undefined, () => { throw new Error('must not build'); })).toBe(false);
  const uninstalled = packageDir({ 'tsconfig.build.json': '{}' });
  expect(() => buildPackage(uninstalled, () => undefined)).toThrow(/run npm ci in .* before pulumi up/);
  rmSync(prebuilt, { recursive: true });
  rmSync(uninstalled, { recursive: true });
});

test('this project builds: dist/functions/index.js, what package.json main names, is written', () => {
  const before = Date.now();
  expect(buildPackage(ROOT, () => undefined)).toBe(true);
  const main = path.join(ROOT, 'dist/functions/index.js');
  expect(existsSync(main)).toBe(true);
  expect(statSync(main).mtimeMs).toBeGreaterThanOrEqual(before - 1000);
  expect(existsSync(path.join(ROOT, 'dist/console/index.html'))).toBe(true);
}, 180_000);
