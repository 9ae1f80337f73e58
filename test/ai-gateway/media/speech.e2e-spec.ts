import OpenAI, { toFile } from 'openai';
import { decodeAudio, SpeechSynthesisEngine } from '@app/engines';
import { renderBlankPng } from '@app/engines/testing/media-fixtures';
import { GatewayFixture, startGatewayFixture } from '../gateway-fixture';
import { ledgerRows } from './ledger';
import { MediaUpstream, startMediaUpstream } from './media-upstream';

describe('speech and image generation endpoints (real clients, upstream protocol server)', () => {
  let f: GatewayFixture;
  let media: MediaUpstream;
  let key: string;
  let client: OpenAI;
  const post = (path: string, body: unknown, auth = key) =>
    fetch(`${f.gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    media = await startMediaUpstream();
    f = await startGatewayFixture({
      AI_TRANSCRIBE_BASE_URL: media.url,
      AI_TRANSCRIBE_API_KEY: 'sk-media-upstream',
      AI_IMAGES_BASE_URL: media.url,
      AI_IMAGES_API_KEY: 'sk-media-upstream',
      AI_MEDIA_MAX_AUDIO_BYTES: '3000000',
    });
    key = (await f.createKey({ name: 'media' })).key;
    client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0, timeout: 20_000 });
  });
  afterAll(async () => {
    await f?.close();
    await media?.close();
    await SpeechSynthesisEngine.shared().close();
  });
  beforeEach(() => (media.calls = []));

  describe('POST /v1/speech/synthesize', () => {
    it('answers mp3, wav and ogg audio with the right Content-Type, billed per character', async () => {
      const text = '你好，欢迎使用语音合成服务。';
      for (const [format, type] of [
        ['mp3', 'audio/mpeg'],
        ['wav', 'audio/wav'],
        ['ogg', 'audio/ogg'],
      ] as const) {
        const started = Date.now();
        const res = await post('/v1/speech/synthesize', { text, voice: 'zh-CN-YunxiNeural', format, speed: 1.2 });
        const ms = Date.now() - started;
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toBe(type);
        const audio = Buffer.from(await res.arrayBuffer());
        const decoded = await decodeAudio(audio, { keepPcm: false });
        expect(decoded.container).toBe(format);
        expect(decoded.duration).toBeGreaterThan(1);
        console.log(`synthesize ${format}: ${decoded.duration.toFixed(2)} s of speech in ${ms} ms over HTTP`);
      }
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/speech/synthesize', 3);
      expect(rows[0]).toMatchObject({ status: 'ok', characters: [...text].length });
      expect(Number(rows[0].cost_yuan)).toBeCloseTo(([...text].length / 1000) * 0.01, 10);
    });

    it('defaults to mp3 and the Xiaoxiao voice', async () => {
      const res = await post('/v1/speech/synthesize', { text: '默认声音' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('audio/mpeg');
    });

    it('validates text length, speed, voice and format', async () => {
      const cases: Array<[unknown, string]> = [
        [{ text: 'x'.repeat(5001) }, 'text'],
        [{ text: '' }, 'text'],
        [{ text: 'hi', speed: 2.5 }, 'speed'],
        [{ text: 'hi', speed: 0.4 }, 'speed'],
        [{ text: 'hi', voice: 'zh-CN-Nobody' }, 'voice'],
        [{ text: 'hi', format: 'flac' }, 'format'],
      ];
      for (const [body, param] of cases) {
        const res = await post('/v1/speech/synthesize', body);
        expect([param, res.status]).toEqual([param, 400]);
        expect((await res.json()).error.param).toBe(param);
      }
      expect(
        (
          await post('/v1/speech/synthesize', {
            text: 'x'.repeat(5000),
            voice: 'en-US-GuyNeural',
            format: 'wav',
            speed: 2,
          })
        ).status,
      ).toBe(200);
    });

    it('streams a long text as it is spoken: chunked, decodable as a whole, billed once after its end', async () => {
      const text = '你好，欢迎使用语音合成服务。'.repeat(30);
      const res = await post('/v1/speech/synthesize', { text, voice: 'zh-CN-XiaoxiaoNeural', format: 'mp3' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('audio/mpeg');
      expect([res.headers.get('content-length'), res.headers.get('transfer-encoding')]).toEqual([null, 'chunked']);
      const reader = res.body!.getReader();
      const parts: Uint8Array[] = [];
      for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value);
      const decoded = await decodeAudio(Buffer.concat(parts), { keepPcm: false });
      expect(decoded.container).toBe('mp3');
      expect(decoded.duration).toBeGreaterThan(60);
      // Earlier tests' rows may still be on their way to the ledger (it is written in batches): find this one's.
      const characters = [...text].length;
      let rows = await ledgerRows(f.gw.dbUrl, '/v1/speech/synthesize', 1);
      while (!rows.some((r) => r.characters === characters))
        rows = await ledgerRows(f.gw.dbUrl, '/v1/speech/synthesize', rows.length + 1);
      expect(rows.filter((r) => r.characters === characters)).toEqual([expect.objectContaining({ status: 'ok' })]);
    });

    it('works through the openai SDK (/v1/audio/speech) with OpenAI voice names', async () => {
      const res = await client.audio.speech.create({
        model: 'tts-1',
        input: 'Hello from the OpenAI SDK.',
        voice: 'nova',
        response_format: 'wav',
      });
      const audio = Buffer.from(await res.arrayBuffer());
      expect(audio.subarray(0, 4).toString('ascii')).toBe('RIFF');
      const opus = Buffer.from(
        await (
          await client.audio.speech.create({
            model: 'tts-1',
            input: 'Opus please.',
            voice: 'onyx',
            response_format: 'opus',
          })
        ).arrayBuffer(),
      );
      expect((await decodeAudio(opus, { keepPcm: false })).container).toBe('ogg');
    });
  });

  describe('POST /v1/speech/transcribe', () => {
    let speechWav: Buffer;
    let speechMp3: Buffer;
    beforeAll(async () => {
      const tts = SpeechSynthesisEngine.shared();
      speechWav = (
        await tts.synthesize('The weather is nice today. Please call me tomorrow.', {
          voice: 'en-US-JennyNeural',
          format: 'wav',
        })
      ).audio;
      speechMp3 = (await tts.synthesize('A second file, encoded as MP3.', { voice: 'en-US-GuyNeural', format: 'mp3' }))
        .audio;
    });

    it('sends the upload to the upstream, measures the real duration and returns segments on request', async () => {
      const form = new FormData();
      form.append('file', new Blob([speechWav]), 'speech.wav');
      form.append('language', 'en');
      form.append('timestamps', 'true');
      const started = Date.now();
      const res = await fetch(`${f.gw.url}/v1/speech/transcribe`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: form,
      });
      console.log(`transcribe via upstream protocol server: ${Date.now() - started} ms`);
      expect(res.status).toBe(200);
      const body = await res.json();
      const expected = (await decodeAudio(speechWav, { keepPcm: false })).duration;
      expect(body.duration).toBeCloseTo(expected, 2);
      expect(body.language).toBe('en');
      expect(body.text).toMatch(/^heard \d utterance\(s\) in [\d.]+ seconds of wav$/);
      expect(body.segments.length).toBeGreaterThanOrEqual(1);
      for (const s of body.segments) expect(s.end).toBeGreaterThan(s.start);
      // The upstream got the original bytes, the configured model and key.
      const [call] = media.calls;
      expect(call.authorization).toBe('Bearer sk-media-upstream');
      expect(call.form).toMatchObject({ model: 'whisper-1', language: 'en', response_format: 'verbose_json' });
      expect(call.file!.bytes.equals(speechWav)).toBe(true);
      const [row] = await ledgerRows(f.gw.dbUrl, '/v1/speech/transcribe');
      expect(Number(row.seconds)).toBeCloseTo(expected, 2);
      expect(Number(row.cost_yuan)).toBeCloseTo((Math.ceil(expected) / 60) * 0.02, 10);
    });

    it('leaves segments empty without timestamps', async () => {
      const form = new FormData();
      form.append('file', new Blob([speechMp3]), 'speech.mp3');
      const body = await (
        await fetch(`${f.gw.url}/v1/speech/transcribe`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
          body: form,
        })
      ).json();
      expect(body.segments).toEqual([]);
      expect(body.text).toMatch(/of mp3$/);
      expect(body.language).toBe('en'); // detected upstream as "english", answered as a code
    });

    it('works through the openai SDK (/v1/audio/transcriptions): json and verbose_json', async () => {
      const plain = await client.audio.transcriptions.create({
        file: await toFile(speechMp3, 'speech.mp3'),
        model: 'whisper-1',
      });
      expect(plain.text).toMatch(/^heard/);
      const verbose = await client.audio.transcriptions.create({
        file: await toFile(speechWav, 'speech.wav'),
        model: 'whisper-1',
        response_format: 'verbose_json',
        timestamp_granularities: ['segment'],
      });
      expect(verbose.duration).toBeGreaterThan(2);
      expect(verbose.segments!.length).toBeGreaterThanOrEqual(1);
    });

    it('refuses a missing file (400), non-audio (415), too large (413), and maps upstream failures (502)', async () => {
      const send = async (form: FormData) =>
        fetch(`${f.gw.url}/v1/speech/transcribe`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
          body: form,
        });
      const none = new FormData();
      none.append('language', 'en');
      expect((await send(none)).status).toBe(400);
      const png = new FormData();
      png.append('file', new Blob([renderBlankPng()]), 'picture.mp3');
      expect((await send(png)).status).toBe(415);
      const big = new FormData();
      big.append('file', new Blob([Buffer.alloc(3_100_000)]), 'big.wav');
      expect((await send(big)).status).toBe(413);
      const bad = new FormData();
      bad.append('file', new Blob([speechWav]), 'a.wav');
      bad.append('timestamps', 'maybe');
      expect((await send(bad)).status).toBe(400);
      media.failNext = 500;
      const ok = new FormData();
      ok.append('file', new Blob([speechWav]), 'a.wav');
      const failed = await send(ok);
      expect(failed.status).toBe(502);
    });
  });

  describe('POST /v1/vision/generate', () => {
    it('stores the upstream images and serves them under {cdn_url}, billed per image', async () => {
      const res = await post('/v1/vision/generate', {
        prompt: 'a lighthouse at dawn',
        size: '512x512',
        style: 'anime',
        n: 2,
      });
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.images).toHaveLength(2);
      expect(media.calls[0].json).toMatchObject({
        model: 'dall-e-3',
        n: 2,
        size: '512x512',
        response_format: 'b64_json',
      });
      expect(media.calls[0].json.prompt).toMatch(/^a lighthouse at dawn\n\nStyle: anime/);
      for (const image of body.images) {
        expect(image.url).toMatch(new RegExp(`^${f.gw.url}/cdn/images/\\d{4}/\\d{2}/\\d{2}/[0-9a-f-]{36}\\.png$`));
        expect(image.revised_prompt).toMatch(/^revised: a lighthouse/);
        const file = await fetch(image.url); // public, no key
        expect(file.status).toBe(200);
        expect(file.headers.get('content-type')).toBe('image/png');
        const bytes = Buffer.from(await file.arrayBuffer());
        expect(bytes.subarray(1, 4).toString('ascii')).toBe('PNG');
      }
      const [row] = await ledgerRows(f.gw.dbUrl, '/v1/vision/generate');
      expect({ images: row.images, cost: Number(row.cost_yuan) }).toEqual({ images: 2, cost: 0.05 });
    });

    it('validates n, size and style, and 404s unknown CDN paths', async () => {
      for (const body of [
        { prompt: 'x', n: 5 },
        { prompt: 'x', n: 0 },
        { prompt: 'x', size: '999x999' },
        { prompt: 'x', style: 'cubist' },
        { prompt: '' },
      ]) {
        expect([body, (await post('/v1/vision/generate', body)).status]).toEqual([body, 400]);
      }
      expect((await fetch(`${f.gw.url}/cdn/images/2026/01/01/nope.png`)).status).toBe(404);
      expect((await fetch(`${f.gw.url}/cdn/images/..%2F..%2Fetc%2Fpasswd.png`)).status).toBe(404);
    });

    it('works through the openai SDK (/v1/images/generations), url and b64_json', async () => {
      const byUrl = await client.images.generate({ prompt: 'a red kite', n: 1, size: '1024x1024' });
      expect(byUrl.data![0].url).toMatch(/\/cdn\/images\//);
      const b64 = await client.images.generate({ prompt: 'a blue kite', size: '256x256', response_format: 'b64_json' });
      expect(Buffer.from(b64.data![0].b64_json!, 'base64').subarray(1, 4).toString('ascii')).toBe('PNG');
    });
  });
});
