// Reading README.md and docs/ for the docs checks (readme-layout, configuration-doc, docs-links).
import * as fs from 'fs';
import * as path from 'path';

export const root = path.resolve(__dirname, '..', '..');

export const readDoc = (rel: string): string => fs.readFileSync(path.join(root, rel), 'utf8');

/** README.md and every markdown file under docs/, as repository-relative paths. */
export function markdownFiles(): string[] {
  const out = ['README.md'];
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else if (entry.name.endsWith('.md')) out.push(child);
    }
  };
  walk('docs');
  return out.sort();
}

/** Lines outside fenced code blocks (``` ... ```), with their text unchanged. */
export function proseLines(text: string): string[] {
  let fenced = false;
  return text.split('\n').filter((line) => {
    if (line.startsWith('```')) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  });
}

/** The text of the section that starts with `heading` (e.g. `## Layout`) up to the next heading of the same or a higher level. */
export function section(text: string, heading: string): string {
  const lines = text.split('\n');
  const start = lines.indexOf(heading);
  if (start === -1) throw new Error(`no section "${heading}"`);
  const level = heading.indexOf(' ');
  let end = start + 1;
  let fenced = false;
  for (; end < lines.length; end++) {
    if (lines[end].startsWith('```')) fenced = !fenced;
    const hashes = lines[end].indexOf(' ');
    if (!fenced && hashes > 0 && hashes <= level && /^#+$/.test(lines[end].slice(0, hashes))) break;
  }
  return lines.slice(start, end).join('\n');
}

/** The anchors GitHub gives a file's headings: lower case, punctuation but `-` and `_` dropped, spaces as `-`, repeats numbered. */
export function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of proseLines(text)) {
    const hashes = line.indexOf(' ');
    if (hashes < 1 || hashes > 6 || !/^#+$/.test(line.slice(0, hashes))) continue;
    let slug = '';
    for (const ch of line
      .slice(hashes + 1)
      .trim()
      .toLowerCase()) {
      if (ch === ' ') slug += '-';
      else if (ch === '-' || ch === '_' || /[\p{L}\p{N}]/u.test(ch)) slug += ch;
    }
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}
