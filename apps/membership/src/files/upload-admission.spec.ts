import { EventEmitter } from 'events';
import { NEVER, Observable, of } from 'rxjs';
import type { ExecutionContext } from '@nestjs/common';
import type { MembershipConfig } from '../config/membership.config';
import type { FilesRepository } from './files.repository';
import { FakeClock } from '../../../../test/support/clock';
import {
  UploadAdmission,
  UPLOAD_MIN_BYTES_PER_SECOND,
  UPLOAD_RATE_GRACE_MS,
  UPLOADS_IN_FLIGHT_PER_MEMBER,
  UPLOADS_IN_FLIGHT_PER_NETWORK,
  UPLOADS_IN_FLIGHT_PER_REPLICA,
} from './upload-admission';

function admission(clock = new FakeClock()) {
  const files = { usedBytes: () => Promise.resolve(0) } as unknown as FilesRepository;
  const config = { UPLOAD_MAX_BYTES_PER_MEMBER: 1_000_000, RATE_LIMIT_IPV6_PREFIX: 64 } as MembershipConfig;
  return new UploadAdmission(files, config, clock);
}

/**
 * An upload request of `member` from `ip` and its response; `gone`: the client left before admission;
 * `counted`: its connection counts the bytes it reads (`socket.bytesRead`, moved by the test).
 */
function call(member: string, { gone = false, ip = '203.0.113.1', counted = false } = {}) {
  const headers: Record<string, string> = {};
  const res = Object.assign(new EventEmitter(), {
    closed: gone,
    destroyed: gone,
    headersSent: false,
    headers,
    setHeader: (name: string, value: string) => (headers[name.toLowerCase()] = value),
  });
  const socket = { destroyed: gone, bytesRead: counted ? 1_000 : undefined, destroy: () => (socket.destroyed = true) };
  const req = { principal: { id: member }, ip, headers: { 'content-length': '1000' }, socket, complete: false };
  const context = {
    switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }),
  } as unknown as ExecutionContext;
  return { req, res, socket, context };
}

const next = { handle: () => of('stored') };
/** A handler still receiving the body (multer has not called back). */
const receiving = { handle: () => NEVER };
/** Lets the rate check that a clock move woke run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Subscribes to an admitted upload's answer; `error` is what it ended with, if it did. */
function watch(answer: Observable<unknown>) {
  const seen: { error?: unknown } = {};
  answer.subscribe({ error: (e: unknown) => (seen.error = e) });
  return seen;
}

