// One local engine measured in its own process (so its RSS is its own): run by bench/suites/engines.js
// as `node bench/lib/engines-worker.js <ocr|tts|faces|embeddings> <calls>`.
// Uses the compiled engines (dist/libs/engines/src). Prints one JSON line on stdout.
'use strict';
const path = require('path');
const { summarize } = require('./stats');

const root = path.resolve(__dirname, '..', '..');
const engines = require(path.join(root, 'dist', 'libs', 'engines', 'src'));
const rss = () => process.memoryUsage().rss / 2 ** 20;
const MAX_PIXELS = 40_000_000;

const SENTENCES = Array.from(
  { length: 64 },
  (_, i) =>
    `Sentence number ${i + 1} talks about ${['cats', 'the weather', 'databases', 'music', 'travel', 'cooking', 'football', 'astronomy'][i % 8]} and why it matters today.`,
);

function textImage() {
  const { createCanvas, GlobalFonts } = require('@napi-rs/canvas');
  GlobalFonts.registerFromPath(
    require.resolve('@expo-google-fonts/noto-sans-sc/400Regular/NotoSansSC_400Regular.ttf'),
    'Noto Sans SC Bench',
  );
  const canvas = createCanvas(1000, 200);
  const g = canvas.getContext('2d');
  g.fillStyle = '#ffffff';
  g.fillRect(0, 0, 1000, 200);
  g.fillStyle = '#000000';
  g.font = '40px "Noto Sans SC Bench"';
  g.fillText('Invoice 2026-11 总计 1280 元', 30, 80);
  g.fillText('Benchmark text line two', 30, 160);
  return canvas.toBuffer('image/png');
}

async function facesPhoto() {
  const sharp = require('sharp');
  const src = path.join(
    path.dirname(require.resolve('@vladmandic/human')),
    '..',
    'assets',
    'screenshot-facedetect.jpg',
  );
  return sharp(src).resize(1920, 1280, { fit: 'fill' }).jpeg({ quality: 90 }).toBuffer();
}

async function main() {
  const [kind, callsArg] = process.argv.slice(2);
  const calls = Number(callsArg || 5);
  let call;
  let input = {};
  let close;
  if (kind === 'ocr') {
    const image = textImage();
    const engine = engines.OcrEngine.shared();
    call = async () => (await engine.recognize(image, MAX_PIXELS)).map((l) => l.content).join(' / ');
    close = () => engine.close();
    input = { image: '1000x200 PNG, 2 text lines' };
  } else if (kind === 'tts') {
    const text = 'The quick brown fox jumps over the lazy dog while the gateway benchmark measures speech synth.'
      .slice(0, 100)
      .padEnd(100, '.');
    const engine = engines.SpeechSynthesisEngine.shared();
    if (!engine.installed) throw new Error('optional package @echogarden/espeak-ng-emscripten is not installed');
    call = async () => {
      const out = await engine.synthesize(text, { voice: 'en-US-GuyNeural', format: 'mp3' });
      return `${out.audio ? out.audio.length : out.bytes ? out.bytes.length : '?'} bytes`;
    };
    close = () => engine.close();
    input = { text: `${text.length} characters, mp3` };
  } else if (kind === 'faces') {
    const photo = await facesPhoto();
    const engine = engines.VisionEngine.shared();
    call = async () =>
      `${(await engine.detect(photo, { faces: true, objects: false, labels: false, maxPixels: MAX_PIXELS })).faces.length} faces`;
    close = () => engine.close();
    input = { image: '1920x1280 JPEG (Human sample screenshot, resized)' };
  } else if (kind === 'embeddings') {
    const engine = engines.TextEmbeddingEngine.shared();
    close = () => engine.close();
    const before = rss();
    const t0 = performance.now();
    await engine.embed([SENTENCES[0]]);
    const coldMs = performance.now() - t0;
    const batched = [];
    const single = [];
    const rounds = Math.max(1, Math.min(3, calls));
    for (let r = 0; r < rounds; r++) {
      let t = performance.now();
      const vectors = await engine.embed(SENTENCES);
      if (vectors.length !== 64) throw new Error('wrong number of vectors');
      batched.push(performance.now() - t);
      t = performance.now();
      for (const s of SENTENCES) await engine.embed([s]);
      single.push(performance.now() - t);
    }
    const after = rss();
    await close();
    return {
      kind,
      input: { sentences: 64 },
      coldMs,
      batched: summarize(batched),
      oneByOne: summarize(single),
      rssBeforeMb: before,
      rssAfterMb: after,
    };
  } else {
    throw new Error(`unknown engine ${kind}`);
  }
  const before = rss();
  const t0 = performance.now();
  const first = await call();
  const coldMs = performance.now() - t0;
  const times = [];
  let peak = rss();
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await call();
    times.push(performance.now() - t);
    peak = Math.max(peak, rss());
  }
  const after = rss();
  await close();
  return {
    kind,
    input,
    output: String(first).slice(0, 120),
    coldMs,
    warm: summarize(times),
    rssBeforeMb: before,
    rssAfterMb: after,
    rssPeakMb: peak,
  };
}

main()
  .then((r) => {
    process.stdout.write(`${JSON.stringify(r)}\n`);
    process.exit(0);
  })
  .catch((e) => {
    process.stdout.write(`${JSON.stringify({ error: String((e && e.message) || e) })}\n`);
    process.exit(0);
  });
