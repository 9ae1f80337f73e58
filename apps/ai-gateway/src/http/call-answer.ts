import type { Request, Response } from 'express';
import { queuedOn } from '@app/platform';
import { CallTimer, OVERHEAD_HEADER } from './call-timer';
import type { CallAnswer, CallContext } from './call-context';
import { callTimingOf } from './gateway-timing';
import { sendJson } from './json-response';
import { rateLimitsOf } from './rate-limit-headers';
import { requestIdOf } from './request-id';
import { clientGone, SseResponse } from './sse-response';

/** The call's client facts, read once from its request and response; `endpoint` labels its overhead metric. */
export function callContextOf(req: Request, res: Response, endpoint: string): CallContext {
  return {
    requestId: requestIdOf(req) ?? null,
    clientGone: clientGone(res),
    alive: () => !res.writableFinished && !res.destroyed,
    timer: new CallTimer(callTimingOf(req), endpoint),
    rateLimits: rateLimitsOf(req),
  };
}

/**
 * Runs a use case with its call's context and writes its answer: JSON in one write, or an event stream
 * (SseResponse: back-pressure, the stall cut after `stallMs`). A client that stopped taking the stream
 * aborts the call (clientGone), which the use case settles as aborted. A failure leaves with the overhead
 * header for the error filter to answer.
 */
export async function answerCall(
  req: Request,
  res: Response,
  endpoint: string,
  stallMs: number,
  run: (ctx: CallContext) => Promise<CallAnswer>,
): Promise<void> {
  const ctx = callContextOf(req, res, endpoint);
  let answer: CallAnswer;
  try {
    answer = await run(ctx);
  } catch (e) {
    if (!res.headersSent) res.setHeader(OVERHEAD_HEADER, ctx.timer.overheadMs());
    throw e;
  }
  if (answer.kind === 'json') {
    // Queued behind another answer of its connection (pipelining): what the call holds against its key's share is
    // given back now, as the answer before it may be one of the same key's calls waiting for that share.
    if (answer.releaseShare && queuedOn(res)) answer.releaseShare();
    if (answer.release) releaseWhenSent(res, answer.release);
    sendJson(res, 200, answer.body, answer.headers, answer.text, stallMs);
    await answer.settled;
    return;
  }
  const sse = new SseResponse(res, stallMs);
  sse.open(answer.headers);
  try {
    for await (const event of answer.events) {
      await sse.data(event);
      if (sse.closed) ctx.clientGone.abort();
    }
  } finally {
    sse.end();
  }
}

/**
 * Calls `release` once `res` is sent whole ('close' comes after 'finish', when the socket has taken every byte) or
 * its connection is gone (a closed socket writes nothing more). An answer queued behind another on a pipelined
 * connection gets no 'close' of its own when that connection closes (queuedOn): its connection is listened to as
 * well, or the memory it is written from would be held for the life of the process.
 */
export function releaseWhenSent(res: Response, release: () => void): void {
  const connection = queuedOn(res);
  const done = () => {
    res.off('close', done);
    connection?.off('close', done);
    release();
  };
  res.once('close', done);
  connection?.once('close', done);
  // Gone already: a queued answer whose connection closed before now gets no 'close' at all.
  if (res.destroyed || (connection as { destroyed?: boolean } | undefined)?.destroyed) done();
}
