import { CallAbortedError, CallOptions } from '@app/llm';
import { openAiErrorBody } from '../errors';
import type { CallContext } from '../http/call-context';
import { failedDeployment, toGatewayError } from '../upstreams/upstream-errors';
import type { MeteringService, Reservation } from './metering.service';

/** What the ledger says of a call whichever way it ends: its endpoint name and public model. */
export interface LedgerFacts {
  endpoint: string;
  model: string;
}

/**
 * The upstream part of a metered text call, done one way by chat, completions and embeddings: the wait
 * is timed apart from the gateway's own time (X-Gateway-Overhead-Ms, http/call-timer.ts), and a failure
 * is settled before it is rethrown, at cost 0: `aborted` when the client left, else `failed` with the
 * status and message the client is answered with. `call` gets the options every upstream call of the caller
 * carries: the client's leaving aborts it, and `key` is whose failures and connections it counts against (the
 * router's cooldowns, the pool's shares): the key's project for a key in one, else the key (Reservation.share).
 */
export async function meteredUpstreamCall<T>(
  metering: Pick<MeteringService, 'settle'>,
  reservation: Reservation,
  ctx: CallContext,
  facts: LedgerFacts,
  call: (opts: CallOptions) => Promise<T>,
): Promise<T> {
  ctx.timer.upstreamStarted();
  let value: T;
  try {
    value = await call({ signal: ctx.clientGone.signal, key: reservation.share });
  } catch (e) {
    ctx.timer.upstreamDone();
    const mapped = openAiErrorBody(toGatewayError(e));
    await metering.settle(reservation, {
      ...facts,
      provider: failedDeployment(e),
      status: e instanceof CallAbortedError ? 'aborted' : 'failed',
      costYuan: 0,
      httpStatus: mapped.status,
      error: mapped.body.error.message,
      requestId: ctx.requestId,
    });
    throw e;
  }
  ctx.timer.upstreamDone();
  return value;
}
