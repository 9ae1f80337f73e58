import { createServer } from 'http';
import { AddressInfo } from 'net';
import { EngineInputError } from '../engine-worker';
import { renderBlankPng } from '../testing/media-fixtures';
import { decodeAudio, encodeWav, resamplePcm, runFfmpeg } from './audio-codec';

/** A 1.5 s 440 Hz tone at 16 kHz followed by 0.5 s of silence. */
function tone(): Int16Array {
  const rate = 16_000;
  const pcm = new Int16Array(rate * 2);
  for (let i = 0; i < rate * 1.5; i++) pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate));
  return pcm;
}

async function encodeWith(args: string[], wav: Buffer): Promise<Buffer> {
  const run = await runFfmpeg(['-f', 'wav', '-i', 'pipe:0', ...args, 'pipe:1'], wav);
  expect(run.code).toBe(0);
  return run.stdout;
}

describe('audio codec (ffmpeg from @ffmpeg-installer)', () => {
  const wav = encodeWav(tone(), 16_000);

  it('measures the real duration of wav, mp3, m4a, ogg, webm and flac', async () => {
    const files: Record<string, Buffer> = {
      wav,
      mp3: await encodeWith(['-c:a', 'libmp3lame', '-f', 'mp3'], wav),
      ogg: await encodeWith(['-c:a', 'libvorbis', '-f', 'ogg'], wav),
      webm: await encodeWith(['-c:a', 'libopus', '-f', 'webm'], wav),
      flac: await encodeWith(['-c:a', 'flac', '-f', 'flac'], wav),
      // mp4 needs a seekable output for its index: fragmented mp4 streams to a pipe.
      m4a: await encodeWith(['-c:a', 'aac', '-movflags', 'frag_keyframe+empty_moov', '-f', 'mp4'], wav),
    };
    for (const [container, bytes] of Object.entries(files)) {
      const started = Date.now();
      const decoded = await decodeAudio(bytes, { keepPcm: false });
      expect({ container: decoded.container, close: Math.abs(decoded.duration - 2) < 0.12 }).toEqual({
        container,
        close: true,
      });
      console.log(
        `audio: ${container} ${bytes.length} bytes -> ${decoded.duration.toFixed(3)} s in ${Date.now() - started} ms`,
      );
    }
  });

  it('decodes to 16 kHz mono PCM that keeps the tone and the silence', async () => {
    const decoded = await decodeAudio(wav);
    expect(decoded.pcm.length).toBe(32_000);
    expect(Math.max(...decoded.pcm.subarray(0, 24_000))).toBeGreaterThan(7000);
    expect(Math.max(...decoded.pcm.subarray(24_100).map(Math.abs))).toBeLessThan(50);
  });

  it('refuses non-audio, empty, truncated and over-long input', async () => {
    await expect(decodeAudio(Buffer.alloc(0))).rejects.toBeInstanceOf(EngineInputError);
    await expect(decodeAudio(Buffer.from('this is not audio, just text '.repeat(20)))).rejects.toBeInstanceOf(
      EngineInputError,
    );
    await expect(decodeAudio(renderBlankPng())).rejects.toThrow(/unsupported audio format|no decodable audio/);
    await expect(decodeAudio(wav.subarray(0, 30))).rejects.toBeInstanceOf(EngineInputError);
    await expect(decodeAudio(wav, { maxSeconds: 1 })).rejects.toThrow(/too long/);
  });

  it('resamples by ratio', () => {
    expect(resamplePcm(new Int16Array(22_050), 22_050, 16_000).length).toBe(16_000);
  });

  it('never lets an uploaded playlist or reference file make ffmpeg open a URL (class sweep: SSRF through ffmpeg)', async () => {
    const hits: string[] = [];
    const server = createServer((req, res) => {
      hits.push(req.url!);
      res.writeHead(200, { 'content-type': 'audio/wav' }).end(wav);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const payloads = [
        `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n${url}/hls.wav\n#EXT-X-ENDLIST\n`,
        `ffconcat version 1.0\nfile '${url}/concat.wav'\n`,
        `v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nt=0 0\nm=audio 9 RTP/AVP 0\n`,
      ];
      for (const p of payloads) await expect(decodeAudio(Buffer.from(p))).rejects.toThrow(/unsupported audio format/);
      expect(hits).toEqual([]);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
