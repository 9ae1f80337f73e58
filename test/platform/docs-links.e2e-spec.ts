// Every relative markdown link in README.md and docs/ points at a file or folder of the repository, and a
// link with an anchor (`file.md#heading`, `#heading`) at a heading of that file: a moved or renamed doc,
// or a renamed heading, fails here.
import * as fs from 'fs';
import * as path from 'path';
import { headingAnchors, markdownFiles, proseLines, readDoc, root } from './docs';

interface Link {
  file: string;
  target: string;
}

/** `[text](target)` links outside code blocks and code spans; absolute URLs (`scheme:`) and mail links are not ours to check. */
function relativeLinks(file: string, text: string): Link[] {
  const links: Link[] = [];
  for (const line of proseLines(text)) {
    const prose = line
      .split('`')
      .filter((_, i) => i % 2 === 0)
      .join('');
    for (const m of prose.matchAll(/\]\(([^()\s]+)\)/g)) {
      if (!/^[a-z][a-z0-9+.-]*:/i.test(m[1])) links.push({ file, target: m[1] });
    }
  }
  return links;
}

/** What is wrong with a link, or undefined when it resolves. */
function problem(link: Link): string | undefined {
  const hash = link.target.indexOf('#');
  const pathPart = hash === -1 ? link.target : link.target.slice(0, hash);
  const anchor = hash === -1 ? undefined : link.target.slice(hash + 1);
  const resolved =
    pathPart === '' ? link.file : path.posix.normalize(path.posix.join(path.posix.dirname(link.file), pathPart));
  if (resolved.startsWith('..')) return 'leaves the repository';
  const full = path.join(root, resolved);
  if (!fs.existsSync(full)) return `${resolved} does not exist`;
  if (anchor === undefined) return undefined;
  if (!resolved.endsWith('.md')) return `anchor #${anchor} on a file that is not markdown`;
  return headingAnchors(readDoc(resolved)).has(anchor) ? undefined : `${resolved} has no heading #${anchor}`;
}

describe('links in README.md and docs/', () => {
  const files = markdownFiles();

  it('reads the README, the docs of both apps and the contract', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'README.md',
        'docs/architecture.md',
        'docs/configuration.md',
        'docs/membership/README.md',
        'docs/ai-gateway/README.md',
        'docs/contract/DECISIONS.md',
      ]),
    );
  });

  it('every relative link resolves to a repository path (and heading)', () => {
    const links = files.flatMap((file) => relativeLinks(file, readDoc(file)));
    expect(links.length).toBeGreaterThan(50);
    const broken = links.map((l) => ({ ...l, problem: problem(l) })).filter((l) => l.problem !== undefined);
    expect(broken).toEqual([]);
  });

  it('the check can fail: a missing file, a missing heading and a path outside the repository are found', () => {
    const text =
      'See [gone](nowhere.md), [bad anchor](architecture.md#no-such-heading), [out](../../etc/passwd), [ok](architecture.md#layout), `[code](ignored.md)` and [web](https://example.com).';
    const found = relativeLinks('docs/example.md', text).map((l) => [l.target, problem(l)]);
    expect(found).toEqual([
      ['nowhere.md', 'docs/nowhere.md does not exist'],
      ['architecture.md#no-such-heading', 'docs/architecture.md has no heading #no-such-heading'],
      ['../../etc/passwd', 'leaves the repository'],
      ['architecture.md#layout', undefined],
    ]);
  });
});
