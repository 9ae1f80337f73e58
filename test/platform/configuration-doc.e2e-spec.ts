// docs/configuration.md against the config classes: every variable a config class reads (membership's,
// the gateway's, and BaseConfig's, which both extend) has a row in one of its tables, and every variable a
// table names is read by a config class or directly from process.env in apps/ or libs/
// (test/deploy/deploy-files.ts finds those), so a renamed or removed variable leaves no stale row.
import 'reflect-metadata';
import { configKeys } from '@app/platform';
import { MembershipConfig } from '../../apps/membership/src/config/membership.config';
import { GatewayConfig } from '../../apps/ai-gateway/src/config/gateway.config';
import { directEnvReads } from '../deploy/deploy-files';
import { proseLines, readDoc } from './docs';

/** Read with process.env by code, yet no setting of ours: the shell's search path (PocketSphinx lookup). */
const NOT_SETTINGS = new Set(['PATH']);

/** Variables named in the first cell of a table row (`| \`NAME\` ...`, several per cell allowed). */
function documentedVariables(markdown: string): Set<string> {
  const names = new Set<string>();
  for (const line of proseLines(markdown)) {
    if (!line.startsWith('| ')) continue;
    const firstCell = line.slice(2, line.indexOf(' |', 2));
    for (const m of firstCell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.add(m[1]);
  }
  return names;
}

function readVariables(): Set<string> {
  const fromClasses = [...configKeys(MembershipConfig), ...configKeys(GatewayConfig)];
  const direct = [...directEnvReads().keys()].filter((name) => !NOT_SETTINGS.has(name));
  return new Set([...fromClasses, ...direct]);
}

describe('docs/configuration.md', () => {
  const documented = documentedVariables(readDoc('docs/configuration.md'));
  const read = readVariables();

  it('documents every variable the config classes read', () => {
    expect([...read].filter((name) => !documented.has(name)).sort()).toEqual([]);
  });

  it('documents no variable that nothing reads', () => {
    expect([...documented].filter((name) => !read.has(name)).sort()).toEqual([]);
  });

  it('the check can fail: a class variable without its row, and a row without its variable, are found', () => {
    expect(read.has('JWT_SECRET') && read.has('AI_PROVIDERS_FILE') && read.has('NODE_ENV')).toBe(true);
    const doc = readDoc('docs/configuration.md');
    const withoutJwt = documentedVariables(
      doc
        .split('\n')
        .filter((l) => !l.startsWith('| `JWT_SECRET`'))
        .join('\n'),
    );
    expect([...read].filter((name) => !withoutJwt.has(name))).toEqual(['JWT_SECRET']);
    const withStale = documentedVariables(`${doc}\n| \`AI_RETIRED_SETTING\` / \`AI_OTHER\` | \`1\` | gone |\n`);
    expect([...withStale].filter((name) => !read.has(name)).sort()).toEqual(['AI_OTHER', 'AI_RETIRED_SETTING']);
  });
});
