// A local server speaking OpenAI's images and audio transcription protocols, for the media e2e suites.
// It makes real PNGs of the requested size, and derives its transcript from the audio it received
// (decoded length and where the speech is), so a test can tell the audio arrived intact.
import { createServer, IncomingMessage, Server } from 'http';
import { AddressInfo, Socket } from 'net';
import sharp from 'sharp';
import { decodeAudio } from '@app/engines';
import { SilenceSegmenter } from '../../../apps/ai-gateway/src/speech/silence-segmenter';
import { asyncHandler } from '../../support/async-handler';

export interface MediaUpstreamCall {
  path: string;
  authorization?: string;
  json?: any;
  form?: Record<string, string>;
  file?: { name: string; bytes: Buffer };
}

export interface MediaUpstream {
  url: string;
  calls: MediaUpstreamCall[];
  /** Next call answers this HTTP status with an OpenAI error body. */
  failNext?: number;
  /** Wait before answering a transcription (a slow upstream). */
  delayMs?: number;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export async function startMediaUpstream(apiKey = 'sk-media-upstream'): Promise<MediaUpstream> {
  const sockets = new Set<Socket>();
  const upstream: MediaUpstream = { url: '', calls: [], close: async () => undefined };
  const server: Server = createServer(asyncHandler(async (req, res) => {
    const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    try {
      const body = await readBody(req);
      const call: MediaUpstreamCall = { path: req.url!, authorization: req.headers.authorization };
      upstream.calls.push(call);
      if (req.headers.authorization !== `Bearer ${apiKey}`) return send(401, { error: { message: 'bad key', type: 'invalid_request_error', code: 'invalid_api_key' } });
      if (upstream.failNext) {
        const status = upstream.failNext;
        upstream.failNext = undefined;
        return send(status, { error: { message: `upstream says ${status}`, type: 'server_error', code: null } });
      }
      if (req.url === '/v1/images/generations') {
        call.json = JSON.parse(body.toString('utf8'));
        // gpt-image-1 style: `auto` answers 1536x1024; output_format picks the encoding.
        const [w, h] = (call.json.size === 'auto' ? '1536x1024' : String(call.json.size)).split('x').map(Number);
        const data = [];
        for (let i = 0; i < call.json.n; i++) {
          const image = sharp({ create: { width: w, height: h, channels: 3, background: { r: 40 * i, g: 120, b: 200 } } });
          const png = await (call.json.output_format === 'jpeg' ? image.jpeg() : call.json.output_format === 'webp' ? image.webp() : image.png()).toBuffer();
          data.push({ b64_json: png.toString('base64'), revised_prompt: `revised: ${call.json.prompt}` });
        }
        return send(200, { created: Math.floor(Date.now() / 1000), data });
      }
      if (req.url === '/v1/audio/transcriptions') {
        if (upstream.delayMs) await new Promise((r) => setTimeout(r, upstream.delayMs));
        const form = await new Request('http://upstream/', { method: 'POST', headers: { 'content-type': req.headers['content-type']! }, body }).formData();
        call.form = {};
        for (const [k, v] of form.entries()) {
          if (typeof v === 'string') call.form[k] = v;
          else call.file = { name: v.name, bytes: Buffer.from(await v.arrayBuffer()) };
        }
        const audio = await decodeAudio(call.file!.bytes);
        const seg = new SilenceSegmenter({ sampleRate: audio.sampleRate });
        const pieces = seg.push(audio.pcm);
        const last = seg.flush();
        if (last) pieces.push(last);
        const segments = pieces.map((p, i) => ({ id: i, text: `speech ${i + 1}`, start: p.start, end: p.end }));
        const text = `heard ${segments.length} utterance(s) in ${audio.duration.toFixed(1)} seconds of ${audio.container}`;
        // OpenAI's output formats, in the fake's own spelling (a test can tell the upstream made them).
        const format = call.form.response_format ?? 'json';
        const plain = (body: string) => res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
        if (format === 'json') return send(200, { text, model_seen: call.form.model });
        if (format === 'text') return plain(text);
        if (format === 'srt') return plain(segments.map((s, i) => `${i + 1}\nupstream-srt ${s.start.toFixed(2)} --> ${s.end.toFixed(2)}\n${s.text}\n`).join('\n'));
        if (format === 'vtt') return plain(`WEBVTT\n\n${segments.map((s) => `upstream-vtt ${s.start.toFixed(2)} --> ${s.end.toFixed(2)}\n${s.text}\n`).join('\n')}`);
        const granularities = form.getAll('timestamp_granularities[]').map(String);
        return send(200, {
          ...(granularities.includes('word') ? { words: [{ word: 'speech', start: 0, end: 0.5 }] } : {}),
          task: 'transcribe',
          language: 'english',
          duration: audio.duration,
          text,
          segments,
        });
      }
      send(404, { error: { message: 'not found', type: 'invalid_request_error', code: null } });
    } catch (e) {
      send(400, { error: { message: (e as Error).message, type: 'invalid_request_error', code: null } });
    }
  }));
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  upstream.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  };
  return upstream;
}
