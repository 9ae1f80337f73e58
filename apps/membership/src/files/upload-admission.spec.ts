import { EventEmitter } from 'events';
import { of } from 'rxjs';
import type { ExecutionContext } from '@nestjs/common';
import type { MembershipConfig } from '../config/membership.config';
import type { FilesRepository } from './files.repository';
import { UploadAdmission, UPLOADS_IN_FLIGHT_PER_MEMBER } from './upload-admission';

function admission() {
  const files = { usedBytes: () => Promise.resolve(0) } as unknown as FilesRepository;
  const config = { UPLOAD_MAX_BYTES_PER_MEMBER: 1_000_000 } as MembershipConfig;
  return new UploadAdmission(files, config);
}

/** An upload request of `member` and its response; `gone`: the client left before admission. */
function call(member: string, gone = false) {
  const res = Object.assign(new EventEmitter(), { closed: gone, destroyed: gone });
  const req = { principal: { id: member }, headers: { 'content-length': '1000' }, socket: { destroyed: gone } };
  const context = {
    switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }),
  } as unknown as ExecutionContext;
  return { res, context };
}

const next = { handle: () => of('stored') };

describe('UploadAdmission', () => {
  it("holds a member's slots while their uploads run and gives them back when the responses close", async () => {
    const a = admission();
    const calls = Array.from({ length: UPLOADS_IN_FLIGHT_PER_MEMBER }, () => call('m1'));
    for (const c of calls) await a.intercept(c.context, next);
    expect(a.inFlight).toBe(UPLOADS_IN_FLIGHT_PER_MEMBER);
    await expect(a.intercept(call('m1').context, next)).rejects.toMatchObject({ code: 429 });
    await a.intercept(call('m2').context, next); // another member has slots of its own
    calls[0].res.emit('finish');
    calls[0].res.emit('close'); // both events: released once
    expect(a.inFlight).toBe(UPLOADS_IN_FLIGHT_PER_MEMBER);
    await a.intercept(call('m1').context, next);
  });

  it('gives the slot back at once when the client left before the upload was admitted (its close came first)', async () => {
    const a = admission();
    for (let i = 0; i < 5; i++) await expect(a.intercept(call('m1', true).context, next)).rejects.toBeDefined();
    expect(a.inFlight).toBe(0);
    await a.intercept(call('m1').context, next);
    expect(a.inFlight).toBe(1);
  });
});
