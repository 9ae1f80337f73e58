import { GatewayError } from '../errors';
import { MAX_MODERATION_IMAGES, parseModerationInput } from './moderation-input';

const refusal = (input: unknown) => {
  try {
    parseModerationInput(input);
  } catch (e) {
    return { status: (e as GatewayError).getStatus(), param: (e as GatewayError).param, message: (e as Error).message };
  }
  throw new Error('accepted');
};

describe('parseModerationInput', () => {
  it('counts one result per string and one for an array of parts', () => {
    expect(parseModerationInput('hi')).toEqual({ value: 'hi', count: 1, images: [] });
    expect(parseModerationInput(['a', 'b', 'c']).count).toBe(3);
    const parts = parseModerationInput([
      { type: 'text', text: 'x' },
      { type: 'image_url', image_url: { url: ' https://example.com/a.png ' } },
    ]);
    expect(parts).toEqual({
      value: [
        { type: 'text', text: 'x' },
        { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
      ],
      count: 1,
      images: [1],
    });
  });

  it('refuses what the spec does not allow, naming the path', () => {
    expect(refusal(42)).toMatchObject({ status: 400, param: 'input' });
    expect(refusal([])).toMatchObject({ status: 400, param: 'input' });
    expect(refusal(['a', { type: 'text', text: 'b' }])).toMatchObject({ param: 'input.0' });
    expect(refusal([{ type: 'text', text: 1 }])).toMatchObject({ param: 'input.0.text' });
    expect(refusal([{ type: 'image_url', image_url: { url: 'file:///etc/passwd' } }])).toMatchObject({
      param: 'input.0.image_url.url',
      message: expect.stringMatching(/http\(s\) URL or a data:image/),
    });
    expect(refusal([{ type: 'image_url', image_url: { url: 'data:text/html;base64,AAAA' } }])).toMatchObject({
      param: 'input.0.image_url.url',
    });
    expect(refusal([{ type: 'input_audio' }])).toMatchObject({ param: 'input.0.type' });
    const many = Array.from({ length: MAX_MODERATION_IMAGES + 1 }, () => ({
      type: 'image_url',
      image_url: { url: 'https://example.com/a.png' },
    }));
    expect(refusal(many)).toMatchObject({ param: 'input' });
  });
});
