import { bodyFromFlags, CliUsageError, parseArgs, projectBodyFromFlags } from './keys.cli';

describe('keys CLI arguments', () => {
  it('parses commands, flags in both spellings, and switches', () => {
    expect(parseArgs(['create', '--name', 'demo', '--budget=10', '--json'])).toEqual({
      command: 'create',
      id: undefined,
      flags: { name: 'demo', budget: '10' },
      json: true,
      all: false,
    });
    expect(parseArgs(['revoke', 'abc', '--all'])).toMatchObject({ command: 'revoke', id: 'abc', all: true });
    expect(() => parseArgs(['create', '--name'])).toThrow('--name needs a value');
    expect(() => parseArgs(['create', '--nope', '1'])).toThrow(CliUsageError);
  });

  it('names project commands with their group and takes the id after the command', () => {
    expect(parseArgs(['project', 'update', 'p1', '--tpm', '100', '--json'])).toEqual({
      command: 'project update',
      id: 'p1',
      flags: { tpm: '100' },
      json: true,
      all: false,
    });
    expect(parseArgs(['project', '--json', 'list', '--search', 'web'])).toMatchObject({
      command: 'project list',
      id: undefined,
      flags: { search: 'web' },
    });
    expect(parseArgs(['project'])).toMatchObject({ command: 'project' });
  });

  it('builds admin API bodies; "none" clears limits on update only', () => {
    expect(
      bodyFromFlags(
        { name: 'x', scopes: 'chat, embeddings', rpm: '60', budget: '2.5', expires: '2027-01-01T00:00:00Z' },
        false,
      ),
    ).toEqual({
      name: 'x',
      scopes: ['chat', 'embeddings'],
      requests_per_minute: 60,
      budget_yuan: 2.5,
      expires_at: '2027-01-01T00:00:00Z',
    });
    expect(bodyFromFlags({ budget: 'none', models: 'none', rpm: 'none' }, true)).toEqual({
      budget_yuan: null,
      models: null,
      requests_per_minute: null,
    });
    expect(() => bodyFromFlags({ budget: 'none' }, false)).toThrow('--budget must be a number');
  });

  it('maps the limit flags to the limit fields', () => {
    const flags = {
      tpm: '40000',
      concurrency: '4',
      'model-limits': '{"vendor-gpt-4":{"tokens_per_minute":20000}}',
      'budget-tokens': '2000000',
      'budget-period': 'monthly',
      alert: '0.8',
      project: 'p1',
    };
    expect(bodyFromFlags(flags, false)).toEqual({
      tokens_per_minute: 40000,
      max_concurrent_requests: 4,
      model_limits: { 'vendor-gpt-4': { tokens_per_minute: 20000 } },
      budget_tokens: 2000000,
      budget_period: 'monthly',
      alert_threshold: 0.8,
      project_id: 'p1',
    });
    expect(
      bodyFromFlags(
        {
          tpm: 'none',
          concurrency: 'none',
          'model-limits': 'none',
          'budget-tokens': 'none',
          alert: 'none',
          project: 'none',
        },
        true,
      ),
    ).toEqual({
      tokens_per_minute: null,
      max_concurrent_requests: null,
      model_limits: null,
      budget_tokens: null,
      alert_threshold: null,
      project_id: null,
    });
    expect(() => bodyFromFlags({ 'model-limits': '{vendor' }, false)).toThrow('--model-limits must be JSON');
    expect(() => bodyFromFlags({ alert: 'high' }, false)).toThrow('--alert must be a number');
  });

  it('refuses key-only flags on projects', () => {
    expect(projectBodyFromFlags({ name: 'web', rpm: '10' }, false)).toEqual({ name: 'web', requests_per_minute: 10 });
    for (const flag of ['scopes', 'models', 'expires', 'project'])
      expect(() => projectBodyFromFlags({ [flag]: 'x' }, true)).toThrow(`--${flag} is for keys, not projects`);
  });
});
