import * as argon2 from 'argon2';
import * as bcrypt from 'bcryptjs';
import { ARGON2_OPTIONS, PasswordHasher } from './password-hasher';

describe('PasswordHasher', () => {
  const hasher = new PasswordHasher();

  it('hashes with argon2id and OWASP parameters', async () => {
    const hash = await hasher.hash('correct horse');
    expect(hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await hasher.verify(hash, 'correct horse')).toEqual({ ok: true, needsRehash: false });
    expect(await hasher.verify(hash, 'wrong horse')).toEqual({ ok: false, needsRehash: false });
  });

  it('verifies bcrypt hashes of the old system ($2a$ and Spring $2y$) and asks for a rehash', async () => {
    const legacy = bcrypt.hashSync('legacy-pass', 4);
    expect(await hasher.verify(legacy, 'legacy-pass')).toEqual({ ok: true, needsRehash: true });
    expect(await hasher.verify(legacy.replace(/^\$2[ab]\$/, '$2y$'), 'legacy-pass')).toEqual({ ok: true, needsRehash: true });
    expect(await hasher.verify(legacy, 'nope')).toEqual({ ok: false, needsRehash: false });
  });

  it('asks to rehash argon2 hashes made with weaker parameters', async () => {
    const weak = await argon2.hash('pw', { ...ARGON2_OPTIONS, memoryCost: 4096 });
    expect(await hasher.verify(weak, 'pw')).toEqual({ ok: true, needsRehash: true });
  });

  it('spends a real argon2 verification when there is no hash (unknown account)', async () => {
    const spy = jest.spyOn(argon2, 'verify');
    expect(await hasher.verify(null, 'whatever')).toEqual({ ok: false, needsRehash: false });
    expect(spy).toHaveBeenCalledTimes(1);
    spy.mockRestore();
  });

  it('fails garbage hashes without throwing', async () => {
    expect((await hasher.verify('plaintext', 'plaintext')).ok).toBe(false);
  });
});
