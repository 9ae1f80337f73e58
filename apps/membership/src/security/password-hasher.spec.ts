import * as argon2 from 'argon2';
import * as bcrypt from 'bcryptjs';
import { ARGON2_OPTIONS, HashQueueFull, HashSlots, PasswordHasher } from './password-hasher';

describe('PasswordHasher', () => {
  const hasher = new PasswordHasher();

  it('hashes with argon2id and OWASP parameters', async () => {
    const hash = await hasher.hash('correct horse');
    expect(hash).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
    expect(await hasher.verify(hash, 'correct horse')).toEqual({ ok: true, needsRehash: false });
    expect(await hasher.verify(hash, 'wrong horse')).toEqual({ ok: false, needsRehash: false });
  });

  it('verifies bcrypt hashes of the old system ($2a$ and Spring $2y$) and asks for a rehash', async () => {
    const legacy = bcrypt.hashSync('legacy-pass', 4);
    expect(await hasher.verify(legacy, 'legacy-pass')).toEqual({ ok: true, needsRehash: true });
    expect(await hasher.verify(legacy.replace(/^\$2[ab]\$/, '$2y$'), 'legacy-pass')).toEqual({
      ok: true,
      needsRehash: true,
    });
    expect(await hasher.verify(legacy, 'nope')).toEqual({ ok: false, needsRehash: false });
  });

  it('asks to rehash argon2 hashes made with weaker parameters', async () => {
    const weak = await argon2.hash('pw', { ...ARGON2_OPTIONS, memoryCost: 4096 });
    expect(await hasher.verify(weak, 'pw')).toEqual({ ok: true, needsRehash: true });
  });

  it("spends one real argon2 verification when there is no hash (unknown account), at the members' parameters", async () => {
    // The work is counted, not timed: one argon2id verification of a hash with the same parameters as
    // a member's costs what a wrong password costs (a timing comparison failed on a loaded machine).
    const real = await hasher.hash('some password');
    // The module object itself: the `import * as` namespace above has read-only bindings to it.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const verify = jest.spyOn(require('argon2') as typeof argon2, 'verify');
    try {
      expect(await hasher.verify(real, 'wrong password')).toEqual({ ok: false, needsRehash: false });
      expect(verify.mock.calls.map(([hash]) => hash)).toEqual([real]);
      verify.mockClear();
      for (const stored of [null, undefined, '', 'plaintext']) {
        expect(await hasher.verify(stored, 'wrong password')).toEqual({ ok: false, needsRehash: false });
        expect(verify).toHaveBeenCalledTimes(1);
        const [dummy] = verify.mock.calls[0];
        expect(dummy).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
        expect(dummy.replace(/\$[^$]*\$[^$]*$/, '')).toBe(real.replace(/\$[^$]*\$[^$]*$/, ''));
        verify.mockClear();
      }
    } finally {
      verify.mockRestore();
    }
  });

  it('fails garbage hashes without throwing', async () => {
    expect((await hasher.verify('plaintext', 'plaintext')).ok).toBe(false);
  });

  it('runs at most `limit` hashes at once, the others in turn', async () => {
    const slots = new HashSlots(2);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const job = (i: number) =>
      slots.run(async () => {
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 10));
        running--;
        order.push(i);
        if (i === 2) throw new Error('fails but frees its slot');
        return i;
      });
    const results = await Promise.allSettled([1, 2, 3, 4, 5].map(job));
    expect(most).toBe(2);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(order.sort()).toEqual([1, 2, 3, 4, 5]);
    expect(await slots.run(async () => 'free again')).toBe('free again');
  });
  it('bounds the queue: past maxWaiting a hash is refused at once (503, Retry-After) and the queue drains as before', async () => {
    const slots = new HashSlots(1, 2);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const held = [1, 2, 3].map((i) => slots.run(async () => (await gate, i)));
    const refused = await slots.run(async () => 'never').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HashQueueFull);
    expect((refused as HashQueueFull).getStatus()).toBe(503);
    expect((refused as HashQueueFull).extras.retryAfterSeconds).toBe(2);
    release();
    expect(await Promise.all(held)).toEqual([1, 2, 3]);
    expect(await slots.run(async () => 'room again')).toBe('room again');
  });

  it('takes a newcomer into a full queue by refusing the newest turn of an owner with two waiting', async () => {
    const slots = new HashSlots(1, 4);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const order: string[] = [];
    const job = (label: string, owner: string) =>
      slots.run(async () => {
        order.push(label);
        await gate;
        return label;
      }, owner);
    const running = job('x0', 'x');
    // Two addresses fill the queue, two turns each.
    const [x1, x2, y1, y2] = [job('x1', 'x'), job('x2', 'x'), job('y1', 'y'), job('y2', 'y')];
    expect(slots.queued).toBe(4);
    // A newcomer: the newest turn of the first owner with two waiting makes room (503 for it), not the newcomer.
    const z1 = job('z1', 'z');
    await expect(x2).rejects.toBeInstanceOf(HashQueueFull);
    const w1 = job('w1', 'w');
    await expect(y2).rejects.toBeInstanceOf(HashQueueFull);
    expect(slots.queued).toBe(4);
    // Every owner has one waiting now: a fifth address is refused, as the queue is full and fair.
    await expect(job('v1', 'v')).rejects.toBeInstanceOf(HashQueueFull);
    release();
    expect(await Promise.all([running, x1, y1, z1, w1])).toEqual(['x0', 'x1', 'y1', 'z1', 'w1']);
    expect(order).toEqual(['x0', 'x1', 'y1', 'z1', 'w1']);
    expect(slots.queued).toBe(0);
  });

  it('shares turns out by owner: one address has at most two waiting, and waiting owners are served in turn', async () => {
    const slots = new HashSlots(1, 16);
    const gates: Array<() => void> = [];
    const order: string[] = [];
    const job = (label: string, owner?: string) =>
      slots.run(async () => {
        order.push(label);
        await new Promise<void>((r) => gates.push(r));
        return label;
      }, owner);
    const running = job('a0', 'attacker');
    const attacker = [job('a1', 'attacker'), job('a2', 'attacker')];
    // The attacker's burst: past two waiting, its own are refused; the queue keeps room for others.
    const burst = await Promise.allSettled(Array.from({ length: 17 }, (_, i) => job(`a${i + 3}`, 'attacker')));
    expect(burst.every((r) => r.status === 'rejected' && r.reason instanceof HashQueueFull)).toBe(true);
    const member = job('m1', 'member');
    const another = job('o1'); // no owner: an owner of its own
    expect(slots.queued).toBe(4);
    // Served in turn: attacker, member, the ownerless one, then the attacker's second.
    while (order.length < 5) {
      await new Promise((r) => setImmediate(r));
      gates.shift()?.();
    }
    expect(order).toEqual(['a0', 'a1', 'm1', 'o1', 'a2']);
    gates.forEach((g) => g());
    expect(await Promise.all([running, ...attacker, member, another])).toEqual(['a0', 'a1', 'a2', 'm1', 'o1']);
    expect(slots.queued).toBe(0);
    expect(await slots.run(async () => 'free again', 'attacker')).toBe('free again');
  });

  it('answers an unknown account like a known one while the queue is full (no faster 401 for unknown accounts)', async () => {
    const busy = new PasswordHasher();
    const known = await busy.hash('secret-password');
    const full = jest.spyOn(HashSlots.prototype, 'run').mockRejectedValue(new HashQueueFull());
    try {
      await expect(busy.verify(known, 'secret-password')).rejects.toBeInstanceOf(HashQueueFull);
      await expect(busy.verify(null, 'secret-password')).rejects.toBeInstanceOf(HashQueueFull);
    } finally {
      full.mockRestore();
    }
    // Once there is room, unknown accounts are checked (and fail) as before: the refusal was not kept.
    expect(await busy.verify(null, 'secret-password')).toEqual({ ok: false, needsRehash: false });
  });
});