describe('UploadAdmission', () => {
  it("holds a member's slots while their uploads run and gives them back when the responses close", async () => {
    const a = admission();
    const calls = Array.from({ length: UPLOADS_IN_FLIGHT_PER_MEMBER }, () => call('m1'));
    for (const c of calls) await a.intercept(c.context, next);
    expect(a.inFlight).toBe(UPLOADS_IN_FLIGHT_PER_MEMBER);
    await expect(a.intercept(call('m1').context, next)).rejects.toMatchObject({ code: 429 });
    await a.intercept(call('m2', { ip: '203.0.113.2' }).context, next); // another member has slots of its own
    calls[0].res.emit('finish');
    calls[0].res.emit('close'); // both events: released once
    expect(a.inFlight).toBe(UPLOADS_IN_FLIGHT_PER_MEMBER);
    await a.intercept(call('m1').context, next);
  });

  it('gives the slot back at once when the client left before the upload was admitted (its close came first)', async () => {
    const a = admission();
    for (let i = 0; i < 5; i++)
      await expect(a.intercept(call('m1', { gone: true }).context, next)).rejects.toBeDefined();
    expect(a.inFlight).toBe(0);
    await a.intercept(call('m1').context, next);
    expect(a.inFlight).toBe(1);
  });

  it("one network holds at most its share of the replica's slots, whatever accounts it uses", async () => {
    const a = admission();
    const held: ReturnType<typeof call>[] = [];
    for (let i = 0; held.length < UPLOADS_IN_FLIGHT_PER_NETWORK; i++)
      for (let j = 0; j < UPLOADS_IN_FLIGHT_PER_MEMBER && held.length < UPLOADS_IN_FLIGHT_PER_NETWORK; j++) {
        const c = call(`free${i}`, { ip: '198.51.100.7' });
        await a.intercept(c.context, next);
        held.push(c);
      }
    // A fresh account of the same address, and the same address mapped into IPv6: its share is taken.
    await expect(a.intercept(call('free-new', { ip: '198.51.100.7' }).context, next)).rejects.toMatchObject({
      code: 429,
      extras: { retryAfterSeconds: 1 },
      text: { key: 'files.uploadsFromNetwork' },
    });
    await expect(a.intercept(call('free-new', { ip: '::ffff:198.51.100.7' }).context, next)).rejects.toMatchObject({
      code: 429,
    });
    // Another address is admitted.
    await a.intercept(call('other', { ip: '198.51.100.8' }).context, next);
    // One answer out frees a place of that network.
    held[0].res.emit('finish');
    await a.intercept(call('free-new', { ip: '198.51.100.7' }).context, next);
    expect(a.inFlight).toBe(UPLOADS_IN_FLIGHT_PER_NETWORK + 1);
  });

  it('counts an IPv6 client by its /64: addresses of one /64 share, another /64 has its own share', async () => {
    const a = admission();
    for (let i = 0; i < UPLOADS_IN_FLIGHT_PER_NETWORK; i++)
      await a.intercept(call(`v6-${i}`, { ip: `2001:db8:1:2::${i + 1}` }).context, next);
    await expect(
      a.intercept(call('v6-rotated', { ip: '2001:db8:1:2:ffff:ffff:ffff:ffff' }).context, next),
    ).rejects.toMatchObject({ code: 429 });
    await a.intercept(call('v6-neighbour', { ip: '2001:db8:1:3::1' }).context, next);
  });

  it('the replica takes at most its slots from many networks (503)', async () => {
    const a = admission();
    for (let i = 0; i < UPLOADS_IN_FLIGHT_PER_REPLICA; i++)
      await a.intercept(call(`m${i}`, { ip: `192.0.2.${i + 1}` }).context, next);
    await expect(a.intercept(call('late', { ip: '192.0.2.200' }).context, next)).rejects.toMatchObject({
      code: 503,
    });
  });

  it('cuts an upload whose body trickles below the floor after the grace (408) and gives its slot back', async () => {
    const clock = new FakeClock();
    const a = admission(clock);
    const slow = call('slow', { counted: true });
    const slowAnswer = watch(await a.intercept(slow.context, receiving));
    const steady = call('steady', { counted: true, ip: '203.0.113.9' });
    const steadyAnswer = watch(await a.intercept(steady.context, receiving));
    // Ten seconds: the slow one sends a little under the floor, the steady one a little over it.
    for (let s = 0; s < UPLOAD_RATE_GRACE_MS / 1000; s++) {
      slow.socket.bytesRead! += UPLOAD_MIN_BYTES_PER_SECOND - 512;
      steady.socket.bytesRead! += UPLOAD_MIN_BYTES_PER_SECOND + 512;
      clock.advance(1000);
      await settle();
    }
    expect(slowAnswer.error).toMatchObject({
      code: 408,
      text: { key: 'files.uploadTooSlow', params: { rate: UPLOAD_MIN_BYTES_PER_SECOND / 1024 } },
    });
    expect(slow.res.headers.connection).toBe('close');
    expect(steadyAnswer.error).toBeUndefined();
    expect(a.inFlight).toBe(1);
    // Its connection goes once the 408 is out.
    slow.res.emit('finish');
    expect(slow.socket.destroyed).toBe(true);
    // The steady one stalls: cut once its average falls under the floor.
    clock.advance(1000);
    await settle();
    expect(steadyAnswer.error).toMatchObject({ code: 408 });
    expect(a.inFlight).toBe(0);
  });

  it('does not judge an upload inside its grace, nor once its whole body is here (storing is the server time)', async () => {
    const clock = new FakeClock();
    const a = admission(clock);
    const early = call('early', { counted: true });
    const earlyAnswer = watch(await a.intercept(early.context, receiving));
    clock.advance(UPLOAD_RATE_GRACE_MS - 1000);
    await settle();
    expect(earlyAnswer.error).toBeUndefined();
    early.socket.bytesRead! += 200_000;
    early.req.complete = true; // the whole body received; the file is being stored
    clock.advance(60_000);
    await settle();
    expect(earlyAnswer.error).toBeUndefined();
    expect(a.inFlight).toBe(1);
  });
});
