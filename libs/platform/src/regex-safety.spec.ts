import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';
import { checkSync } from 'recheck';

/**
 * Class guard for ReDoS: every regular expression literal in
 * the production code of apps/ and libs/ is run through recheck, a ReDoS checker that finds
 * exponential and polynomial backtracking by static analysis plus fuzzing. A new pattern that can
 * backtrack super-linearly fails this test unless it is listed below with the reason it never sees
 * caller data. Patterns built at run time (new RegExp(...)) cannot be checked statically: each such
 * site must be listed with what it is built from.
 */
const ROOT = path.resolve(__dirname, '../../..');

/** Super-linear patterns applied only to operator configuration (never to request data). */
const REVIEWED_CONFIG_ONLY: Record<string, string> = {
  'apps/ai-gateway/src/vision/media-storage.ts /\\/+$/': 'CDN_URL from the environment',
  'apps/membership/src/oauth/clients/oauth2-client-registration.ts /\\$\\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\\}/g':
    '${VAR} substitution in the operator’s clients file',
  'apps/membership/src/oauth/oauth2-login.service.ts /\\/+$/': 'OAUTH2_CALLBACK_BASE_URL from the environment',
  'apps/membership/src/oauth/oauth2-login.service.ts /^\\/+|\\/+$/g': 'CONTEXT_PATH from the environment',
  'libs/platform/src/http/configure-http-app.ts /^\\/+|\\/+$/g': 'CONTEXT_PATH from the environment',
  'libs/llm/src/http.ts /\\/+$/': 'an upstream base URL from the providers file',
  'libs/llm/src/providers-file.ts /\\/+$/': 'an upstream base URL from the providers file',
  'libs/llm/src/openai-media.client.ts /\\/+$/': 'an upstream base URL from the providers file',
  'libs/messaging/src/sms/aliyun-sms.sender.ts /\\/+$/': 'the SMS endpoint from the environment',
  'libs/storage/src/s3.storage.ts /^\\/+|\\/+$/g': 'the bucket prefix from the environment',
  'libs/wechat/src/wechat-api.client.ts /\\/+$/': 'the WeChat API base URL from the environment',
};

/** Run-time patterns: where each comes from. */
const REVIEWED_DYNAMIC: Record<string, string> = {
  'apps/ai-gateway/src/tokenizer/bpe-counter.ts file.pat_str':
    "the encoder's pre-tokenizer pattern shipped with js-tiktoken (only applied to pieces of bounded length)",
  'apps/ai-gateway/src/tokenizer/bpe-counter.ts specials.map':
    'an alternation of literal special-token strings, each escaped',
  'apps/membership/src/config/membership.config.ts this.PHONE_PATTERN':
    'PHONE_PATTERN from the environment (checked at start)',
  'apps/membership/src/verification/phone-format.ts DEFAULT_PHONE_PATTERN': 'a constant',
  'apps/membership/src/verification/phone-format.ts pattern': 'PHONE_PATTERN from the environment',
};

interface Found {
  file: string;
  text: string;
  dynamic: boolean;
}

function sources(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && e.name !== 'testing') sources(p, out);
    } else if (p.endsWith('.ts') && !p.endsWith('.spec.ts') && !p.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

function collect(): Found[] {
  const found: Found[] = [];
  for (const abs of [...sources(path.join(ROOT, 'apps')), ...sources(path.join(ROOT, 'libs'))]) {
    const file = path.relative(ROOT, abs).split(path.sep).join('/');
    const sf = ts.createSourceFile(abs, fs.readFileSync(abs, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (n: ts.Node): void => {
      if (n.kind === ts.SyntaxKind.RegularExpressionLiteral) found.push({ file, text: n.getText(sf), dynamic: false });
      if ((ts.isNewExpression(n) || ts.isCallExpression(n)) && n.expression.getText(sf) === 'RegExp') {
        found.push({ file, text: n.arguments?.[0]?.getText(sf) ?? '', dynamic: true });
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return found;
}

describe('regular expressions in production code', () => {
  const found = collect();
  const literals = found.filter((f) => !f.dynamic);
  const dynamic = found.filter((f) => f.dynamic);

  it('finds the code base’s patterns (the scan itself works)', () => {
    expect(literals.length).toBeGreaterThan(50);
    expect(literals.some((f) => f.file === 'libs/auth/src/decorators.ts')).toBe(true);
  });

  it('has no literal that backtracks super-linearly on caller data', () => {
    const unsafe: string[] = [];
    for (const { file, text } of literals) {
      const slash = text.lastIndexOf('/');
      const result = checkSync(text.slice(1, slash), text.slice(slash + 1), { timeout: 20_000 });
      if (result.status === 'safe') continue;
      const key = `${file} ${text}`;
      if (result.status === 'vulnerable' && REVIEWED_CONFIG_ONLY[key]) continue;
      unsafe.push(`${key}: ${result.status}${result.status === 'vulnerable' ? ` (${result.complexity.type})` : ''}`);
    }
    expect(unsafe).toEqual([]);
  }, 300_000);

  it('lists every reviewed exception that still exists (no stale entries)', () => {
    const keys = new Set(literals.map((f) => `${f.file} ${f.text}`));
    expect(Object.keys(REVIEWED_CONFIG_ONLY).filter((k) => !keys.has(k))).toEqual([]);
  });

  const reviews = (k: string, { file, text }: Found) => {
    const [f, ...rest] = k.split(' ');
    return f === file && text.includes(rest.join(' '));
  };

  it('builds run-time patterns only where reviewed', () => {
    const unreviewed = dynamic
      .filter((d) => !Object.keys(REVIEWED_DYNAMIC).some((k) => reviews(k, d)))
      .map(({ file, text }) => `${file} new RegExp(${text.slice(0, 60)})`);
    expect(unreviewed).toEqual([]);
    expect(Object.keys(REVIEWED_DYNAMIC).filter((k) => !dynamic.some((d) => reviews(k, d)))).toEqual([]);
  });
});
