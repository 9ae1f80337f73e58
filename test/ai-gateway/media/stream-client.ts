import WebSocket from 'ws';

export interface StreamRun {
  ws: WebSocket;
  messages: Array<Record<string, any> & { at: number }>;
  closed: Promise<{ code: number; reason: string }>;
  /**
   * Resolves with the first message of `type`; rejects when the socket closes without one. No deadline of
   * its own (Jest's timeout is the limit): a loaded machine only makes the wait longer.
   */
  next(type: string): Promise<Record<string, any>>;
}

/** A real `ws` client on /v1/speech/stream that records every message with its arrival time. */
export function openStream(baseUrl: string, headers: Record<string, string> = {}): Promise<StreamRun> {
  const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/v1/speech/stream`, { headers });
  const started = Date.now();
  const messages: StreamRun['messages'] = [];
  const waiters: Array<() => void> = [];
  ws.on('message', (data, isBinary) => {
    // ws's default binaryType (nodebuffer): a text frame arrives as one Buffer.
    if (!isBinary) messages.push({ ...JSON.parse((data as Buffer).toString()), at: Date.now() - started });
    waiters.splice(0).forEach((w) => w());
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => {
      resolve({ code, reason: reason.toString() });
      waiters.splice(0).forEach((w) => w());
    }),
  );
  const next = (type: string) =>
    new Promise<Record<string, any>>((resolve, reject) => {
      const check = () => {
        const found = messages.find((m) => m.type === type);
        if (found) resolve(found);
        else if (ws.readyState === WebSocket.CLOSED)
          reject(new Error(`socket closed before a ${type} message; got ${JSON.stringify(messages)}`));
        else waiters.push(check);
      };
      check();
    });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, messages, closed, next }));
    ws.once('error', reject);
  });
}

/** Sends PCM in `chunkMs` pieces at real-time pace. */
export async function streamRealTime(ws: WebSocket, pcm: Int16Array, sampleRate: number, chunkMs = 100): Promise<void> {
  const step = Math.round((sampleRate * chunkMs) / 1000);
  const started = Date.now();
  for (let i = 0, n = 0; i < pcm.length; i += step, n++) {
    const chunk = pcm.subarray(i, i + step);
    ws.send(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    const due = started + (n + 1) * chunkMs;
    await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
  }
}
