import type { ServerResponse } from 'http';
import { answerDeadline, drainedOrCut } from '@app/platform';

type HeadResponse = Pick<
  ServerResponse,
  'writeHead' | 'end' | 'write' | 'on' | 'once' | 'off' | 'destroyed' | 'writableEnded' | 'destroy'
> & { socket?: ServerResponse['socket'] };

/**
 * Writes a JSON answer with the headers Express's `res.json()` sets (content type, length), without
 * its content-type negotiation and mime lookups, in one write; `extra` headers go into the same head
 * (headers set before with setHeader are kept: Node merges them with this list). `serialized`: the body's
 * JSON when the caller already made it. `stallMs`: how long a pieced answer waits for its client to take
 * more before the connection is cut (an answer written at once is cut by the platform: cutStalledAnswer).
 */
export function sendJson(
  res: HeadResponse,
  status: number,
  body: unknown,
  extra?: readonly string[],
  serialized?: string | readonly Buffer[],
  stallMs?: number,
): void {
  if (Array.isArray(serialized)) return sendPieces(res, status, serialized as readonly Buffer[], extra, stallMs);
  const text = (serialized as string | undefined) ?? JSON.stringify(body);
  // A large answer is written as bytes: Node writes a string of 150 KB in ~0.9 ms of the event loop, the same
  // as a Buffer in ~0.15 ms with its encoding (what does not fit the socket is sent in later turns).
  const bytes = text.length >= LARGE_ANSWER ? Buffer.from(text) : text;
  res.writeHead(status, jsonHead(extra, typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.length));
  res.end(bytes);
}

/** The head of a JSON answer of `length` bytes: `extra` headers, then its content type and length. */
function jsonHead(extra: readonly string[] | undefined, length: number): string[] {
  const head: string[] = extra ? [...extra] : [];
  head.push('Content-Type', 'application/json; charset=utf-8', 'Content-Length', String(length));
  return head;
}

/** Characters from which a JSON answer is encoded to a Buffer before it is written. */
const LARGE_ANSWER = 16_384;

/**
 * A JSON answer already encoded in pieces (an answer of thousands of vectors, built a run at a time): its
 * length is their sum, and they are written one after the other, never joined (joining 60 MB of JSON
 * into one string, then encoding it, held the event loop for ~0.6 s). At most PIECES_PER_TURN bytes (and the
 * piece that reaches it) are handed to the socket per turn of the event loop, and none while it asks to drain: a
 * socket with room for megabytes would otherwise take them all in one write (a copy of ~0.1 s on a slow machine).
 * The next run waits for a later turn even when the socket drains at once: Node emits 'drain' from
 * process.nextTick when the kernel took a write whole, so writing again from 'drain' ran the whole answer,
 * megabytes over loopback, in one turn of the loop (json-response.spec.ts counts the bytes a turn).
 * A client that takes nothing more for `stallMs` while the socket asks to drain, or has not taken the whole answer
 * by `answerDeadline` (a minimum average rate), is cut: the answer's pieces (tens of megabytes) are not held for
 * as long as it keeps the connection open, or reads a little now and then.
 */
function sendPieces(
  res: HeadResponse,
  status: number,
  pieces: readonly Buffer[],
  extra?: readonly string[],
  stallMs?: number,
): void {
  let length = 0;
  for (const p of pieces) length += p.length;
  res.writeHead(status, jsonHead(extra, length));
  let next = 0;
  // An answer queued behind another on a pipelined connection has no socket yet (Node gives it one when the
  // answers before it are sent): its first run is written (Node holds it, and reads no further request of the
  // connection meanwhile), and its deadline starts once it has the socket (drainedOrCut waits for it untimed).
  let deadline =
    stallMs === undefined || res.socket === null ? undefined : answerDeadline(performance.now(), stallMs, length);
  const later = (): void => void setImmediate(pump);
  // A client gone (or an answer ended elsewhere) stops the pump, and no listener keeps the pieces alive.
  res.once('close', () => res.off('drain', later));
  const pump = (): void => {
    if (res.destroyed || res.writableEnded) return;
    let budget = PIECES_PER_TURN;
    let room = true;
    // A turn's run is written whole (what the socket does not take yet waits in its buffer, a turn's worth at most).
    while (next < pieces.length && budget > 0 && !res.destroyed) {
      const piece = pieces[next++];
      budget -= piece.length;
      room = res.write(piece) && room;
    }
    if (res.destroyed) return;
    if (next === pieces.length) res.end();
    else if (room) later();
    else if (stallMs === undefined) res.once('drain', later);
    else {
      if (deadline === undefined && res.socket !== null) deadline = answerDeadline(performance.now(), stallMs, length);
      const left = deadline === undefined ? stallMs : Math.max(0, Math.min(stallMs, deadline - performance.now()));
      void drainedOrCut(res, left).then(later);
    }
  };
  pump();
}

/** Bytes of a pieced answer given to the socket per turn of the event loop. */
const PIECES_PER_TURN = 256 * 1024;
