import { EngineAbortedError, EngineLimiter } from '../engine-limiter';
import { EngineInputError, EngineWorker } from '../engine-worker';
import { renderBlankPng, renderTextPng } from '../testing/media-fixtures';
import { isOcrLanguage, OCR_SLICE_LINES, OcrEngine } from './ocr.engine';

describe('OcrEngine (PaddleOCR, real models)', () => {
  const engine = OcrEngine.shared();
  const MAX_PIXELS = 20_000_000;

  afterAll(() => engine.close());

  it('reads back Chinese and English lines rendered into a PNG', async () => {
    const png = renderTextPng(['会员服务平台', 'Hello OCR 2026']);
    const started = Date.now();
    const lines = await engine.recognize(png, MAX_PIXELS);
    const firstMs = Date.now() - started;
    expect(lines.map((l) => l.content)).toEqual(['会员服务平台', 'Hello OCR 2026']);
    for (const line of lines) {
      expect(line.confidence).toBeGreaterThan(0.8);
      expect(line.bounding_box.width).toBeGreaterThan(100);
    }
    // Second line sits below the first.
    expect(lines[1].bounding_box.y).toBeGreaterThan(lines[0].bounding_box.y + 40);

    const again = Date.now();
    const second = await engine.recognize(renderTextPng(['语音识别 Speech'], { fontSize: 48 }), MAX_PIXELS);
    const warmMs = Date.now() - again;
    expect(second.map((l) => l.content.replace(/\s+/g, ''))).toEqual(['语音识别Speech']);
    console.log(`ocr: first call (with model load) ${firstMs} ms, warm call ${warmMs} ms`);
  });

  it('finds no text on a blank image', async () => {
    expect(await engine.recognize(renderBlankPng(), MAX_PIXELS)).toEqual([]);
  });

  it('maps boxes back to original pixels when a large image is shrunk for detection', async () => {
    const big = renderTextPng(['发票号码 12345678'], { width: 4096, height: 400, fontSize: 120 });
    const [line] = await engine.recognize(big, MAX_PIXELS);
    expect(line.content.replace(/\s+/g, '')).toBe('发票号码12345678');
    expect(line.bounding_box.x).toBeGreaterThan(80);
    expect(line.bounding_box.x).toBeLessThan(160);
    expect(line.bounding_box.width).toBeGreaterThan(900);
  });

  it('rejects bytes that are not an image, and images over the pixel cap', async () => {
    await expect(engine.recognize(Buffer.from('not an image at all'), MAX_PIXELS)).rejects.toBeInstanceOf(
      EngineInputError,
    );
    await expect(engine.recognize(renderBlankPng(400, 300), 100_000)).rejects.toThrow(/at most 100000/);
    // SVG can reference other files and URLs: refused before any decoder sees it.
    const svg = Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><image href="file:///etc/passwd"/></svg>',
    );
    await expect(engine.recognize(svg, MAX_PIXELS)).rejects.toThrow(/unsupported image format/);
    // A tiny PNG header claiming 100000 x 100000 pixels is refused from its header alone.
    const bomb = Buffer.from(renderBlankPng(1, 1));
    bomb.writeUInt32BE(100_000, 16);
    bomb.writeUInt32BE(100_000, 20);
    await expect(engine.recognize(bomb, MAX_PIXELS)).rejects.toBeInstanceOf(EngineInputError);
  });

  it('knows its languages', () => {
    expect(isOcrLanguage('zh-CN')).toBe(true);
    expect(isOcrLanguage('EN')).toBe(true);
    expect(isOcrLanguage('ja')).toBe(false);
  });

  describe('a page of many lines, a slice at a time', () => {
    afterEach(() => jest.restoreAllMocks());
    // 20 lines: three slices of recognition after detection.
    const page = renderTextPng(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? `Invoice line ${i} total 4${i}.00` : `会员服务 第${i}行`)),
      { width: 900, height: 20 * 60 + 40, fontSize: 36 },
    );

    it("answers exactly what the package's own one-call recognition answers, one worker call per slice of lines", async () => {
      const dense = renderTextPng(
        Array.from({ length: 30 }, (_, i) => `row ${i}: 左 ${i}    right ${i * 7}`),
        { width: 1400, height: 30 * 40 + 40, fontSize: 26 },
      );
      for (const image of [page, dense, renderBlankPng()]) {
        const whole = await engine.recognizeWhole(image, MAX_PIXELS, 0);
        const calls = jest.spyOn(EngineWorker.prototype, 'call');
        const sliced = await engine.recognize(image, MAX_PIXELS, 0);
        const methods = calls.mock.calls.map(([method]) => method);
        const found = (await calls.mock.results[methods.indexOf('detectLines')].value) as number;
        expect(methods).toEqual([
          'detectLines',
          ...Array.from({ length: Math.ceil(found / OCR_SLICE_LINES) }, () => 'recognizeLines'),
          'finishLines',
        ]);
        expect(sliced).toEqual(whole);
        calls.mockRestore();
      }
      expect((await engine.recognizeWhole(page, MAX_PIXELS)).length).toBeGreaterThan(2 * OCR_SLICE_LINES);
    });

    it("another caller's image is read between a page's slices, and a caller that leaves stops within a slice", async () => {
      const detected = (calls: jest.SpyInstance) => async () => {
        while (!calls.mock.calls.some(([method]) => method === 'detectLines'))
          await new Promise((r) => setImmediate(r));
        await calls.mock.results[calls.mock.calls.findIndex(([m]) => m === 'detectLines')].value;
      };
      // The other caller comes once the page's lines are found.
      const watch = jest.spyOn(EngineWorker.prototype, 'call');
      let pageDone = false;
      const big = engine.recognize(page, MAX_PIXELS, 0.5, { key: 'page' }).then(() => (pageDone = true));
      await detected(watch)();
      await engine.recognize(renderTextPng(['Hello OCR 2026']), MAX_PIXELS, 0.5, { key: 'other' });
      expect(pageDone).toBe(false);
      await big;
      watch.mockRestore();

      const calls = jest.spyOn(EngineWorker.prototype, 'call');
      const posts = jest.spyOn(EngineWorker.prototype, 'post');
      const leaving = new AbortController();
      const left = engine.recognize(page, MAX_PIXELS, 0.5, { signal: leaving.signal });
      await detected(calls)();
      leaving.abort();
      await expect(left).rejects.toBeInstanceOf(EngineAbortedError);
      expect(calls.mock.calls.filter(([m]) => m === 'recognizeLines').length).toBeLessThanOrEqual(1);
      expect(posts.mock.calls).toEqual([['endJob', [expect.any(Number)]]]);
      expect(EngineLimiter.shared().stats.open).toBe(0);
    });

    it("refuses a page past the key's share of engine work before decoding it", async () => {
      const limiter = EngineLimiter.shared();
      const { maxConcurrentPerKey, maxQueuedPerKey } = limiter.current;
      const closes = Array.from({ length: maxConcurrentPerKey + maxQueuedPerKey }, () => limiter.openWork('full-key'));
      // Decoding the image is engine work too (normalizePng runs under the limiter).
      const decode = jest.spyOn(EngineLimiter.prototype, 'run');
      const calls = jest.spyOn(EngineWorker.prototype, 'call');
      try {
        await expect(engine.recognize(page, MAX_PIXELS, 0.5, { key: 'full-key' })).rejects.toMatchObject({
          scope: 'key',
        });
        expect([decode.mock.calls.length, calls.mock.calls.length]).toEqual([0, 0]);
      } finally {
        for (const close of closes) close();
      }
    });
  });
});
