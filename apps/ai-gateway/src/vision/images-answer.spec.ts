import { randomBytes } from 'crypto';
import { B64_PIECE_BYTES, b64ImagesAnswer } from './images-answer';
import { recordingPace } from '../../../../test/support/recording-pace';

describe('b64ImagesAnswer (an images answer as Buffer pieces)', () => {
  it('is the text JSON.stringify makes, for images of every size around a piece and prompts that need escaping', async () => {
    const sizes = [0, 1, 2, 3, B64_PIECE_BYTES - 1, B64_PIECE_BYTES, B64_PIECE_BYTES + 1, 3 * B64_PIECE_BYTES + 5];
    const prompts = [undefined, 'plain', 'a "quoted" \\ line\nbreak', '灯塔 \u2028 \ud83c\udf0a'];
    const images = sizes.map((n, i) => ({ bytes: randomBytes(n), revisedPrompt: prompts[i % prompts.length] }));
    const pieces = await b64ImagesAnswer(1_700_000_000, images, recordingPace());
    const expected = JSON.stringify({
      created: 1_700_000_000,
      data: images.map((i) => ({ b64_json: i.bytes.toString('base64'), revised_prompt: i.revisedPrompt })),
    });
    expect(Buffer.concat(pieces).toString('utf8')).toBe(expected);
    expect(JSON.parse(Buffer.concat(pieces).toString('utf8')).data[7].b64_json).toBe(
      images[7].bytes.toString('base64'),
    );
  });

  it('encodes a piece at a time, charging the pace for each and waiting the turns it gives', async () => {
    const image = randomBytes(4 * B64_PIECE_BYTES + 10);
    const pace = recordingPace();
    const pieces = await b64ImagesAnswer(1, [{ bytes: image }], pace);
    // The answer's head, the item's head, the five encoded pieces, the item's end and the answer's.
    const encoded = pieces.slice(2, -2);
    expect(encoded).toHaveLength(5);
    for (const piece of encoded) expect(piece.length).toBeLessThanOrEqual((B64_PIECE_BYTES / 3) * 4);
    expect(pace.turns).toBe(5);
    expect(pace.units).toBe(encoded.reduce((n, p) => n + Math.ceil(p.length / 16), 0));
  });

  it('answers an empty list as an empty data array', async () => {
    const pieces = await b64ImagesAnswer(5, [], recordingPace());
    expect(Buffer.concat(pieces).toString()).toBe('{"created":5,"data":[]}');
  });
});
