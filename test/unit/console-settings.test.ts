import { consoleSecurityHeaders, consoleUrlOf, PORTAL_PAGE } from '../../functions/admin/console-files';
import { loadConfig } from '../../shared/config';

/**
 * Where the console is and who may frame it (issue 50: any site could frame the operator's
 * sign-in, and a request's X-Forwarded-Host chose where portal links point).
 */

const BASE = { HERALD_PUSH_TOKEN: 'a-push-token-of-some-length' };
const settings = (env: Record<string, string>) => loadConfig({ ...BASE, ...env });

describe('HERALD_PORTAL_FRAME_ANCESTORS', () => {
  test('origins, separated by spaces or commas; none by default', () => {
    expect(settings({}).portalFrameAncestors).toEqual([]);
    expect(settings({ HERALD_PORTAL_FRAME_ANCESTORS: 'https://app.example.com, https://admin.example.com:8443 http://127.0.0.1:3000 http://localhost:5173 http://[::1]:8000' }).portalFrameAncestors).toEqual([
      'https://app.example.com',
      'https://admin.example.com:8443',
      'http://127.0.0.1:3000',
      'http://localhost:5173',
      'http://[::1]:8000',
    ]);
  });

  test('anything but an origin stops Herald, naming it', () => {
    for (const bad of ['*', "'self'", "'none'", 'https://*.example.com', 'https://app.example.com/', 'https://app.example.com/path', 'http://app.example.com', 'http://127.evil.com', 'https://App.example.com', 'app.example.com']) {
      expect(() => settings({ HERALD_PORTAL_FRAME_ANCESTORS: `https://ok.example.com ${bad}` })).toThrow(`${JSON.stringify(bad)} is not an origin: give each as https://host[:port]`);
    }
  });

  test('the setting it replaced stops Herald, saying what to set instead', () => {
    expect(() => settings({ HERALD_CONSOLE_FRAME_ANCESTORS: '*' })).toThrow(/HERALD_CONSOLE_FRAME_ANCESTORS is no longer read: .* HERALD_PORTAL_FRAME_ANCESTORS/);
  });
});

describe('the console headers', () => {
  const policy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; base-uri 'none'; form-action 'self'; object-src 'none'";

  test('the operator console and every file: framed by no one, whatever the setting', () => {
    for (const path of ['/console', '/console/', '/console/index.html', '/console/app-3f9a1c2b.js', '/console/portal/', '/console/portal.html', '/console/destinations/portal']) {
      expect([path, consoleSecurityHeaders(path, { portalFrameAncestors: ['https://app.example.com'] })]).toEqual([
        path,
        { 'content-security-policy': `${policy}; frame-ancestors 'none'`, 'x-frame-options': 'DENY', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' },
      ]);
    }
  });

  test('the portal page: by the origins listed; by no one when none are', () => {
    expect(consoleSecurityHeaders(PORTAL_PAGE, { portalFrameAncestors: ['https://app.example.com', 'https://admin.example.com'] })).toEqual({
      'content-security-policy': `${policy}; frame-ancestors https://app.example.com https://admin.example.com`,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    });
    expect(consoleSecurityHeaders(PORTAL_PAGE, { portalFrameAncestors: [] })).toMatchObject({ 'content-security-policy': `${policy}; frame-ancestors 'none'`, 'x-frame-options': 'DENY' });
  });
});

describe('where the console is', () => {
  test('HERALD_CONSOLE_URL, else the admin function beside HERALD_PUSH_BASE_URL, else unknown', () => {
    expect(consoleUrlOf(settings({ HERALD_CONSOLE_URL: 'https://webhooks.example.com/admin/console/', HERALD_PUSH_BASE_URL: 'https://us-central1-p.cloudfunctions.net' }))).toBe('https://webhooks.example.com/admin/console');
    expect(consoleUrlOf(settings({ HERALD_PUSH_BASE_URL: 'https://us-central1-p.cloudfunctions.net/' }))).toBe('https://us-central1-p.cloudfunctions.net/admin/console');
    expect(consoleUrlOf(settings({ HERALD_PUSH_BASE_URL: 'http://127.0.0.1:8080' }))).toBe('http://127.0.0.1:8080/admin/console');
    expect(consoleUrlOf(settings({}))).toBeUndefined();
  });

  test('HERALD_CONSOLE_URL is https (http only to a loopback host), without query or fragment', () => {
    expect(() => settings({ HERALD_CONSOLE_URL: 'http://webhooks.example.com/admin/console' })).toThrow(/HERALD_CONSOLE_URL="http:\/\/webhooks.example.com\/admin\/console": must be https/);
    expect(() => settings({ HERALD_CONSOLE_URL: 'http://127.evil.com/admin/console' })).toThrow(/must be https/);
    expect(() => settings({ HERALD_CONSOLE_URL: 'https://webhooks.example.com/console?x=1' })).toThrow(/no query string and no fragment/);
    expect(() => settings({ HERALD_CONSOLE_URL: 'not a url' })).toThrow(/must be an absolute URL/);
    expect(settings({ HERALD_CONSOLE_URL: 'http://localhost:8080/admin/console' }).consoleUrl).toBe('http://localhost:8080/admin/console');
  });
});
