import { languageCode } from './transcription-engines';

describe('languageCode (the language an upstream names in verbose_json)', () => {
  it('maps OpenAI language names to codes and keeps anything else as given', () => {
    expect(languageCode('english')).toBe('en');
    expect(languageCode('Chinese')).toBe('zh');
    expect(languageCode('klingon')).toBe('klingon');
    expect(languageCode(undefined)).toBe('unknown');
  });

  it("keeps a name like an Object.prototype member as given (not Object's member)", () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect([name, languageCode(name)]).toEqual([name, name]);
    }
  });

  it('answers unknown for a language that is not a string (an upstream answering a number)', () => {
    expect(languageCode(42 as unknown as string)).toBe('unknown');
  });
});
