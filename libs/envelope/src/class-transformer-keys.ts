// class-transformer 0.5.1 (the latest release, used by Nest's ValidationPipe to turn a body into its DTO before
// validating it) finds an object's keys with TransformOperationExecutor.getKeys, which ends by dropping
// duplicates with `keys.filter((key, i, self) => self.indexOf(key) === i)`: work quadratic in the number of keys
// of one object. Any JSON body a validated route receives is walked this way, unknown fields and their nested
// objects included, so one member's 1 MiB body of 95 000 fields held membership's event loop 4.6 s, and a key
// holder's 16 MiB body the gateway's for far longer. `linearGetKeys` is the same method with the duplicates
// dropped through a Set (the first of each kept, in order, as before); installed once by validation.ts, before
// either app's pipe runs (class-transformer-keys.spec.ts compares it with the original and counts its work).
//
// The method's other steps are copied as they are in class-transformer (MIT License, Copyright (c) 2015-2020
// TypeStack).
import { TransformationType } from 'class-transformer';
import type { MetadataStorage } from 'class-transformer/types/MetadataStorage';

// The CommonJS build Nest's ValidationPipe loads (require('class-transformer')); the package types only its index.
/* eslint-disable @typescript-eslint/no-require-imports */
const { TransformOperationExecutor } = require('class-transformer/cjs/TransformOperationExecutor') as {
  TransformOperationExecutor: { prototype: { getKeys: typeof linearGetKeys } };
};
const { defaultMetadataStorage } = require('class-transformer/cjs/storage') as {
  defaultMetadataStorage: MetadataStorage;
};
/* eslint-enable @typescript-eslint/no-require-imports */

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- class-transformer's own type for a class
type Target = Function;

interface Executor {
  transformationType: TransformationType;
  options: {
    strategy?: 'excludeAll' | 'exposeAll';
    ignoreDecorators?: boolean;
    excludeExtraneousValues?: boolean;
    version?: number;
    groups?: string[];
    excludePrefixes?: string[];
  };
  checkVersion(since: number | undefined, until: number | undefined): boolean;
  checkGroups(groups: string[] | undefined): boolean;
}

/** TransformOperationExecutor.getKeys with duplicates dropped in one pass. */
export function linearGetKeys(
  this: Executor,
  target: Target | undefined,
  object: Record<string, unknown> | Map<unknown, unknown>,
  isMap: boolean,
): unknown[] {
  const storage = defaultMetadataStorage;
  let strategy = storage.getStrategy(target as Target);
  if (strategy === 'none') strategy = this.options.strategy || 'exposeAll';
  let keys: unknown[] = [];
  if (strategy === 'exposeAll' || isMap) {
    keys = object instanceof Map ? Array.from(object.keys()) : Object.keys(object);
  }
  // Expose and exclude do not apply to a map's keys.
  if (isMap) return keys;
  if (this.options.ignoreDecorators && this.options.excludeExtraneousValues && target) {
    const exposed = storage.getExposedProperties(target, this.transformationType);
    const excluded = storage.getExcludedProperties(target, this.transformationType);
    keys = [...exposed, ...excluded];
  }
  if (!this.options.ignoreDecorators && target) {
    let exposed: string[] = storage.getExposedProperties(target, this.transformationType);
    if (this.transformationType === TransformationType.PLAIN_TO_CLASS) {
      exposed = exposed.map((key) => storage.findExposeMetadata(target, key)?.options?.name || key);
    }
    keys = this.options.excludeExtraneousValues ? exposed : keys.concat(exposed);
    const excluded = storage.getExcludedProperties(target, this.transformationType);
    if (excluded.length > 0) keys = keys.filter((key) => !excluded.includes(key as string));
    if (this.options.version !== undefined) {
      keys = keys.filter((key) => {
        const meta = storage.findExposeMetadata(target, key as string);
        if (!meta || !meta.options) return true;
        return this.checkVersion(meta.options.since, meta.options.until);
      });
    }
    if (this.options.groups && this.options.groups.length) {
      keys = keys.filter((key) => {
        const meta = storage.findExposeMetadata(target, key as string);
        if (!meta || !meta.options) return true;
        return this.checkGroups(meta.options.groups);
      });
    } else {
      keys = keys.filter((key) => {
        const meta = storage.findExposeMetadata(target, key as string);
        return !meta || !meta.options || !meta.options.groups || !meta.options.groups.length;
      });
    }
  }
  const prefixes = this.options.excludePrefixes;
  if (prefixes && prefixes.length) {
    keys = keys.filter((key) => prefixes.every((prefix) => (key as string).substr(0, prefix.length) !== prefix));
  }
  return [...new Set(keys)];
}

/** The method class-transformer shipped, kept for the spec's comparison. */
export const originalGetKeys = TransformOperationExecutor.prototype.getKeys;

let installed = false;

/** Replaces class-transformer's getKeys with linearGetKeys (once per process). */
export function installLinearGetKeys(): void {
  if (installed) return;
  installed = true;
  TransformOperationExecutor.prototype.getKeys = linearGetKeys;
}
