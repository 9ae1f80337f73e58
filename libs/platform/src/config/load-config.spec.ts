import { IsInt, Min } from 'class-validator';
import { BaseConfig } from './base.config';
import { ConfigError, loadConfig } from './load-config';

class SampleConfig extends BaseConfig {
  @IsInt()
  @Min(1)
  SAMPLE_PORT: number = 8080;
}

describe('loadConfig', () => {
  it('applies defaults when the environment is empty', () => {
    const c = loadConfig(SampleConfig, {});
    expect(c.SAMPLE_PORT).toBe(8080);
    expect(c.HOST).toBe('127.0.0.1');
    expect(c.migrationsRun).toBe(true);
  });

  it('converts numbers and booleans from strings', () => {
    const c = loadConfig(SampleConfig, { SAMPLE_PORT: '9090', MIGRATIONS_RUN: 'false', NODE_ENV: 'production' });
    expect(c.SAMPLE_PORT).toBe(9090);
    expect(c.migrationsRun).toBe(false);
    expect(c.isProduction).toBe(true);
  });

  it('names every bad variable in one error', () => {
    expect.assertions(4);
    try {
      loadConfig(SampleConfig, {
        SAMPLE_PORT: 'abc',
        NODE_ENV: 'staging',
        DATABASE_URL: 'mysql://x',
        MIGRATIONS_RUN: 'maybe',
      });
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const msg = (e as Error).message;
      expect(msg).toMatch(/SAMPLE_PORT: "abc" is not a number/);
      expect(msg).toMatch(/NODE_ENV/);
      expect(msg).toMatch(/DATABASE_URL: must be a postgres:\/\/ URL/);
    }
  });
});
