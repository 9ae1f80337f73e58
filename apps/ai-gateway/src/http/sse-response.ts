import { AbortSource } from '@app/llm';
import type { Response } from 'express';
import { drainedOrCut, queuedOn } from '@app/platform';

/**
 * A text/event-stream response that forwards each event at once and respects back-pressure. A client
 * that takes none of the answer for `stallMs` (REQUEST_TIMEOUT_MS) while an event waits is cut: its
 * response is destroyed, which aborts the upstream call (clientGone) and settles it as aborted. Without
 * that, a reader that stops reading keeps an upstream connection of the deployment's pool paused for as
 * long as it likes (undici's body timeout does not run while the body is paused), unbilled.
 */
export class SseResponse {
  constructor(
    private readonly res: Response,
    private readonly stallMs: number,
  ) {}

  /** Sends status and headers immediately (nothing is buffered by the gateway or a proxy in front). */
  open(extraHeaders: Record<string, string>): void {
    this.res.statusCode = 200;
    this.res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    this.res.setHeader('Cache-Control', 'no-cache, no-transform');
    this.res.setHeader('Connection', 'keep-alive');
    this.res.setHeader('X-Accel-Buffering', 'no');
    for (const [k, v] of Object.entries(extraHeaders)) this.res.setHeader(k, v);
    this.res.socket?.setNoDelay(true);
    this.res.flushHeaders();
  }

  get closed(): boolean {
    return this.res.writableEnded || this.res.destroyed;
  }

  /** Writes one `data:` event; waits for the socket to drain when the client reads slowly. */
  async data(payload: unknown): Promise<void> {
    if (this.closed) return;
    const ok = this.res.write(`data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`);
    if (!ok && !this.closed) await drainedOrCut(this.res, this.stallMs);
  }

  end(): void {
    if (!this.closed) this.res.end();
  }
}

/**
 * An abort signal that fires when the client goes away before the response finished: its 'close', or for an
 * answer queued behind another on a pipelined connection (which Node does not close with its connection), the
 * connection's close while it waits.
 */
export function clientGone(res: Response): AbortSource {
  const ac = new AbortSource();
  const gone = () => {
    if (!res.writableFinished) ac.abort();
  };
  res.once('close', gone);
  const connection = queuedOn(res);
  if (connection) {
    connection.once('close', gone);
    res.once('socket', () => connection.off('close', gone));
    // Closed already (between the request's end and now): no 'close' will come.
    if ((connection as { destroyed?: boolean }).destroyed) gone();
  }
  return ac;
}
