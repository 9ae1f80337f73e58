import type { SpeechStream } from '@app/engines';
import express from 'express';
import type { AddressInfo } from 'net';
import * as http from 'http';
import { sendSpeech } from './send-speech';

/** A speech stream of the given chunks; `ended` says how the generator ended (all read, or returned early). */
function speechOf(chunks: Array<Buffer | Error>, single = false) {
  const state = { ended: 'no' as 'no' | 'all' | 'early', gate: null as null | (() => void) };
  async function* parts(): AsyncGenerator<Buffer> {
    let all = false;
    try {
      for (const c of chunks) {
        if (c instanceof Error) throw c;
        yield c;
      }
      all = true;
    } finally {
      state.ended = all ? 'all' : 'early';
      state.gate?.();
    }
  }
  const speech: SpeechStream = {
    contentType: 'audio/mpeg',
    format: 'mp3',
    segments: chunks.length,
    single,
    chunks: parts(),
    spoken: { characters: 0, seconds: 2.5, sampleRate: 22_050 },
  };
  return { speech, state };
}

async function serve(speech: SpeechStream): Promise<{ url: string; close: () => Promise<void> }> {
  const app = express();
  app.get('/', (_req, res) => void sendSpeech(res, speech, 30_000));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise((r) => server.close(() => r(undefined))),
  };
}

describe('sendSpeech', () => {
  it('sends audio of one chunk with its Content-Length and X-Audio-Duration', async () => {
    const { speech } = speechOf([Buffer.from('whole-mp3')], true);
    const s = await serve(speech);
    try {
      const res = await fetch(s.url);
      expect([res.status, res.headers.get('content-length'), res.headers.get('x-audio-duration')]).toEqual([
        200,
        '9',
        '2.500',
      ]);
      expect(await res.text()).toBe('whole-mp3');
    } finally {
      await s.close();
    }
  });

  it('sends a longer answer chunked, each chunk as it comes, to its end', async () => {
    const { speech, state } = speechOf([Buffer.from('one-'), Buffer.from('two-'), Buffer.from('three')]);
    const s = await serve(speech);
    try {
      const res = await fetch(s.url);
      expect([res.headers.get('content-length'), res.headers.get('transfer-encoding')]).toEqual([null, 'chunked']);
      expect(await res.text()).toBe('one-two-three');
      expect(state.ended).toBe('all');
    } finally {
      await s.close();
    }
  });

  it('stops the stream (its work) when the client leaves midway, and cuts the connection when the engine fails midway', async () => {
    const big = Buffer.alloc(4 * 1024 * 1024, 1);
    const leaving = speechOf([big, big, big, big, big, big]);
    const ended = new Promise<void>((r) => (leaving.state.gate = r));
    const s = await serve(leaving.speech);
    try {
      await new Promise<void>((resolve) => {
        const req = http.get(s.url, (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', () => undefined);
      });
      await ended;
      expect(leaving.state.ended).toBe('early');
    } finally {
      await s.close();
    }
    const failing = speechOf([Buffer.from('first-'), new Error('engine died')]);
    const f = await serve(failing.speech);
    try {
      const res = await fetch(f.url);
      expect(res.status).toBe(200);
      await expect(res.text()).rejects.toThrow();
    } finally {
      await f.close();
    }
  });
});
