import type { AbortSource } from '@app/llm';
import type { RateLimits } from '../limits/rate-limits';
import type { CallOutcome } from '../usage/metering.service';
import type { CallTimer } from './call-timer';

/**
 * The client facts of one proxied call, read once at the HTTP edge (http/call-answer.ts: callContextOf):
 * what a use case needs of its request without touching it.
 */
export interface CallContext {
  /** The request id (X-Request-Id, or the one the edge gave), for the ledger. */
  requestId: string | null;
  /** Aborted when the client leaves before its answer finished: aborts the upstream call. */
  clientGone: AbortSource;
  /** Whether the answer is still being written: a call that ends without settling stops renewing its hold. */
  alive: () => boolean;
  /** The gateway's time on this call, upstream waits excluded (X-Gateway-Overhead-Ms). */
  timer: CallTimer;
  /** The call's x-ratelimit-* values: its admission adds the tighter token windows. */
  rateLimits: RateLimits;
}

/** A finished call's JSON answer: the body, the headers of its head ([name, value, ...]), and its settlement. */
export interface JsonAnswer<T = unknown> {
  kind: 'json';
  body: T;
  /**
   * `body` already serialized (a large answer built with turns given to the event loop): written as it is,
   * a text or its UTF-8 bytes in pieces (written one after the other, never joined into one string).
   */
  text?: string | readonly Buffer[];
  headers: string[];
  /** Settles once the call's use is charged; a call without a held budget is charged while its answer goes out. */
  settled: Promise<void>;
  /** Gives back memory `text` is a view of (the embeddings worker's buffer): called once the answer is written or cut. */
  release?: () => void;
  /**
   * Gives back only what the call holds against its key's share (KeyBytes), leaving `release` the rest: called when
   * the answer waits behind another on a pipelined connection, which may be a call of the same key waiting for it.
   */
  releaseShare?: () => void;
}

/** A streamed call: the headers of its head, its events in order (`[DONE]` included), and its settlement. */
export interface EventStreamAnswer {
  kind: 'stream';
  headers: Record<string, string>;
  events: AsyncIterable<unknown>;
  /** Settles with how the call ended once its use is charged (before the closing events are produced). */
  settled: Promise<CallOutcome['status']>;
}

export type CallAnswer<T = unknown> = JsonAnswer<T> | EventStreamAnswer;
