import { Injectable } from '@nestjs/common';
import * as argon2 from 'argon2';
import * as bcrypt from 'bcryptjs';
import * as os from 'os';
import { BusinessException, ErrorCode, msg } from '@app/envelope';

/** OWASP Password Storage Cheat Sheet: argon2id, m=19 MiB, t=2, p=1. */
export const ARGON2_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

/** Hashes one owner (a client address) may have waiting at once. */
export const MAX_WAITING_HASHES_PER_OWNER = 2;

/**
 * At most `limit` hashes run at once; the others wait their turn. argon2 runs on libuv's 4 threads:
 * on a 2-core machine 4 parallel hashes took both cores and profile reads waited behind a login flood.
 * Leaving one core to the event loop keeps the server responsive. At most `maxWaiting` wait: past that
 * a sign-in is answered 503 with Retry-After at once, instead of an unbounded queue (logins from many
 * addresses, each within its own limit) in which every member's sign-in waits minutes.
 *
 * Turns are shared out by owner (the caller's address for sign-ins): an owner has at most
 * `maxWaitingPerOwner` waiting (more are 503 for that owner alone), and owners are served in turn, one
 * hash each, not in arrival order. One address's allowed burst (20 sign-ins) filled the whole queue of a
 * 2-core replica, so other members' sign-ins were refused or waited behind it (the audit). A full queue
 * still takes a newcomer while another owner has two waiting (makeRoomFor). A hash asked without an owner
 * is an owner of its own.
 */
/** A hash waiting for its slot: started at its turn, or refused to make room (makeRoomFor). */
interface Turn {
  start: () => void;
  refuse: (e: Error) => void;
}

export class HashSlots {
  private active = 0;
  private waiting = 0;
  /** Each owner's waiting turns, owners in the order they are served (one served goes to the back). */
  private readonly queues = new Map<unknown, Turn[]>();

  constructor(
    readonly limit: number,
    readonly maxWaiting = limit * 16,
    readonly maxWaitingPerOwner = MAX_WAITING_HASHES_PER_OWNER,
  ) {}

  async run<T>(work: () => Promise<T>, owner: unknown = Symbol('hash')): Promise<T> {
    if (this.active < this.limit) this.active++;
    else {
      const queue = this.queues.get(owner);
      const own = queue?.length ?? 0;
      if (own >= this.maxWaitingPerOwner) throw new HashQueueFull();
      if (this.waiting >= this.maxWaiting && !this.makeRoomFor(own)) throw new HashQueueFull();
      this.waiting++;
      // The slot is handed over (handOver): `active` stays as it is.
      await new Promise<void>((start, refuse) =>
        queue ? queue.push({ start, refuse }) : this.queues.set(owner, [{ start, refuse }]),
      );
    }
    try {
      return await work();
    } finally {
      this.handOver();
    }
  }

  /** Turns waiting, all owners together (read by tests). */
  get queued(): number {
    return this.waiting;
  }

  /**
   * A full queue still takes an owner with fewer turns waiting than another has, less one: that other owner's
   * newest turn is refused (503) to make room. So owners that fill the queue two turns each do not shut out a
   * newcomer; each keeps one.
   */
  private makeRoomFor(own: number): boolean {
    let longest: Turn[] | undefined;
    let longestOwner: unknown;
    for (const [owner, queue] of this.queues)
      if (!longest || queue.length > longest.length) [longest, longestOwner] = [queue, owner];
    if (!longest || longest.length <= own + 1) return false;
    longest.pop()!.refuse(new HashQueueFull());
    if (longest.length === 0) this.queues.delete(longestOwner);
    this.waiting--;
    return true;
  }

  /** Gives the freed slot to the owner first in turn; that owner goes to the back with what it has left. */
  private handOver(): void {
    const first = this.queues.entries().next();
    if (first.done) {
      this.active--;
      return;
    }
    const [owner, queue] = first.value;
    this.queues.delete(owner);
    const next = queue.shift()!;
    if (queue.length) this.queues.set(owner, queue);
    this.waiting--;
    next.start();
  }
}

/** Every hash slot busy and the queue full: 503, retry in a few seconds. */
export class HashQueueFull extends BusinessException {
  constructor() {
    super(ErrorCode.SERVICE_UNAVAILABLE, msg('auth.passwordCheckBusy'), { retryAfterSeconds: 2 });
  }
}

const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;

const BCRYPT_PREFIX = /^\$2[abxy]\$\d\d\$/;

export interface PasswordCheck {
  ok: boolean;
  /** The stored hash is bcrypt (imported) or weaker argon2 parameters: store a fresh hash now. */
  needsRehash: boolean;
}

/** Hashes with argon2id; also verifies bcrypt hashes imported from the old Java system. */
@Injectable()
export class PasswordHasher {
  // Verified when no account matches, so unknown accounts cost the same time as wrong passwords.
  private dummyHash?: Promise<string>;
  private readonly slots = new HashSlots(Math.max(1, cores - 1));

  /** `owner`: whose turn it is (HashSlots), the caller's address where a stranger can ask. */
  hash(password: string, owner?: string): Promise<string> {
    return this.slots.run(() => argon2.hash(password, ARGON2_OPTIONS), owner);
  }

  async verify(stored: string | null | undefined, password: string, owner?: string): Promise<PasswordCheck> {
    if (!stored) {
      await this.burn(password, owner);
      return { ok: false, needsRehash: false };
    }
    if (BCRYPT_PREFIX.test(stored)) {
      // bcryptjs works on the event loop (in slices): a flood of logins to imported accounts takes turns too.
      const ok = await this.slots.run(() => bcrypt.compare(password, stored.replace(/^\$2y\$/, '$2b$')), owner);
      return { ok, needsRehash: ok };
    }
    if (stored.startsWith('$argon2')) {
      let ok = false;
      try {
        ok = await this.slots.run(() => argon2.verify(stored, password), owner);
      } catch (e) {
        if (e instanceof HashQueueFull) throw e;
        ok = false;
      }
      return { ok, needsRehash: ok && argon2.needsRehash(stored, ARGON2_OPTIONS) };
    }
    await this.burn(password, owner);
    return { ok: false, needsRehash: false };
  }

  /** Spends the time of one real verification and always fails. */
  async burn(password: string, owner?: string): Promise<void> {
    // Made once; a refusal (full queue) is not kept, or every later unknown account would be refused with it.
    this.dummyHash ??= this.hash('dummy-password-for-unknown-accounts').catch((e: unknown) => {
      this.dummyHash = undefined;
      throw e;
    });
    const dummy = await this.dummyHash;
    // A full queue answers an unknown account as it answers a known one (503), never faster with a 401.
    await this.slots
      .run(() => argon2.verify(dummy, password), owner)
      .catch((e: unknown) => {
        if (e instanceof HashQueueFull) throw e;
        return false;
      });
  }
}
