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
  /** Multipart files of an images edit call, by field name (image, image[], mask), in order. */
  files?: Array<{ field: string; name: string; type: string; bytes: Buffer }>;
  /** Every value of each multipart field (repeated fields such as known_speaker_names[]). */
  formAll?: Record<string, string[]>;
}

export interface MediaUpstream {
  url: string;
  /** The key it accepts (Bearer). */
  apiKey: string;
  calls: MediaUpstreamCall[];
  /** Next call answers this HTTP status with an OpenAI error body. */
  failNext?: number;
  /**
   * The next image stream sends its events up to the first completed image (`stall`: without it,
   * `stall-after-completed`: with it) and then nothing until the caller hangs up or cutStreams() is called.
   */
  imageStream?: 'stall' | 'stall-after-completed';
  /** Cuts the connections of stalled streams (an upstream failing mid-stream). */
  cutStreams(): void;
  /** Wait before answering a transcription (a slow upstream). */
  delayMs?: number;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Server-sent events as OpenAI's media streams send them (an `event:` line naming the type, then the JSON). */
function sendEvents(
  res: import('http').ServerResponse,
  events: Array<Record<string, unknown>>,
  mode?: MediaUpstream['imageStream'],
  stalled?: Set<import('http').ServerResponse>,
): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const firstCompleted = events.findIndex((e) => String(e.type).endsWith('.completed'));
  const sent =
    mode === 'stall'
      ? events.slice(0, firstCompleted)
      : mode === 'stall-after-completed'
        ? events.slice(0, firstCompleted + 1)
        : events;
  for (const e of sent) res.write(`event: ${String(e.type)}\ndata: ${JSON.stringify(e)}\n\n`);
  if (!mode) return void res.end();
  // Left open: the gateway hangs up, or the test cuts it (cutStreams).
  stalled?.add(res);
  res.on('close', () => stalled?.delete(res));
}

async function readForm(req: IncomingMessage, body: Buffer, call: MediaUpstreamCall): Promise<FormData> {
  const form = await new Request('http://upstream/', {
    method: 'POST',
    headers: { 'content-type': req.headers['content-type']! },
    body,
  }).formData();
  call.form = {};
  call.formAll = {};
  call.files = [];
  for (const [k, v] of form.entries()) {
    if (typeof v === 'string') {
      call.form[k] = v;
      (call.formAll[k] ??= []).push(v);
    } else {
      const bytes = Buffer.from(await v.arrayBuffer());
      call.file = { name: v.name, bytes };
      call.files.push({ field: k, name: v.name, type: v.type, bytes });
    }
  }
  return form;
}

/** A gpt-image style answer: images of the asked size (auto: 1536x1024) in the asked encoding. */
async function renderImages(n: number, size: string | undefined, format: string | undefined): Promise<Buffer[]> {
  const [w, h] = (size === 'auto' || !size ? '1536x1024' : size).split('x').map(Number);
  const out = [];
  for (let i = 0; i < n; i++) {
    const image = sharp({ create: { width: w, height: h, channels: 3, background: { r: 40 * i, g: 120, b: 200 } } });
    out.push(await (format === 'jpeg' ? image.jpeg() : format === 'webp' ? image.webp() : image.png()).toBuffer());
  }
  return out;
}

/** image_generation.* or image_edit.* events: `partial` partial images, then one completed event per image. */
async function imageEvents(
  prefix: 'image_generation' | 'image_edit',
  n: number,
  partial: number,
  size: string | undefined,
  format: string | undefined,
): Promise<Array<Record<string, unknown>>> {
  const images = await renderImages(n, size, format);
  const common = {
    created_at: Math.floor(Date.now() / 1000),
    size: size ?? '1024x1024',
    quality: 'low',
    background: 'opaque',
    output_format: format ?? 'png',
  };
  const partials = Array.from({ length: partial }, (_, i) => ({
    type: `${prefix}.partial_image`,
    b64_json: images[0].toString('base64'),
    ...common,
    partial_image_index: i,
  }));
  const usage = {
    total_tokens: 100,
    input_tokens: 50,
    output_tokens: 50,
    input_tokens_details: { text_tokens: 10, image_tokens: 40 },
  };
  return [
    ...partials,
    ...images.map((img) => ({ type: `${prefix}.completed`, b64_json: img.toString('base64'), ...common, usage })),
  ];
}

const CATEGORIES = [
  'hate',
  'hate/threatening',
  'harassment',
  'harassment/threatening',
  'illicit',
  'illicit/violent',
  'self-harm',
  'self-harm/intent',
  'self-harm/instructions',
  'sexual',
  'sexual/minors',
  'violence',
  'violence/graphic',
];

