import 'reflect-metadata';
import { getMetadataStorage, validateSync } from 'class-validator';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Names of the variables a config class declares (every validated property). */
export function configKeys(cls: new () => object): string[] {
  const metas = getMetadataStorage().getTargetValidationMetadatas(cls, '', true, false);
  return [...new Set(metas.map((m) => m.propertyName))];
}

/**
 * Builds one validated config object from the environment. Each declared property reads the variable
 * of the same name; numbers and booleans are converted; empty strings count as unset. A bad value
 * throws a ConfigError naming every failing variable.
 */
export function loadConfig<T extends object>(
  cls: new () => T,
  env: Record<string, string | undefined> = process.env,
): T {
  const config = new cls();
  const fields = config as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of configKeys(cls)) {
    const raw = env[key];
    if (raw === undefined || raw === '') continue;
    const type: unknown = Reflect.getMetadata('design:type', cls.prototype as object, key);
    if (type === Number) {
      const n = Number(raw.trim());
      if (raw.trim() === '' || Number.isNaN(n)) problems.push(`${key}: "${raw}" is not a number`);
      else fields[key] = n;
    } else if (type === Boolean) {
      const v = raw.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(v)) fields[key] = true;
      else if (['false', '0', 'no', 'off'].includes(v)) fields[key] = false;
      else problems.push(`${key}: "${raw}" is not a boolean (true/false)`);
    } else {
      fields[key] = raw;
    }
  }
  for (const error of validateSync(config, { skipMissingProperties: false })) {
    if (problems.some((p) => p.startsWith(`${error.property}:`))) continue;
    for (const message of Object.values(error.constraints ?? {})) problems.push(`${error.property}: ${message}`);
  }
  const checked = config as { validateExtra?: () => string[] };
  if (typeof checked.validateExtra === 'function') problems.push(...checked.validateExtra());
  if (problems.length) throw new ConfigError(problems);
  return config;
}
