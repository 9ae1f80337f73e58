import { readFileSync } from 'fs';
import { EngineInputError } from '../engine-worker';
import { facesPhotoPath, renderBlankPng, renderTextPng } from '../testing/media-fixtures';
import { VisionEngine } from './vision.engine';

describe('VisionEngine (Human + tfjs WASM, real models)', () => {
  const engine = VisionEngine.shared();
  const MAX_PIXELS = 20_000_000;
  const all = { faces: true, objects: true, labels: true, maxPixels: MAX_PIXELS };

  afterAll(() => engine.close());

  it('finds the five portrait faces and the people in a photo shipped by @vladmandic/human', async () => {
    const photo = readFileSync(facesPhotoPath());
    const started = Date.now();
    const result = await engine.detect(photo, all);
    const firstMs = Date.now() - started;

    // The portrait row spans y 345..500; every confident face must lie in it or in the group photos above.
    const portraits = result.faces!.filter(
      (f) => f.bounding_box.y > 330 && f.bounding_box.y + f.bounding_box.height < 510,
    );
    expect(portraits.length).toBe(5);
    for (const face of portraits) {
      expect(face.confidence).toBeGreaterThanOrEqual(0.5);
      expect(face.bounding_box.width).toBeGreaterThan(100);
      expect(face.bounding_box.width).toBeLessThan(170);
    }
    const xs = portraits.map((f) => f.bounding_box.x).sort((a, b) => a - b);
    for (let i = 1; i < xs.length; i++) expect(xs[i] - xs[i - 1]).toBeGreaterThan(100);

    expect(result.objects!.filter((o) => o.name === 'person').length).toBeGreaterThanOrEqual(3);
    expect(result.labels!.map((l) => l.name)).toEqual(expect.arrayContaining(['person', 'face']));

    const again = Date.now();
    await engine.detect(photo, all);
    console.log(`vision: first call (with model load) ${firstMs} ms, warm call ${Date.now() - again} ms`);
  });

  it('frees every tensor it makes (no growth across calls)', async () => {
    const photo = readFileSync(facesPhotoPath());
    await engine.detect(photo, all);
    const before = await engine.tensorCount();
    for (let i = 0; i < 3; i++) await engine.detect(photo, all);
    expect(await engine.tensorCount()).toBe(before);
  });

  it('returns only the features asked for', async () => {
    const result = await engine.detect(readFileSync(facesPhotoPath()), {
      faces: true,
      objects: false,
      labels: false,
      maxPixels: MAX_PIXELS,
    });
    expect(Object.keys(result)).toEqual(['faces']);
    expect(result.faces!.length).toBeGreaterThanOrEqual(5);
  });

  it('finds nothing in a blank image or a page of text', async () => {
    for (const image of [renderBlankPng(), renderTextPng(['没有人脸 no faces here'])]) {
      const result = await engine.detect(image, all);
      expect(result).toEqual({ faces: [], objects: [], labels: [] });
    }
  });

  it('scales boxes back to the original pixels when it shrinks a large image', async () => {
    const sharp = (await import('sharp')).default;
    const big = await sharp(readFileSync(facesPhotoPath())).resize(2400).jpeg().toBuffer(); // 3x
    const result = await engine.detect(big, { faces: true, objects: false, labels: false, maxPixels: MAX_PIXELS });
    const portraits = result.faces!.filter((f) => f.bounding_box.y > 990 && f.bounding_box.y < 1150);
    expect(portraits.length).toBe(5);
    for (const f of portraits) expect(f.bounding_box.width).toBeGreaterThan(300);
  });

  it('rejects non-images and images over the pixel cap', async () => {
    await expect(engine.detect(Buffer.from('GIF89a but not really'), all)).rejects.toBeInstanceOf(EngineInputError);
    await expect(engine.detect(readFileSync(facesPhotoPath()), { ...all, maxPixels: 500_000 })).rejects.toThrow(
      /pixels/,
    );
  });
});
