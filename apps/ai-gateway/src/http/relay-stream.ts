import { OpenAiErrorBody, openAiErrorBody } from '../errors';
import { AbortSource, CallAbortedError, Usage } from '@app/llm';
import type { CallOutcome } from '../usage/metering.service';
import { toGatewayError } from '../upstreams/upstream-errors';

/** An upstream stream chunk: usage may ride on any chunk, choices carry what was generated. */
export interface RelayedChunk {
  usage?: Usage | null;
  choices?: unknown;
}

/** What one endpoint adds to relaying an upstream stream (chat, text completions, the Responses API's shape). */
export interface StreamRelay<C extends RelayedChunk> {
  /** The caller asked for usage chunks (stream_options.include_usage): usage-only chunks are forwarded. */
  wantsUsage: boolean;
  /** Stream events for one forwarded chunk (its choices always an array). */
  events(chunk: C & { choices: unknown[] }): unknown[];
  /** Text one forwarded choice generated, counted when the upstream sent no usage. */
  generated(choice: unknown): string;
  /** The usage to meter: the upstream's when it came, else our own count of the prompt and `delivered`. */
  usage(upstream: Usage | undefined, delivered: string): Promise<Usage>;
  /** Closing events, given the usage that is metered (may wait: the Responses API stores the response). */
  end(usage: Usage): unknown[] | Promise<unknown[]>;
  /** Events for a failure after the stream started. */
  failed(error: OpenAiErrorBody['error']): unknown[];
  /** Settles the call's reservation and writes its ledger entry. */
  settle(status: CallOutcome['status'], usage: Usage, error?: string): Promise<void>;
}

/** A relayed stream: its events for the client, and how the call ended once it settled. */
export interface RelayedEvents {
  events: AsyncIterable<unknown>;
  settled: Promise<CallOutcome['status']>;
}

/**
 * Relays an upstream stream as the client's events, chunk by chunk (pulled: the transport takes the next
 * once it wrote the last, so back-pressure reaches the upstream), and settles the call. The call is
 * settled *before* the closing events ([DONE], the error event) are produced: a client that has read
 * the whole stream sees its budget already charged and its hold released (a next call, or a balance
 * read, never races the settlement). A client that left (`gone` aborted, by the transport or the
 * socket's close) is billed what was delivered to it.
 */
export function relayEvents<C extends RelayedChunk>(
  gone: AbortSource,
  upstream: AsyncIterable<C>,
  relay: StreamRelay<C>,
): RelayedEvents {
  let settle!: (status: CallOutcome['status']) => void;
  let fail!: (e: unknown) => void;
  const settled = new Promise<CallOutcome['status']>((resolve, reject) => ((settle = resolve), (fail = reject)));
  // Nobody may wait for it (a client that left); a settlement failure still reaches the transport through the events.
  settled.catch(() => undefined);
  let delivered = '';
  let settledOnce = false;
  async function* relayed(): AsyncGenerator<unknown> {
    let upstreamUsage: Usage | undefined;
    let status: CallOutcome['status'] = 'ok';
    let failure: OpenAiErrorBody['error'] | undefined;
    try {
      for await (const chunk of upstream) {
        if (chunk.usage) upstreamUsage = chunk.usage;
        const forward = { ...chunk, choices: Array.isArray(chunk.choices) ? (chunk.choices as unknown[]) : [] };
        if (!relay.wantsUsage) {
          delete forward.usage;
          if (forward.choices.length === 0) continue;
        }
        for (const event of relay.events(forward)) yield event;
        if (gone.aborted) throw new CallAbortedError();
        // Forwarded as it came (tool_calls deltas included, never reassembled); counted for the fallback usage.
        for (const c of forward.choices) delivered += relay.generated(c);
      }
    } catch (e) {
      if (e instanceof CallAbortedError || gone.aborted) {
        // The client left: the upstream was aborted through the signal; bill what was delivered.
        status = 'aborted';
        upstreamUsage = undefined;
      } else {
        status = 'failed';
        failure = openAiErrorBody(toGatewayError(e)).body.error;
      }
    }
    try {
      settledOnce = true;
      const usage = await relay.usage(upstreamUsage, delivered);
      await relay.settle(status, usage, failure?.message);
      settle(status);
      if (status === 'ok') {
        let closing: unknown[];
        try {
          closing = await relay.end(usage);
        } catch (e) {
          closing = relay.failed(openAiErrorBody(toGatewayError(e)).body.error);
        }
        yield* closing;
      } else if (failure) {
        yield* relay.failed(failure);
      }
    } catch (e) {
      fail(e);
      throw e;
    }
  }
  async function* events(): AsyncGenerator<unknown> {
    try {
      yield* relayed();
    } finally {
      // A transport that stopped pulling early (a break, a throw) still settles the call: as aborted, billed
      // what was delivered, so its hold is released now rather than when it expires.
      if (!settledOnce) {
        settledOnce = true;
        try {
          await relay.settle('aborted', await relay.usage(undefined, delivered));
          settle('aborted');
        } catch (e) {
          fail(e);
        }
      }
    }
  }
  return { events: events(), settled };
}
