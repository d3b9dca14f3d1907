import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The README and docs/ link to each other by relative path and heading anchor. A renamed
 * heading or a moved page breaks such a link silently on GitHub, so every relative link is
 * checked here: the file must exist and the anchor must be a heading of it.
 *
 * Recognised: inline links and images, `[text](path)`, `[text](path#anchor)`, `[text](#anchor)`,
 * outside fenced code blocks and inline code. Not recognised: reference-style links, setext
 * headings and indented code blocks; the docs use none of them for links or headings.
 */

const ROOT = resolve(__dirname, '../..');
const README_MAX_LINES = 200;

function markdownFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join(ROOT, 'docs', name));
  return [join(ROOT, 'README.md'), ...docs];
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** The lines outside fenced code blocks; fenced lines become empty so line numbers hold. */
function withoutFences(markdown: string): string[] {
  let open: string | undefined;
  return markdown.split('\n').map((line) => {
    const fence = FENCE.exec(line)?.[1];
    if (open === undefined) {
      if (fence === undefined) return line;
      open = fence;
      return '';
    }
    // A fence closes only with the same character, at least as long, and nothing after it.
    if (fence !== undefined && fence[0] === open[0] && fence.length >= open.length && line.trim() === fence) open = undefined;
    return '';
  });
}

/** Inline code spans (any number of backticks) blanked out: `[a](b)` in code is not a link. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)(?!`)([\s\S]*?[^`])\1(?!`)/g, (span) => span.replace(/[^\n]/g, ' '));
}

interface MarkdownLink {
  line: number;
  text: string;
  target: string;
}

const LINK = /!?\[((?:[^[\]]|\[[^\]]*\])*)\]\(\s*<?([^\s)>]+)>?(?:\s+"[^"]*")?\s*\)/g;

function linksOf(markdown: string): MarkdownLink[] {
  const text = withoutCodeSpans(withoutFences(markdown).join('\n'));
  const links: MarkdownLink[] = [];
  for (const match of text.matchAll(LINK)) {
    const line = text.slice(0, match.index).split('\n').length;
    links.push({ line, text: match[1] ?? '', target: match[2] ?? '' });
  }
  return links;
}

/** GitHub's anchor for a heading's text (github-slugger): lowercase, punctuation dropped but '-' and '_', each space a '-'. */
function slugOf(heading: string): string {
  const text = heading
    .replace(/!?\[((?:[^[\]]|\[[^\]]*\])*)\]\([^)]*\)/g, '$1') // a link counts by its text
    .replace(/<[^>]+>/g, '') // HTML tags render as nothing
    .trim();
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

const HEADING = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;

/** Every anchor a file's headings get, duplicates numbered -1, -2, … as GitHub does. */
function anchorsOf(markdown: string): Set<string> {
  const counts = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of withoutFences(markdown)) {
    const heading = HEADING.exec(line)?.[2];
    if (heading === undefined) continue;
    const base = slugOf(heading);
    let slug = base;
    while (anchors.has(slug)) {
      const n = (counts.get(base) ?? 0) + 1;
      counts.set(base, n);
      slug = `${base}-${n}`;
    }
    anchors.add(slug);
  }
  return anchors;
}

const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i; // http:, https:, mailto:, …: not checked

function problemsOf(file: string): string[] {
  const markdown = readFileSync(file, 'utf8');
  const where = (link: MarkdownLink) => `${relative(ROOT, file)}:${link.line} [${link.text}](${link.target})`;
  const problems: string[] = [];
  for (const link of linksOf(markdown)) {
    if (EXTERNAL.test(link.target)) continue;
    const hash = link.target.indexOf('#');
    const path = decodeURIComponent(hash < 0 ? link.target : link.target.slice(0, hash));
    const anchor = hash < 0 ? undefined : decodeURIComponent(link.target.slice(hash + 1));
    const target = path === '' ? file : resolve(dirname(file), path);
    if (!existsSync(target)) {
      problems.push(`${where(link)}: no file ${relative(ROOT, target)}`);
      continue;
    }
    // Anchors into source files (#L10) are GitHub's line links, not headings.
    if (anchor === undefined || !target.endsWith('.md') || statSync(target).isDirectory()) continue;
    if (!anchorsOf(readFileSync(target, 'utf8')).has(anchor)) {
      problems.push(`${where(link)}: ${relative(ROOT, target)} has no heading with anchor #${anchor}`);
    }
  }
  return problems;
}

describe('slugOf and anchorsOf follow GitHub', () => {
  it.each([
    ['Deploying to Google Cloud with `pulumi up`', 'deploying-to-google-cloud-with-pulumi-up'],
    ["Today's fixes", 'todays-fixes'],
    ['Rate: `npm run bench -- rate`', 'rate-npm-run-bench----rate'],
    ['Pub/Sub-topic destinations', 'pubsub-topic-destinations'],
    ['Deferred deliveries come back at the rate of now, not of when they were deferred', 'deferred-deliveries-come-back-at-the-rate-of-now-not-of-when-they-were-deferred'],
    ['snake_case and [a link](x.md) — dash', 'snake_case-and-a-link--dash'],
    ['Café 95 %', 'café-95-'],
  ])('%s → %s', (heading, slug) => {
    expect(slugOf(heading)).toBe(slug);
  });

  it('numbers repeated headings -1, -2', () => {
    expect([...anchorsOf('# A\n## A\n### A\n## B')]).toEqual(['a', 'a-1', 'a-2', 'b']);
  });

  it('ignores headings and links inside code', () => {
    const markdown = '# Real\n```sh\n# not a heading [x](missing.md)\n```\nsee `[y](gone.md)` and [z](here.md#real)\n';
    expect([...anchorsOf(markdown)]).toEqual(['real']);
    expect(linksOf(markdown)).toEqual([{ line: 5, text: 'z', target: 'here.md#real' }]);
  });
});

describe('README.md and docs/*.md', () => {
  const files = markdownFiles();

  it('finds the pages and their links (the check is not vacuous)', () => {
    expect(files.length).toBeGreaterThan(1);
    const readmeLinks = linksOf(readFileSync(join(ROOT, 'README.md'), 'utf8')).filter((l) => !EXTERNAL.test(l.target));
    expect(readmeLinks.length).toBeGreaterThan(5);
  });

  it.each(files.map((file) => [relative(ROOT, file), file]))('%s: every relative link resolves, anchors included', (_name, file) => {
    expect(problemsOf(file)).toEqual([]);
  });

  it(`README.md has at most ${README_MAX_LINES} lines`, () => {
    const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });
});
