import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { spawnSync } from 'child_process';
import { embeddedPasswordFile } from '../../libs/database/src/embedded-postgres';
import { freePort } from '../support/free-port';

const root = path.resolve(__dirname, '../..');

interface Step {
  url?: string;
  /** SQLSTATE of connecting with the returned URL / with postgres:postgres ('' = connected). */
  withUrl?: string;
  withDefault?: string;
  error?: string;
}

/** One start of the embedded server in a child process (see test/support/embedded-step.ts). */
function step(options: Record<string, unknown>, env: Record<string, string | undefined> = {}): Step {
  const res = spawnSync(
    process.execPath,
    [
      '-r',
      'ts-node/register/transpile-only',
      path.join(root, 'test/support/embedded-step.ts'),
      JSON.stringify(options),
    ],
    {
      cwd: root,
      env: { ...process.env, ...env },
      encoding: 'utf8',
      timeout: 110_000,
    },
  );
  if (!res.stdout) throw new Error(`embedded step printed nothing: ${res.stderr}`);
  return JSON.parse(res.stdout);
}

// M6: the embedded PostgreSQL's superuser has a generated password kept under DATA_DIR (0600), old data
// directories with the default password are migrated, and production refuses the embedded database.
describe('embedded PostgreSQL superuser password', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-pw-'));
  let port: number;

  beforeAll(async () => {
    port = await freePort();
  });

  it('generates a random password at first start, kept with mode 0600; postgres/postgres is refused', () => {
    const first = step({ dataDir, port, production: false });
    expect(first.error).toBeUndefined();
    const file = embeddedPasswordFile(dataDir);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const password = fs.readFileSync(file, 'utf8').trim();
    expect(password).not.toBe('postgres');
    expect(password.length).toBeGreaterThanOrEqual(32);
    expect(first.url).toBe(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/app`);
    expect(first.withUrl).toBe('');
    expect(first.withDefault).toBe('28P01'); // invalid_password
  }, 120_000);

  it('uses the same password at the next start', () => {
    const before = fs.readFileSync(embeddedPasswordFile(dataDir), 'utf8');
    // This start also puts the directory back in its pre-fix state (superuser password "postgres").
    const again = step({ dataDir, port, production: false, resetToLegacy: true });
    expect(again).toMatchObject({ withUrl: '', withDefault: '28P01' });
    expect(fs.readFileSync(embeddedPasswordFile(dataDir), 'utf8')).toBe(before);
  }, 120_000);

  it('moves a data directory still on the old default password to a generated one', () => {
    fs.rmSync(embeddedPasswordFile(dataDir)); // as a directory made before passwords were generated
    const migrated = step({ dataDir, port, production: false });
    expect(migrated).toMatchObject({ withUrl: '', withDefault: '28P01' });
    const password = fs.readFileSync(embeddedPasswordFile(dataDir), 'utf8').trim();
    expect(password).not.toBe('postgres');
    expect(fs.statSync(embeddedPasswordFile(dataDir)).mode & 0o777).toBe(0o600);
    expect(migrated.url).toContain(encodeURIComponent(password));
  }, 120_000);

  it('refuses the embedded database when NODE_ENV=production unless EMBEDDED_DATABASE_IN_PRODUCTION=true', async () => {
    const fresh = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-prod-'));
    expect(step({ dataDir: fresh, port: await freePort(), production: true }).error).toMatch(
      /Refusing to start the embedded PostgreSQL with NODE_ENV=production: set DATABASE_URL .* EMBEDDED_DATABASE_IN_PRODUCTION=true/,
    );
    // Read from the environment when the caller does not say (scripts/start.js).
    expect(
      step({ dataDir: fresh, port: await freePort() }, { NODE_ENV: 'production', EMBEDDED_DATABASE_IN_PRODUCTION: '' })
        .error,
    ).toMatch(/EMBEDDED_DATABASE_IN_PRODUCTION/);
    expect(fs.existsSync(path.join(fresh, 'postgres'))).toBe(false);
    // Explicitly allowed: it starts.
    expect(step({ dataDir, port }, { NODE_ENV: 'production', EMBEDDED_DATABASE_IN_PRODUCTION: 'true' })).toMatchObject({
      withUrl: '',
      withDefault: '28P01',
    });
  }, 120_000);
});
