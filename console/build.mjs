// Builds the web console into console/dist: index.html, app-<hash>.js and app-<hash>.css
// (uPlot's styles included), every asset local so the console works offline under a strict
// CSP. The content hash in the names lets Herald serve them as immutable; index.html (never
// cached) names the current ones.
// `node console/build.mjs` (npm run build:console); `--watch` rebuilds on change; `--out DIR`
// writes elsewhere (the Pulumi program builds it into dist/console, which is what it deploys).
import { build, context } from 'esbuild';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outAt = process.argv.indexOf('--out');
const dist = outAt > 0 && process.argv[outAt + 1] ? resolve(process.argv[outAt + 1]) : join(here, 'dist');

/** @type {import('esbuild').BuildOptions} */
const options = {
  entryPoints: { app: join(here, 'src', 'main.tsx') },
  outdir: dist,
  entryNames: '[name]-[hash]',
  bundle: true,
  format: 'esm',
  target: ['es2020'],
  minify: true,
  sourcemap: true,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'linked',
  logLevel: 'warning',
};

/** index.html from its template, naming the built script and style sheet. */
async function writeIndex(outputs) {
  const named = (ext) => basename(Object.keys(outputs).find((f) => f.endsWith(ext) && basename(f).startsWith('app-')) ?? `app${ext}`);
  const html = (await readFile(join(here, 'src', 'index.html'), 'utf8')).replace('href="app.css"', `href="${named('.css')}"`).replace('src="app.js"', `src="${named('.js')}"`);
  await writeFile(join(dist, 'index.html'), html);
  await copyFile(join(here, 'src', 'favicon.svg'), join(dist, 'favicon.svg'));
}

export async function buildConsole() {
  await rm(dist, { recursive: true, force: true });
  await mkdir(dist, { recursive: true });
  const result = await build({ ...options, metafile: true });
  await writeIndex(result.metafile.outputs);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--watch')) {
    await mkdir(dist, { recursive: true });
    const ctx = await context({ ...options, metafile: true, plugins: [{ name: 'index', setup: (b) => b.onEnd((r) => r.metafile && writeIndex(r.metafile.outputs)) }] });
    await ctx.watch();
    process.stdout.write('watching console/src\n');
  } else {
    await buildConsole();
    process.stdout.write(`console built in ${dist}\n`);
  }
}
