import {
  catalogEntry,
  DEFAULT_MEDIA_MODELS,
  imageEditInputPrice,
  imagePricePer1024,
  mergeMediaModels,
} from './catalog';
import { parseProvidersConfig } from './providers-file';
import { LlmRouter } from './router';

describe('media catalog (mediaModels in the providers file)', () => {
  const fail = (m: string) => new Error(m);

  it('keeps the defaults and maps a name to another upstream model and price', () => {
    const models = mergeMediaModels(
      {
        'gpt-4o-transcribe': { upstream: 'whisper-large-v3', price: 0.03 },
        'my-sd': { kind: 'image', price: 0.05, fields: ['quality'] },
      },
      fail,
    );
    expect(models['gpt-4o-transcribe']).toMatchObject({
      kind: 'transcription',
      upstream: 'whisper-large-v3',
      price: 0.03,
    });
    expect(models['my-sd']).toMatchObject({
      kind: 'image',
      upstream: 'my-sd',
      price: 0.05,
      fields: ['quality'],
      responseFormat: true,
    });
    expect(models['whisper-1']).toEqual(DEFAULT_MEDIA_MODELS['whisper-1']);
    expect(models['gpt-image-1']).toMatchObject({ upstream: 'gpt-image-1', responseFormat: false });
  });

  it('prices an image model by quality where qualityPrices says so; a quality not listed at the highest price', () => {
    const models = mergeMediaModels(
      {
        'gpt-image-1': { qualityPrices: { low: 0.02, high: 0.3, auto: 0.2 } },
        'dall-e-3': { qualityPrices: { hd: 0.05 } },
        'my-sd': { kind: 'image', price: 0.05 },
      },
      fail,
    );
    const gpt = models['gpt-image-1'];
    expect([
      imagePricePer1024(gpt, 'low'),
      imagePricePer1024(gpt, 'high'),
      imagePricePer1024(gpt, 'medium'),
      imagePricePer1024(gpt, undefined),
      imagePricePer1024(gpt, 'hd'),
    ]).toEqual([0.02, 0.3, 0.3, 0.2, 0.3]);
    // Never below the model's own price either.
    expect(imagePricePer1024(models['dall-e-3'], 'standard')).toBe(0.1);
    // No quality sent: the one the model uses then (dall-e-3 standard, not the highest).
    const dalle = mergeMediaModels(
      {
        'dall-e-3': { qualityPrices: { standard: 0.04, hd: 0.08 } },
        'my-img': { kind: 'image', qualityPrices: { low: 0.01, high: 0.5 }, defaultQuality: 'low' },
      },
      fail,
    );
    expect([
      imagePricePer1024(dalle['dall-e-3'], undefined),
      imagePricePer1024(dalle['dall-e-3'], 'hd'),
      imagePricePer1024(dalle['my-img'], undefined),
    ]).toEqual([0.04, 0.08, 0.01]);
    expect(() => mergeMediaModels({ 'dall-e-3': { defaultQuality: 'ultra' } }, fail)).toThrow(
      'mediaModels.dall-e-3.defaultQuality must be one of',
    );
    expect(() => mergeMediaModels({ 'whisper-1': { defaultQuality: 'low' } }, fail)).toThrow(
      'mediaModels.whisper-1.defaultQuality',
    );
    expect(imagePricePer1024(models['my-sd'], 'high')).toBe(0.05);
    expect(imagePricePer1024(gpt, 'toString')).toBe(0.3);
    // The defaults set none: the contract's flat price per image.
    expect(mergeMediaModels({ 'gpt-image-1': { price: 0.2 } }, fail)['gpt-image-1'].qualityPrices).toBeUndefined();
    expect(() => mergeMediaModels({ 'gpt-image-1': { qualityPrices: { ultra: 1 } } }, fail)).toThrow(
      'mediaModels.gpt-image-1.qualityPrices.ultra: the qualities are standard, hd, low, medium, high, auto',
    );
    expect(() => mergeMediaModels({ 'gpt-image-1': { qualityPrices: { high: -1 } } }, fail)).toThrow(
      'mediaModels.gpt-image-1.qualityPrices.high must be a number >= 0',
    );
    expect(() => mergeMediaModels({ 'gpt-image-1': { qualityPrices: [1] } }, fail)).toThrow(
      'mediaModels.gpt-image-1.qualityPrices must be an object',
    );
    expect(() => mergeMediaModels({ 'whisper-1': { qualityPrices: { low: 1 } } }, fail)).toThrow(
      'mediaModels.whisper-1.qualityPrices is for image models only',
    );
    expect(() => mergeMediaModels(JSON.parse('{"gpt-image-1":{"qualityPrices":{"__proto__":1}}}'), fail)).toThrow(
      'qualityPrices.__proto__',
    );
  });

  it("prices an edit's input images where inputImagePrice says so (high fidelity never below it); image models only", () => {
    const models = mergeMediaModels(
      {
        'gpt-image-1': { inputImagePrice: 0.01, highFidelityInputImagePrice: 0.05 },
        'my-img': { kind: 'image', inputImagePrice: 0.02 },
      },
      fail,
    );
    expect(models['gpt-image-1'].inputImagePrice).toEqual({ standard: 0.01, highFidelity: 0.05 });
    expect([
      imageEditInputPrice(models['gpt-image-1'], 3, undefined),
      imageEditInputPrice(models['gpt-image-1'], 3, 'low'),
    ]).toEqual([0.03, 0.03]);
    expect(imageEditInputPrice(models['gpt-image-1'], 3, 'high')).toBeCloseTo(0.15, 10);
    expect(imageEditInputPrice(models['my-img'], 2, 'high')).toBe(0.04);
    // The defaults set none: input images are free.
    expect(imageEditInputPrice(mergeMediaModels({}, fail)['gpt-image-1'], 4, 'high')).toBe(0);
    expect(() => mergeMediaModels({ 'gpt-image-1': { inputImagePrice: -1 } }, fail)).toThrow(
      'mediaModels.gpt-image-1.inputImagePrice must be a number >= 0',
    );
    expect(() => mergeMediaModels({ 'gpt-image-1': { highFidelityInputImagePrice: '1' } }, fail)).toThrow(
      'mediaModels.gpt-image-1.highFidelityInputImagePrice must be a number >= 0',
    );
    expect(() => mergeMediaModels({ 'whisper-1': { inputImagePrice: 0.1 } }, fail)).toThrow(
      'mediaModels.whisper-1.inputImagePrice is for image models only',
    );
  });

  it('names the bad path', () => {
    expect(() => mergeMediaModels({ x: { price: 1 } }, fail)).toThrow(
      'mediaModels.x.kind must be transcription, image or moderation',
    );
    expect(() => mergeMediaModels({ 'whisper-1': { price: -1 } }, fail)).toThrow('mediaModels.whisper-1.price');
    expect(() => mergeMediaModels({ 'dall-e-3': { fields: ['style'] } }, fail)).toThrow('mediaModels.dall-e-3.fields');
    expect(() => mergeMediaModels([], fail)).toThrow('mediaModels must be an object');
  });

  it('moderation models: priced per input from the providers file, served by openai deployments only', () => {
    const raw = (type: string) => ({
      mediaModels: { 'omni-moderation-latest': { price: 0.01 }, 'my-guard': { kind: 'moderation', price: 0.002 } },
      deployments: [
        {
          name: 'mod',
          type,
          baseUrl: 'https://api.example.com/v1',
          models: ['omni-moderation-latest', { name: 'my-guard', upstream: 'llama-guard' }],
        },
      ],
    });
    const config = parseProvidersConfig(raw('openai'), {});
    expect(config.mediaModels['omni-moderation-latest']).toMatchObject({ kind: 'moderation', price: 0.01 });
    expect(config.mediaModels['my-guard']).toMatchObject({ kind: 'moderation', price: 0.002 });
    expect(config.deployments[0].models).toEqual([
      { name: 'omni-moderation-latest', upstream: 'omni-moderation-latest' },
      { name: 'my-guard', upstream: 'llama-guard' },
    ]);
    expect(() => parseProvidersConfig(raw('anthropic'), {})).toThrow(
      'deployments[0]: moderation model "omni-moderation-latest" can be served by openai deployments only',
    );
    // Not a chat model: /v1/models lists chat and embeddings only.
    expect(new LlmRouter(config).servedModels()).toEqual([]);
  });

  it('takes a model named __proto__ as an ordinary entry and finds no Object.prototype member', () => {
    const models = mergeMediaModels(JSON.parse('{"__proto__":{"kind":"image","price":0.2}}'), fail);
    expect(Object.hasOwn(models, '__proto__')).toBe(true);
    expect(models['__proto__']).toMatchObject({ name: '__proto__', kind: 'image', price: 0.2 });
    expect(models['kind' as string]).toBeUndefined();
    for (const name of ['constructor', 'toString', 'hasOwnProperty']) {
      expect([name, catalogEntry(models, name), catalogEntry(DEFAULT_MEDIA_MODELS, name)]).toEqual([
        name,
        undefined,
        undefined,
      ]);
    }
    expect(catalogEntry(models, 'whisper-1')).toMatchObject({ kind: 'transcription' });
  });
});
