// The media aliases honour the client's `model` through the media catalog (providers file
// `mediaModels`), pass the transcription output formats and gpt-image-1 fields to the upstream, and map
// every OpenAI voice name onto a local voice.
import OpenAI, { toFile } from 'openai';
import { decodeAudio, SpeechSynthesisEngine } from '@app/engines';
import { GatewayFixture, providersDoc, startGatewayFixture } from '../gateway-fixture';
import { ledgerRows } from './ledger';
import { MediaUpstream, startMediaUpstream } from './media-upstream';

describe('media aliases (model mapping, output formats, voices, image fields)', () => {
  let f: GatewayFixture;
  let media: MediaUpstream;
  let key: string;
  let keyId: string;
  let client: OpenAI;
  let speechWav: Buffer;

  beforeAll(async () => {
    media = await startMediaUpstream();
    f = await startGatewayFixture(
      {
        AI_TRANSCRIBE_BASE_URL: media.url,
        AI_TRANSCRIBE_API_KEY: 'sk-media-upstream',
        AI_IMAGES_BASE_URL: media.url,
        AI_IMAGES_API_KEY: 'sk-media-upstream',
      },
      ({ openai, backup, anthropic }) => ({
        ...providersDoc(openai, backup, anthropic),
        // The operator serves gpt-4o-mini-transcribe with another upstream model, at its own price.
        mediaModels: {
          'gpt-4o-mini-transcribe': { upstream: 'whisper-large-v3', price: 0.6 },
          // gpt-image-1 costs the operator more the higher the quality: priced by it.
          'gpt-image-1': { qualityPrices: { low: 0.02, high: 0.3 } },
          // The default model (AI_IMAGES_MODEL dall-e-3), as the contract route uses it.
          'dall-e-3': { qualityPrices: { standard: 0.05, hd: 0.2 } },
        },
      }),
    );
    const created = await f.createKey({ name: 'media-aliases', scopes: ['speech', 'vision'] });
    key = created.key;
    keyId = created.id;
    client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0, timeout: 20_000 });
    speechWav = (
      await SpeechSynthesisEngine.shared().synthesize('The weather is nice today. Please call me tomorrow.', {
        voice: 'en-US-JennyNeural',
        format: 'wav',
      })
    ).audio;
  });
  afterAll(async () => {
    await f?.close();
    await media?.close();
    await SpeechSynthesisEngine.shared().close();
  });
  beforeEach(() => (media.calls = []));

  describe('transcriptions', () => {
    it('a gpt-4o-transcribe request reaches the upstream as gpt-4o-transcribe, its json answer passed through', async () => {
      const out: any = await client.audio.transcriptions.create({
        file: await toFile(speechWav, 'speech.wav'),
        model: 'gpt-4o-transcribe',
      });
      expect(out.text).toMatch(/^heard \d utterance\(s\)/);
      expect(out.model_seen).toBe('gpt-4o-transcribe');
      expect(media.calls).toHaveLength(1);
      expect(media.calls[0].form).toMatchObject({ model: 'gpt-4o-transcribe', response_format: 'json' });
    });

    it('the providers file maps a model to another upstream name and price', async () => {
      await client.audio.transcriptions.create({
        file: await toFile(speechWav, 'speech.wav'),
        model: 'gpt-4o-mini-transcribe',
      });
      expect(media.calls[0].form!.model).toBe('whisper-large-v3');
      const duration = (await decodeAudio(speechWav, { keepPcm: false })).duration;
      // The test before made this key's first transcription row.
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/speech/transcribe', 2, 5000, keyId);
      const row = rows.find((r) => r.model === 'gpt-4o-mini-transcribe');
      expect(row).toBeDefined();
      expect(Number(row!.cost_yuan)).toBeCloseTo((Math.ceil(duration) / 60) * 0.6, 6);
    });

    it('srt, vtt and text come from the upstream as it wrote them (text/plain)', async () => {
      for (const [format, start] of [
        ['srt', '1\nupstream-srt '],
        ['vtt', 'WEBVTT\n\nupstream-vtt '],
        ['text', 'heard '],
      ] as const) {
        const form = new FormData();
        form.append('file', new Blob([speechWav]), 'speech.wav');
        form.append('model', 'whisper-1');
        form.append('response_format', format);
        const res = await fetch(`${f.gw.url}/v1/audio/transcriptions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
          body: form,
        });
        expect([format, res.status]).toEqual([format, 200]);
        expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
        expect((await res.text()).startsWith(start)).toBe(true);
      }
      expect(media.calls.map((c) => c.form!.response_format)).toEqual(['srt', 'vtt', 'text']);
    });

    it('verbose_json with timestamp_granularities word and segment is passed on (openai SDK)', async () => {
      const out: any = await client.audio.transcriptions.create({
        file: await toFile(speechWav, 'speech.wav'),
        model: 'whisper-1',
        response_format: 'verbose_json',
        timestamp_granularities: ['word', 'segment'],
      });
      expect(out.words).toEqual([{ word: 'speech', start: 0, end: 0.5 }]);
      expect(out.segments.length).toBeGreaterThanOrEqual(1);
    });

    it('unknown models are 404 model_not_found, an image model 400, a bad format or granularity 400 naming it', async () => {
      const unknown: any = await client.audio.transcriptions
        .create({ file: await toFile(speechWav, 'a.wav'), model: 'whisper-9' })
        .catch((e) => e);
      expect(unknown.status).toBe(404);
      expect(unknown.error).toMatchObject({ code: 'model_not_found', param: 'model' });
      const image: any = await client.audio.transcriptions
        .create({ file: await toFile(speechWav, 'a.wav'), model: 'dall-e-3' })
        .catch((e) => e);
      expect(image.status).toBe(400);
      expect(image.error).toMatchObject({ param: 'model' });
      for (const [field, value, param] of [
        ['response_format', 'docx', 'response_format'],
        ['timestamp_granularities[]', 'syllable', 'timestamp_granularities'],
      ]) {
        const form = new FormData();
        form.append('file', new Blob([speechWav]), 'a.wav');
        form.append(field, value);
        const res = await fetch(`${f.gw.url}/v1/audio/transcriptions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
          body: form,
        });
        expect([field, res.status]).toEqual([field, 400]);
        expect((await res.json()).error.param).toBe(param);
      }
      expect(media.calls).toHaveLength(0);
    });
  });

  describe('speech voices', () => {
    it('OpenAI voices alloy, marin and cedar speak with the local engine', async () => {
      for (const voice of ['alloy', 'marin', 'cedar']) {
        const res = await client.audio.speech.create({
          model: 'gpt-4o-mini-tts',
          input: 'Hello there.',
          voice: voice,
          response_format: 'wav',
        });
        const decoded = await decodeAudio(Buffer.from(await res.arrayBuffer()), { keepPcm: false });
        expect([voice, decoded.container]).toEqual([voice, 'wav']);
        expect(decoded.duration).toBeGreaterThan(0.3);
      }
      const bad: any = await client.audio.speech
        .create({ model: 'tts-1', input: 'x', voice: 'robot' as any })
        .catch((e) => e);
      expect(bad.status).toBe(400);
    });
  });

  describe('images', () => {
    it('size auto and the gpt-image-1 fields reach the upstream; billed by the size it answered', async () => {
      const out = await client.images.generate({
        model: 'gpt-image-1',
        prompt: 'a lighthouse',
        size: 'auto',
        quality: 'high',
        background: 'opaque',
        output_format: 'webp',
        output_compression: 80,
        moderation: 'low',
        n: 1,
      });
      expect(media.calls).toHaveLength(1);
      const sent = media.calls[0].json;
      expect(sent).toMatchObject({
        model: 'gpt-image-1',
        size: 'auto',
        quality: 'high',
        background: 'opaque',
        output_format: 'webp',
        output_compression: 80,
        moderation: 'low',
        n: 1,
      });
      // gpt-image-1 refuses response_format (it always answers b64_json): not sent.
      expect(sent).not.toHaveProperty('response_format');
      expect(out.data![0].url).toMatch(/\/cdn\/images\/.*\.webp$/);
      const file = await fetch(out.data![0].url!);
      expect(file.headers.get('content-type')).toBe('image/webp');
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/vision/generate', 1, 5000, keyId);
      // 1536x1024 answered for auto, at the quality high price: 1.5 x 0.30 yuan.
      expect(rows.find((r) => r.model === 'gpt-image-1')).toMatchObject({ images: 1 });
      expect(Number(rows.find((r) => r.model === 'gpt-image-1')!.cost_yuan)).toBeCloseTo(0.45, 6);
    });

    it('gpt-image-1 is priced by quality where the providers file sets qualityPrices; a quality not listed (or none: auto) at the highest', async () => {
      const own = await f.createKey({ name: 'image-quality', scopes: ['vision'] });
      const sdk = new OpenAI({ apiKey: own.key, baseURL: `${f.gw.url}/v1`, maxRetries: 0, timeout: 20_000 });
      await sdk.images.generate({ model: 'gpt-image-1', prompt: 'a lighthouse', size: '1024x1024', quality: 'low' });
      await sdk.images.generate({
        model: 'gpt-image-1',
        prompt: 'a lighthouse',
        size: '1024x1024',
        quality: 'high',
        n: 2,
      });
      await sdk.images.generate({ model: 'gpt-image-1', prompt: 'a lighthouse', size: '1024x1024', quality: 'medium' });
      await sdk.images.generate({ model: 'gpt-image-1', prompt: 'a lighthouse', size: '1024x1024' });
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/vision/generate', 4, 5000, own.id);
      expect(rows.map((r) => Number(r.cost_yuan))).toEqual([0.02, 0.6, 0.3, 0.3]);
    });

    it('the contract route /v1/vision/generate uses AI_IMAGES_MODEL from the media catalog: its upstream name and its price (at the quality it uses by default)', async () => {
      const own = await f.createKey({ name: 'image-contract', scopes: ['vision'] });
      const res = await fetch(`${f.gw.url}/v1/vision/generate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${own.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'a lighthouse', size: '1024x1024', n: 2 }),
      });
      expect(res.status).toBe(200);
      expect(media.calls[0].json).toMatchObject({ model: 'dall-e-3', response_format: 'b64_json', n: 2 });
      const rows = await ledgerRows(f.gw.dbUrl, '/v1/vision/generate', 1, 5000, own.id);
      expect(rows.map((r) => [r.model, Number(r.cost_yuan)])).toEqual([['dall-e-3', 0.1]]);
    });

    it('size auto passes through on the default model too; a field the model does not take is a 400 naming it', async () => {
      const out = await client.images.generate({ prompt: 'a kite', size: 'auto' });
      expect(out.data).toHaveLength(1);
      expect(media.calls[0].json).toMatchObject({ model: 'dall-e-3', size: 'auto', response_format: 'b64_json' });
      media.calls = [];
      const refused: any = await client.images
        .generate({ model: 'dall-e-3', prompt: 'a kite', background: 'transparent' })
        .catch((e) => e);
      expect(refused.status).toBe(400);
      expect(refused.error).toMatchObject({ code: 'unsupported_parameter', param: 'background' });
      const unknown: any = await client.images.generate({ model: 'midjourney-7', prompt: 'a kite' }).catch((e) => e);
      expect(unknown.status).toBe(404);
      expect(media.calls).toHaveLength(0);
    });
  });
});
