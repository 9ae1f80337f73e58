import { catalogEntry, DEFAULT_MEDIA_MODELS, mergeMediaModels } from './catalog';

describe('media catalog (mediaModels in the providers file)', () => {
  const fail = (m: string) => new Error(m);

  it('keeps the defaults and maps a name to another upstream model and price', () => {
    const models = mergeMediaModels({ 'gpt-4o-transcribe': { upstream: 'whisper-large-v3', price: 0.03 }, 'my-sd': { kind: 'image', price: 0.05, fields: ['quality'] } }, fail);
    expect(models['gpt-4o-transcribe']).toMatchObject({ kind: 'transcription', upstream: 'whisper-large-v3', price: 0.03 });
    expect(models['my-sd']).toMatchObject({ kind: 'image', upstream: 'my-sd', price: 0.05, fields: ['quality'], responseFormat: true });
    expect(models['whisper-1']).toEqual(DEFAULT_MEDIA_MODELS['whisper-1']);
    expect(models['gpt-image-1']).toMatchObject({ upstream: 'gpt-image-1', responseFormat: false });
  });

  it('names the bad path', () => {
    expect(() => mergeMediaModels({ x: { price: 1 } }, fail)).toThrow('mediaModels.x.kind must be transcription or image');
    expect(() => mergeMediaModels({ 'whisper-1': { price: -1 } }, fail)).toThrow('mediaModels.whisper-1.price');
    expect(() => mergeMediaModels({ 'dall-e-3': { fields: ['style'] } }, fail)).toThrow('mediaModels.dall-e-3.fields');
    expect(() => mergeMediaModels([], fail)).toThrow('mediaModels must be an object');
  });

  it('takes a model named __proto__ as an ordinary entry and finds no Object.prototype member', () => {
    const models = mergeMediaModels(JSON.parse('{"__proto__":{"kind":"image","price":0.2}}'), fail);
    expect(Object.hasOwn(models, '__proto__')).toBe(true);
    expect(models['__proto__']).toMatchObject({ name: '__proto__', kind: 'image', price: 0.2 });
    expect(models['kind' as string]).toBeUndefined();
    for (const name of ['constructor', 'toString', 'hasOwnProperty']) {
      expect([name, catalogEntry(models, name), catalogEntry(DEFAULT_MEDIA_MODELS, name)]).toEqual([name, undefined, undefined]);
    }
    expect(catalogEntry(models, 'whisper-1')).toMatchObject({ kind: 'transcription' });
  });
});
