import type { ServerResponse } from 'http';
import type { Socket } from 'net';

/** The clock and timer the stall cut checks with (tests give a fake). */
export interface StallTimers {
  now(): number;
  after(ms: number, fn: () => void): { cancel(): void };
}

/**
 * The slowest an answer may be taken on average, in bytes a second, once its first `stallMs` are past: a
 * client reading a little in each window would otherwise keep tens of megabytes in memory for as long as it
 * liked. 256 KiB/s takes a 63 MB embeddings answer in about four minutes.
 */
export const MIN_ANSWER_BYTES_PER_SECOND = 256 * 1024;

/** When an answer of `bytes` still to send must be sent by, given its stall time (ms on the timers' clock). */
export function answerDeadline(now: number, stallMs: number, bytes: number): number {
  return now + stallMs + (bytes * 1000) / MIN_ANSWER_BYTES_PER_SECOND;
}

/** The process's clock and unref'd timers: what the stall cuts use outside tests. */
export const realStallTimers: StallTimers = {
  now: () => performance.now(),
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

type Answer = Pick<ServerResponse, 'on' | 'off' | 'destroy'> & {
  socket?: ServerResponse['socket'];
  req?: { socket?: Pick<Socket, 'once' | 'off'> | null };
};

/**
 * The connection of an answer queued behind another on a pipelined connection (no socket of its own yet), else
 * undefined. Node closes no queued answer when that connection closes (neither 'close' nor 'socket' comes):
 * whoever waits on such an answer listens to the connection too.
 */
export function queuedOn(res: Answer): Pick<Socket, 'once' | 'off'> | undefined {
  return res.socket === null ? (res.req?.socket ?? undefined) : undefined;
}

/**
 * Resolves when `res` drains or closes; destroys it when neither happens within `stallMs`: a client that
 * takes none of an answer written a piece at a time that long is cut (streamed answers: SSE, speech; pieced
 * JSON answers). What cutStalledAnswer does for an answer once it is ended. An answer queued behind another on
 * a pipelined connection cannot be sent yet: its stall time starts when Node gives it the socket ('socket'),
 * and the connection closing meanwhile ends the wait (and destroys the answer).
 */
export function drainedOrCut(res: Answer, stallMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const connection = queuedOn(res);
    const done = () => {
      clearTimeout(timer);
      res.off('drain', done);
      res.off('close', done);
      res.off('socket', arm);
      connection?.off('close', lost);
      resolve();
    };
    const lost = () => {
      done();
      res.destroy();
    };
    const arm = () => {
      // Sent from now on: its own 'close' tells of the connection.
      connection?.off('close', lost);
      timer = setTimeout(lost, stallMs);
    };
    res.on('drain', done);
    res.on('close', done);
    if (res.socket === null) {
      res.on('socket', arm);
      connection?.once('close', lost);
    } else arm();
  });
}

/**
 * Bytes of `socket` not yet taken by the kernel: what its stream still holds (the write in flight included)
 * plus what libuv still queues of it (`writeQueueSize`, which falls as the kernel takes part of a write:
 * the only sign of progress while one large write is in flight).
 */
function pendingBytes(socket: Socket): number {
  const handle = (socket as Socket & { _handle?: { writeQueueSize?: number } | null })._handle;
  return socket.writableLength + (handle?.writeQueueSize ?? 0);
}

/**
 * Cuts an answer its client stops taking. Once the app has ended a response whose bytes still wait to be
 * sent (a client reading slowly, or not at all), the bytes waiting must fall within every `stallMs`, and all be
 * sent by `answerDeadline` (MIN_ANSWER_BYTES_PER_SECOND on average), else the connection is destroyed and what
 * it held is freed. Without it, an answer of megabytes to a client that
 * reads nothing was held for as long as the client kept its connection open: a key asking for large
 * embeddings answers and reading none of them took a gigabyte of memory in seconds. Answers written a piece at
 * a time (SSE, speech, pieced JSON, downloads) cut their own stalls as they write (drainedOrCut); this covers
 * every answer once it is ended, whatever wrote it. A response already sent whole costs one listener.
 */
export function cutStalledAnswer(res: ServerResponse, stallMs: number, timers: StallTimers = realStallTimers): void {
  stallCut(stallMs, timers)(res);
}

/**
 * cutStalledAnswer for many responses with one `stallMs`: what the edge stages call per request. The listener
 * is one function shared by every response (no closure or `once` wrapper made per request).
 */
export function stallCut(stallMs: number, timers: StallTimers = realStallTimers): (res: ServerResponse) => void {
  function onPrefinish(this: ServerResponse): void {
    watch(this, stallMs, timers);
  }
  return (res) => void res.on('prefinish', onPrefinish);
}

/** Once a response is ended: destroys its connection when the bytes it still holds stop moving for `stallMs`. */
function watch(res: ServerResponse, stallMs: number, timers: StallTimers): void {
  // An answer ended while queued behind another on a pipelined connection is finished (prefinish) only once Node
  // gives it the socket: it is watched from then (stall-cut.spec.ts).
  const socket = res.socket;
  if (!socket || socket.destroyed || pendingBytes(socket) === 0) return;
  let last = pendingBytes(socket);
  const deadline = answerDeadline(timers.now(), stallMs, last);
  let timer: { cancel(): void } | undefined;
  const stop = () => {
    timer?.cancel();
    res.off('finish', stop);
    res.off('close', stop);
  };
  const check = () => {
    if (res.writableFinished || socket.destroyed) return stop();
    const pending = pendingBytes(socket);
    const left = deadline - timers.now();
    if ((pending > 0 && pending >= last) || left <= 0) {
      stop();
      socket.destroy();
      return;
    }
    last = pending;
    timer = timers.after(Math.min(stallMs, left), check);
  };
  res.once('finish', stop);
  res.once('close', stop);
  timer = timers.after(stallMs, check);
}
