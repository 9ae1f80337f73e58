import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { developmentJwtSecret } from './membership.app';

describe('developmentJwtSecret (DATA_DIR/jwt-secret)', () => {
  const dirs: string[] = [];
  const dataDir = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'jwt-secret-'));
    dirs.push(d);
    return d;
  };
  afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

  it('is made once (mode 0600) and read back by every later start; no temporary file is left', () => {
    const dir = dataDir();
    const first = developmentJwtSecret(dir);
    expect(first).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(developmentJwtSecret(dir)).toBe(first);
    expect(fs.statSync(path.join(dir, 'jwt-secret')).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir)).toEqual(['jwt-secret']);
  });

  it('replaces an empty file left by a start stopped while writing it (every later start failed on it)', () => {
    const dir = dataDir();
    fs.writeFileSync(path.join(dir, 'jwt-secret'), '');
    const secret = developmentJwtSecret(dir);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(fs.readFileSync(path.join(dir, 'jwt-secret'), 'utf8')).toBe(secret);
    expect(developmentJwtSecret(dir)).toBe(secret);
  });

  it('keeps a secret an operator wrote (surrounding whitespace trimmed)', () => {
    const dir = dataDir();
    fs.writeFileSync(path.join(dir, 'jwt-secret'), 'my-own-development-secret\n');
    expect(developmentJwtSecret(dir)).toBe('my-own-development-secret');
  });

  it('makes DATA_DIR when it does not exist', () => {
    const dir = path.join(dataDir(), 'nested', 'data');
    expect(developmentJwtSecret(dir)).toBe(fs.readFileSync(path.join(dir, 'jwt-secret'), 'utf8'));
  });
});
