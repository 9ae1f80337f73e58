import { CallAbortedError, UpstreamError } from '@app/llm';
import { callContext } from '../../../../test/ai-gateway/use-case-fixtures';
import type { CallOutcome, Reservation } from './metering.service';
import { meteredUpstreamCall } from './metered-upstream-call';

describe('meteredUpstreamCall', () => {
  const reservation: Reservation = { keyId: 'k1', share: 'k1', admitted: null, settled: false, startedAt: 0 };
  const facts = { endpoint: 'chat.completions', model: 'm' };
  let settled: Array<[Reservation, CallOutcome]>;
  const metering = { settle: async (r: Reservation, o: CallOutcome) => void settled.push([r, o]) };
  beforeEach(() => (settled = []));

  it('returns what the upstream answered and leaves the settlement to the use case', async () => {
    const value = await meteredUpstreamCall(metering, reservation, callContext('r1', 'chat.completions'), facts, () =>
      Promise.resolve({ deployment: 'd1', value: 42 }),
    );
    expect(value).toEqual({ deployment: 'd1', value: 42 });
    expect(settled).toEqual([]);
  });

  it('settles a failed upstream at cost 0 with the status and message the client gets, naming the deployment, and rethrows', async () => {
    const failure = new UpstreamError('boom', 'http', 502).withDeployment('d2');
    await expect(
      meteredUpstreamCall(metering, reservation, callContext('r2', 'chat.completions'), facts, () =>
        Promise.reject(failure),
      ),
    ).rejects.toBe(failure);
    expect(settled).toHaveLength(1);
    expect(settled[0][0]).toBe(reservation);
    expect(settled[0][1]).toEqual({
      endpoint: 'chat.completions',
      model: 'm',
      provider: 'd2',
      status: 'failed',
      costYuan: 0,
      httpStatus: 502,
      error: 'Upstream d2 failed: boom',
      requestId: 'r2',
    });
  });

  it('settles a call the client left as aborted', async () => {
    await expect(
      meteredUpstreamCall(metering, reservation, callContext('r3', 'embeddings'), facts, () =>
        Promise.reject(new CallAbortedError()),
      ),
    ).rejects.toBeInstanceOf(CallAbortedError);
    expect(settled.map(([, o]) => [o.status, o.provider, o.costYuan])).toEqual([['aborted', null, 0]]);
  });
});
