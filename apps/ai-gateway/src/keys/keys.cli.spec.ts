import { bodyFromFlags, CliUsageError, parseArgs } from './keys.cli';

describe('keys CLI arguments', () => {
  it('parses commands, flags in both spellings, and switches', () => {
    expect(parseArgs(['create', '--name', 'demo', '--budget=10', '--json'])).toEqual({ command: 'create', id: undefined, flags: { name: 'demo', budget: '10' }, json: true, all: false });
    expect(parseArgs(['revoke', 'abc', '--all'])).toMatchObject({ command: 'revoke', id: 'abc', all: true });
    expect(() => parseArgs(['create', '--name'])).toThrow('--name needs a value');
    expect(() => parseArgs(['create', '--nope', '1'])).toThrow(CliUsageError);
  });

  it('builds admin API bodies; "none" clears limits on update only', () => {
    expect(bodyFromFlags({ name: 'x', scopes: 'chat, embeddings', rpm: '60', budget: '2.5', expires: '2027-01-01T00:00:00Z' }, false)).toEqual({
      name: 'x',
      scopes: ['chat', 'embeddings'],
      requests_per_minute: 60,
      budget_yuan: 2.5,
      expires_at: '2027-01-01T00:00:00Z',
    });
    expect(bodyFromFlags({ budget: 'none', models: 'none', rpm: 'none' }, true)).toEqual({ budget_yuan: null, models: null, requests_per_minute: null });
    expect(() => bodyFromFlags({ budget: 'none' }, false)).toThrow('--budget must be a number');
  });
});
