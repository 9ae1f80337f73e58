/**
 * Generated images kept at a URL have a retention and a per-key bound: each is deleted (object and row)
 * AI_IMAGES_RETENTION_HOURS after it was generated, by a sweep the test runs after moving the app's clock, and
 * its URL then answers 404; a key keeps at most AI_IMAGES_MAX_BYTES_PER_KEY of them, counted in PostgreSQL, and a
 * call that does not fit is refused before the upstream is called.
 */
import { existsSync, readdirSync, statSync } from 'fs';
import { join } from 'path';
import { FakeClock, useClock } from '../../support/clock';
import { queryRows } from '../../support/database';
import { GatewayFixture } from '../gateway-fixture';
import { largestImageBytes } from '../../../apps/ai-gateway/src/vision/generated-image-store';
import { GeneratedImagesSweeper } from '../../../apps/ai-gateway/src/vision/generated-images.sweeper';
import { startMediaGateway } from './media-gateway';
import { MediaUpstream, startMediaUpstream } from './media-upstream';

const HOUR_MS = 3_600_000;
const RETENTION_HOURS = 2;
/** The bound: one 256x256 image's hold, so a key keeping any image has no room for another. */
const BOUND = largestImageBytes('256x256');

describe('generated images: AI_IMAGES_RETENTION_HOURS and AI_IMAGES_MAX_BYTES_PER_KEY', () => {
  const clock = new FakeClock();
  let media: MediaUpstream;
  let f: GatewayFixture;

  const generate = (key: string, body: Record<string, unknown> = {}) =>
    fetch(`${f.gw.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'a lighthouse', size: '256x256', n: 1, ...body }),
    });
  const rows = (keyId: string) =>
    queryRows(
      f.gw.dbUrl,
      `SELECT storage_key, bytes::int AS bytes FROM ai_generated_images WHERE key_id = $1 ORDER BY created_at`,
      [keyId],
    );
  const usage = async (keyId: string) =>
    Number(
      (await queryRows(f.gw.dbUrl, `SELECT bytes FROM ai_generated_image_usage WHERE key_id = $1`, [keyId]))[0]
        ?.bytes ?? 0,
    );
  const mediaDir = () => join(f.gw.dataDir, 'media');
  /** Every object in the replica's media storage (DATA_DIR/media). */
  const objects = (dir = mediaDir()): string[] =>
    existsSync(dir)
      ? readdirSync(dir).flatMap((name) =>
          statSync(join(dir, name)).isDirectory() ? objects(join(dir, name)) : [join(dir, name)],
        )
      : [];
  const sweep = () => f.gw.app.get(GeneratedImagesSweeper).sweep();
  const urlOf = async (res: Response): Promise<string> => {
    expect(res.status).toBe(200);
    return ((await res.json()) as { data: Array<{ url: string }> }).data[0].url;
  };

  beforeAll(async () => {
    media = await startMediaUpstream();
    f = await startMediaGateway(media, {
      AI_IMAGES_RETENTION_HOURS: String(RETENTION_HOURS),
      AI_IMAGES_MAX_BYTES_PER_KEY: String(BOUND),
    });
    useClock(f.gw.app, clock);
  });
  afterAll(async () => {
    await f?.close();
    await media?.close();
  });

  it('deletes an image and its row once the retention has passed; its URL then answers 404 in the error shape', async () => {
    const key = await f.createKey({ name: 'retention' });
    const url = await urlOf(await generate(key.key));
    const storageKey = url.slice(`${f.gw.url}/cdn/`.length);
    const file = join(mediaDir(), storageKey);
    // One row naming the object and its size; the call's hold is gone.
    expect(await rows(key.id)).toEqual([{ storage_key: storageKey, bytes: statSync(file).size }]);
    expect(await usage(key.id)).toBe(statSync(file).size);
    const served = await fetch(url);
    expect(served.status).toBe(200);
    expect(served.headers.get('cache-control')).toBe(`public, max-age=${RETENTION_HOURS * 3600}, immutable`);

    clock.advance(RETENTION_HOURS * HOUR_MS - 1000);
    expect(await sweep()).toBe(0);
    expect((await fetch(url)).status).toBe(200);

    clock.advance(2000);
    expect(await sweep()).toBe(1);
    expect(await rows(key.id)).toEqual([]);
    expect(existsSync(file)).toBe(false);
    expect(await usage(key.id)).toBe(0);
    const gone = await fetch(url);
    expect(gone.status).toBe(404);
    expect(await gone.json()).toEqual({
      error: { message: 'No such image', type: 'invalid_request_error', code: 'not_found', param: null },
    });
    // A second sweep finds nothing (what the first did is not done again).
    expect(await sweep()).toBe(0);
  });

  it('refuses a key at its bound with 429 before the upstream is called, storing nothing; another key still works', async () => {
    const full = await f.createKey({ name: 'full' });
    const other = await f.createKey({ name: 'other' });
    await urlOf(await generate(full.key));
    const kept = await rows(full.id);
    const stored = objects();
    const calls = media.calls.length;

    const refused = await generate(full.key);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-should-retry')).toBe('false');
    // Room comes back when the key's oldest image is deleted, the retention after it was generated.
    expect(Number(refused.headers.get('retry-after'))).toBe(RETENTION_HOURS * 3600);
    expect(await refused.json()).toEqual({
      error: {
        message: expect.stringContaining(`past its limit of ${BOUND} bytes`),
        type: 'insufficient_quota',
        code: 'insufficient_quota',
        param: null,
      },
    });
    expect(media.calls.length).toBe(calls);
    expect(await rows(full.id)).toEqual(kept);
    expect(objects()).toEqual(stored);
    expect(await usage(full.id)).toBe(kept[0].bytes);

    // Another key has its own bound; a b64_json answer of the full key is neither stored nor counted.
    await urlOf(await generate(other.key));
    const b64 = await generate(full.key, { response_format: 'b64_json' });
    expect(b64.status).toBe(200);
    expect(await rows(full.id)).toEqual(kept);
    expect(media.calls.length).toBe(calls + 2);

    // Once its image is swept, the key has room again.
    clock.advance(RETENTION_HOURS * HOUR_MS + 1000);
    await sweep();
    await urlOf(await generate(full.key));
  });

  it('holds across concurrent calls: of two that each fit alone, one is refused and the upstream called once', async () => {
    const key = await f.createKey({ name: 'concurrent' });
    const calls = media.calls.length;
    const statuses = (await Promise.all([generate(key.key), generate(key.key)])).map((r) => r.status);
    expect(statuses.sort()).toEqual([200, 429]);
    expect(media.calls.length).toBe(calls + 1);
    expect(await rows(key.id)).toHaveLength(1);
  });

  it('gives a failed call its hold back: nothing kept, and the key can generate again', async () => {
    const key = await f.createKey({ name: 'failed' });
    media.failNext = 500;
    expect((await generate(key.key)).status).toBe(502);
    expect(await rows(key.id)).toEqual([]);
    expect(await usage(key.id)).toBe(0);
    await urlOf(await generate(key.key));
    expect(await rows(key.id)).toHaveLength(1);
  });
});
