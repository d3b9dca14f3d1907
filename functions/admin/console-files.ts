import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';
import type { Response } from 'express';
import { HeraldConfig } from '../../shared/config-schema';
import { Runtime } from '../../shared/runtime/runtime';
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

/** The customer portal's page, where portal links lead (`<console URL>/portal`): the only page that may be framed. */
export const PORTAL_PAGE = '/console/portal';

const POLICY = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; base-uri 'none'; form-action 'self'; object-src 'none'";

/**
 * The console's security headers for a path. The operator's pages (and every file) may not be
 * framed by anyone: a framed sign-in form is a clickjacking target. The portal page may be, by
 * the origins HERALD_PORTAL_FRAME_ANCESTORS lists (the platform's pages that embed it), and by
 * no one when it lists none. X-Frame-Options says DENY wherever CSP says 'none', for browsers
 * that know only it; it cannot name several origins, so the portal framed by some has none.
 */
export function consoleSecurityHeaders(path: string, config: Pick<HeraldConfig, 'portalFrameAncestors'>): Record<string, string> {
  const ancestors = path === PORTAL_PAGE ? config.portalFrameAncestors : [];
  return {
    'content-security-policy': `${POLICY}; frame-ancestors ${ancestors.length > 0 ? ancestors.join(' ') : "'none'"}`,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    ...(ancestors.length === 0 ? { 'x-frame-options': 'DENY' } : {}),
  };
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
  res.set(consoleSecurityHeaders(req.path, rt.config));
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

/**
 * Where users reach the console, as portal links name it: HERALD_CONSOLE_URL, else the admin
 * function's (HERALD_PUSH_BASE_URL + /admin/console: local mode's own URL, or the functions'
 * URL on GCP); undefined when neither is set. Never a request's Host or X-Forwarded-* headers:
 * whoever sends those would choose where the operator's links point.
 */
export function consoleUrlOf(config: Pick<HeraldConfig, 'consoleUrl' | 'pushBaseUrl'>): string | undefined {
  if (config.consoleUrl !== undefined) return config.consoleUrl;
  return config.pushBaseUrl === undefined ? undefined : `${config.pushBaseUrl.replace(/\/+$/, '')}/admin/console`;
}