/** One moderation result: violence flagged when the text mentions "kill"; image types applied when an image came. */
function moderationResult(text: string, withImage: boolean): Record<string, unknown> {
  const violent = /kill/i.test(text);
  const imageTypes = [
    'self-harm',
    'self-harm/intent',
    'self-harm/instructions',
    'sexual',
    'violence',
    'violence/graphic',
  ];
  return {
    flagged: violent,
    categories: Object.fromEntries(CATEGORIES.map((c) => [c, c === 'violence' && violent])),
    category_scores: Object.fromEntries(CATEGORIES.map((c) => [c, c === 'violence' && violent ? 0.91 : 0.001])),
    category_applied_input_types: Object.fromEntries(
      CATEGORIES.map((c) => [c, withImage && imageTypes.includes(c) ? ['text', 'image'] : ['text']]),
    ),
  };
}

export async function startMediaUpstream(apiKey = 'sk-media-upstream'): Promise<MediaUpstream> {
  const sockets = new Set<Socket>();
  const stalled = new Set<import('http').ServerResponse>();
  const upstream: MediaUpstream = {
    url: '',
    apiKey,
    calls: [],
    close: async () => undefined,
    cutStreams: () => stalled.forEach((r) => r.socket?.destroy()),
  };
  const takeImageStream = () => {
    const mode = upstream.imageStream;
    upstream.imageStream = undefined;
    return mode;
  };
  const server: Server = createServer(
    asyncHandler(async (req, res) => {
      const send = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      try {
        const body = await readBody(req);
        // An image to point URLs at (a moderation's image_url, fetched by the gateway); no key, not counted in `calls`.
        if (req.method === 'GET' && req.url === '/image.png') {
          return void res.writeHead(200, { 'content-type': 'image/png' }).end(
            await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3a7' } })
              .png()
              .toBuffer(),
          );
        }
        const call: MediaUpstreamCall = { path: req.url!, authorization: req.headers.authorization };
        upstream.calls.push(call);
        if (req.headers.authorization !== `Bearer ${apiKey}`)
          return send(401, { error: { message: 'bad key', type: 'invalid_request_error', code: 'invalid_api_key' } });
        if (upstream.failNext) {
          const status = upstream.failNext;
          upstream.failNext = undefined;
          return send(status, { error: { message: `upstream says ${status}`, type: 'server_error', code: null } });
        }
        if (req.url === '/v1/moderations') {
          call.json = JSON.parse(body.toString('utf8'));
          const input = call.json.input;
          const results =
            typeof input === 'string'
              ? [moderationResult(input, false)]
              : input.every((i: unknown) => typeof i === 'string')
                ? input.map((t: string) => moderationResult(t, false))
                : [
                    moderationResult(
                      input
                        .filter((p: any) => p.type === 'text')
                        .map((p: any) => p.text)
                        .join(' '),
                      input.some((p: any) => p.type === 'image_url'),
                    ),
                  ];
          return send(200, { id: `modr-${upstream.calls.length}`, model: call.json.model, results });
        }
        if (req.url === '/v1/images/edits') {
          await readForm(req, body, call);
          const n = Number(call.form!.n ?? 1);
          if (call.form!.stream === 'true')
            return sendEvents(
              res,
              await imageEvents(
                'image_edit',
                n,
                Number(call.form!.partial_images ?? 0),
                call.form!.size,
                call.form!.output_format,
              ),
              takeImageStream(),
              stalled,
            );
          const images = await renderImages(n, call.form!.size, call.form!.output_format);
          return send(200, {
            created: Math.floor(Date.now() / 1000),
            data: images.map((png) => ({ b64_json: png.toString('base64') })),
          });
        }
        if (req.url === '/v1/images/generations' && JSON.parse(body.toString('utf8')).stream === true) {
          call.json = JSON.parse(body.toString('utf8'));
          return sendEvents(
            res,
            await imageEvents(
              'image_generation',
              call.json.n,
              call.json.partial_images ?? 0,
              call.json.size,
              call.json.output_format,
            ),
            takeImageStream(),
            stalled,
          );
        }
        if (req.url === '/v1/audio/translations') {
          await readForm(req, body, call);
          const audio = await decodeAudio(call.file!.bytes);
          const text = `translated ${audio.duration.toFixed(1)} seconds of ${audio.container} into English`;
          const format = call.form!.response_format ?? 'json';
          if (format === 'json') return send(200, { text });
          if (format === 'verbose_json')
            return send(200, { task: 'translate', language: 'english', duration: audio.duration, text, segments: [] });
          return res
            .writeHead(200, { 'content-type': 'text/plain; charset=utf-8' })
            .end(format === 'srt' ? `1\n00:00:00,000 --> 00:00:01,000\n${text}\n` : text);
        }
        if (req.url === '/v1/images/generations') {
          call.json = JSON.parse(body.toString('utf8'));
          // gpt-image-1 style: `auto` answers 1536x1024; output_format picks the encoding.
          const [w, h] = (call.json.size === 'auto' ? '1536x1024' : String(call.json.size)).split('x').map(Number);
          const data = [];
          for (let i = 0; i < call.json.n; i++) {
            const image = sharp({
              create: { width: w, height: h, channels: 3, background: { r: 40 * i, g: 120, b: 200 } },
            });
            const png = await (
              call.json.output_format === 'jpeg'
                ? image.jpeg()
                : call.json.output_format === 'webp'
                  ? image.webp()
                  : image.png()
            ).toBuffer();
            data.push({ b64_json: png.toString('base64'), revised_prompt: `revised: ${call.json.prompt}` });
          }
          return send(200, { created: Math.floor(Date.now() / 1000), data });
        }
        if (req.url === '/v1/audio/transcriptions') {
          if (upstream.delayMs) await new Promise((r) => setTimeout(r, upstream.delayMs));
          const form = await readForm(req, body, call);
          const audio = await decodeAudio(call.file!.bytes);
          const seg = new SilenceSegmenter({ sampleRate: audio.sampleRate });
          const pieces = seg.push(audio.pcm);
          const last = seg.flush();
          if (last) pieces.push(last);
          const segments = pieces.map((p, i) => ({ id: i, text: `speech ${i + 1}`, start: p.start, end: p.end }));
          const text = `heard ${segments.length} utterance(s) in ${audio.duration.toFixed(1)} seconds of ${audio.container}`;
          // OpenAI's output formats, in the fake's own spelling (a test can tell the upstream made them).
          const format = call.form!.response_format ?? 'json';
          // Like OpenAI, whisper-1 ignores `stream` and answers the JSON transcript (usage in seconds).
          if (call.form!.stream === 'true' && call.form!.model === 'whisper-1')
            return send(200, { text, usage: { type: 'duration', seconds: Math.ceil(audio.duration) } });
          if (call.form!.stream === 'true') {
            return sendEvents(res, [
              ...segments.map((s, i) => ({ type: 'transcript.text.delta', delta: i === 0 ? s.text : ` ${s.text}` })),
              {
                type: 'transcript.text.done',
                text: segments.map((s) => s.text).join(' '),
                usage: {
                  type: 'tokens',
                  input_tokens: 14,
                  input_token_details: { text_tokens: 0, audio_tokens: 14 },
                  output_tokens: 4,
                  total_tokens: 18,
                },
              },
            ]);
          }
          if (format === 'diarized_json') {
            return send(200, {
              task: 'transcribe',
              duration: audio.duration,
              text,
              segments: segments.map((s, i) => ({
                type: 'transcript.text.segment',
                id: `seg_${i}`,
                start: s.start,
                end: s.end,
                text: s.text,
                speaker: call.formAll!['known_speaker_names[]']?.[0] ?? 'A',
              })),
            });
          }
          const plain = (body: string) => res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
          if (format === 'json') return send(200, { text, model_seen: call.form!.model });
          if (format === 'text') return plain(text);
          if (format === 'srt')
            return plain(
              segments
                .map((s, i) => `${i + 1}\nupstream-srt ${s.start.toFixed(2)} --> ${s.end.toFixed(2)}\n${s.text}\n`)
                .join('\n'),
            );
          if (format === 'vtt')
            return plain(
              `WEBVTT\n\n${segments.map((s) => `upstream-vtt ${s.start.toFixed(2)} --> ${s.end.toFixed(2)}\n${s.text}\n`).join('\n')}`,
            );
          const granularities = form.getAll('timestamp_granularities[]').map(String);
          return send(200, {
            ...(granularities.includes('word') ? { words: [{ word: 'speech', start: 0, end: 0.5 }] } : {}),
            task: 'transcribe',
            language: 'english',
            duration: audio.duration,
            text,
            // OpenAI's verbose segments carry Whisper's decoding fields too.
            segments: segments.map((s) => ({
              ...s,
              seek: Math.round(s.start * 100),
              tokens: [],
              temperature: 0,
              avg_logprob: -0.25,
              compression_ratio: 1,
              no_speech_prob: 0.01,
            })),
          });
        }
        send(404, { error: { message: 'not found', type: 'invalid_request_error', code: null } });
      } catch (e) {
        send(400, { error: { message: (e as Error).message, type: 'invalid_request_error', code: null } });
      }
    }),
  );
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.keepAliveTimeout = 120_000; // as test/support/upstreams/fake-upstream.ts says why
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  upstream.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  };
  return upstream;
}
