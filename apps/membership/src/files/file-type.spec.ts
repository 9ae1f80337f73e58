import { cleanOriginalName, detectType, isInlineImage } from './file-type';

describe('detectType', () => {
  it('decides by magic bytes, not by names', async () => {
    expect(
      await detectType(
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]),
      ),
    ).toEqual({ ext: 'png', mime: 'image/png' });
    expect(await detectType(Buffer.from('%PDF-1.7\n'))).toEqual({ ext: 'pdf', mime: 'application/pdf' });
    expect(await detectType(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"></svg>'))).toBeNull();
    expect(await detectType(Buffer.from('plain text'))).toBeNull();
  });
});

describe('cleanOriginalName', () => {
  it.each([
    ['../../etc/passwd', 'passwd'],
    ['..\\..\\boot.ini', 'boot.ini'],
    ['.htaccess', 'htaccess'],
    ['a"b\r\n.png', 'ab.png'],
    ['', 'file'],
    [undefined, 'file'],
    ['头像.png', '头像.png'],
  ])('%j -> %j', (input, out) => expect(cleanOriginalName(input)).toBe(out));
});

describe('isInlineImage', () => {
  it('only raster images are inline', () => {
    expect(isInlineImage('image/png')).toBe(true);
    expect(isInlineImage('image/svg+xml')).toBe(false);
    expect(isInlineImage('application/pdf')).toBe(false);
  });
});
