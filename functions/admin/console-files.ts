import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';
import type { Response } from 'express';
import { Runtime } from '../../shared/runtime';
import { HeraldRequest, sendJson } from '../http';
import { packageRoot } from './package-root';

/** The console's built files as the admin function serves them (no credential: they hold no data), and where the console is for a caller. */

const CONSOLE_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
};

/** A built asset whose name carries its content hash (`index-3f9a1c2b.js`): it never changes, so it may be cached for good. */
const HASHED_ASSET = /[.-][A-Za-z0-9_]{8,}\.[a-z0-9]+$/;

/**
 * Where the console's built files are: HERALD_CONSOLE_DIR, else console/dist in the sources
 * (npm run build:console), else dist/console in a deployed package (the Pulumi program builds
 * it there, inside the one directory it uploads).
 */
function consoleDirOf(rt: Runtime): string | undefined {
  if (rt.config.consoleDir !== undefined) return resolve(rt.config.consoleDir);
  const root = packageRoot();
  if (root === undefined) return undefined;
  const candidates = [join(root, 'console', 'dist'), join(root, 'dist', 'console')];
  return candidates.find((dir) => existsSync(join(dir, 'index.html'))) ?? candidates[0];
}

function consoleHeaders(res: Response, rt: Runtime): void {
  res.set({
    'content-security-policy': `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; base-uri 'none'; form-action 'self'; object-src 'none'; frame-ancestors ${rt.config.consoleFrameAncestors}`,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  });
}

/** The file a console path names inside `dir`, or undefined when it would leave it (`..`, an encoded slash or NUL, a symlink out). */
function consoleFile(dir: string, path: string): string | undefined {
  let relative: string;
  try {
    relative = decodeURIComponent(path.slice('/console'.length));
  } catch {
    return undefined;
  }
  const segments = relative.split('/').filter((s) => s !== '');
  if (segments.some((s) => s === '..' || s === '.' || s.includes('\\') || s.includes('\0'))) return undefined;
  const file = resolve(dir, ...segments);
  return file === dir || file.startsWith(dir + sep) ? file : undefined;
}

/**
 * GET /console and /console/*: the console's built files, no credential needed (they hold
 * no data; the API they call checks every request). `/console` redirects to `/console/`; a
 * path without an extension that names no file is a route of the console's own: index.html.
 */
export function serveConsole(req: HeraldRequest, res: Response, rt: Runtime): void {
  consoleHeaders(res, rt);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.set('allow', 'GET, HEAD');
    sendJson(res, 405, { error: `method ${req.method} not allowed on ${req.path}; the console is read with GET` });
    return;
  }
  // Its files are named relative to `…/console/`: without the slash, `app.js` would resolve beside it. The fragment (a portal link) survives a redirect.
  if (req.path === '/console') {
    const search = req.originalUrl.indexOf('?');
    res.status(308).set({ location: `console/${search >= 0 ? req.originalUrl.slice(search) : ''}`, 'cache-control': 'no-cache' }).end();
    return;
  }
  const dir = consoleDirOf(rt);
  const index = dir === undefined ? undefined : join(dir, 'index.html');
  if (dir === undefined || index === undefined || !existsSync(index)) {
    sendJson(res, 503, { error: `the console is not built (no ${dir ?? 'console/dist'}/index.html): run \`npm run build:console\`, then reload` });
    return;
  }
  const file = consoleFile(dir, req.path);
  if (file === undefined) {
    sendJson(res, 400, { error: `invalid console path ${JSON.stringify(req.path)}: it leaves the console's directory` });
    return;
  }
  let target = file;
  let stat = statSync(target, { throwIfNoEntry: false });
  if (stat?.isDirectory()) {
    target = join(target, 'index.html');
    stat = statSync(target, { throwIfNoEntry: false });
  }
  if (!stat?.isFile()) {
    if (extname(file) !== '') {
      sendJson(res, 404, { error: `no console file ${JSON.stringify(req.path)}` });
      return;
    }
    target = index;
  }
  // A symbolic link inside the directory must not lead out of it.
  const realDir = realpathSync(dir);
  const real = realpathSync(target);
  if (real !== realDir && !real.startsWith(realDir + sep)) {
    sendJson(res, 400, { error: `invalid console path ${JSON.stringify(req.path)}: it leaves the console's directory` });
    return;
  }
  const type = CONSOLE_TYPES[extname(target).toLowerCase()] ?? 'application/octet-stream';
  const html = type.startsWith('text/html');
  res.status(200).set({ 'content-type': type, 'cache-control': html || !HASHED_ASSET.test(target) ? 'no-cache' : 'public, max-age=31536000, immutable' });
  res.send(readFileSync(real));
}

const FORWARDED_PROTO = /^https?$/;
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
const PREFIX = /^(?:\/[A-Za-z0-9._~-]+)*$/;

/**
 * Where the console is for whoever made this request: its origin (X-Forwarded-Proto and
 * X-Forwarded-Host when a proxy set them, else the Host header) and the admin function's
 * mount: X-Forwarded-Prefix when given, else `/admin`, the function's path both in local
 * mode (http://127.0.0.1:PORT/admin) and at its Cloud Functions URL
 * (https://REGION-PROJECT.cloudfunctions.net/admin); nothing at a Cloud Run URL of its own (*.run.app).
 */
export function consoleBaseOf(headers: { get(name: string): string | undefined }, protocol: string, fallback: string | undefined): string {
  const first = (name: string) => headers.get(name)?.split(',')[0]?.trim() || undefined;
  const proto = first('x-forwarded-proto') ?? protocol;
  const host = first('x-forwarded-host') ?? headers.get('host');
  if (!FORWARDED_PROTO.test(proto) || host === undefined || !HOST.test(host)) return `${(fallback ?? 'http://127.0.0.1:8080').replace(/\/$/, '')}/admin/console`;
  const forwardedPrefix = first('x-forwarded-prefix');
  const prefix = forwardedPrefix !== undefined && PREFIX.test(forwardedPrefix.replace(/\/$/, '')) ? forwardedPrefix.replace(/\/$/, '') : /\.run\.app(?::\d+)?$/.test(host) ? '' : '/admin';
  return `${proto}://${host}${prefix}/console`;
}
