import 'reflect-metadata';
import { Exclude, Expose, plainToInstance, Type } from 'class-transformer';
import type { ClassTransformOptions } from 'class-transformer';
import { IsOptional, IsString } from 'class-validator';
import { linearGetKeys, originalGetKeys } from './class-transformer-keys';
import { envelopeValidationPipe, MAX_REPORTED_FIELD_ERRORS } from './validation';
import { BusinessException } from './business.exception';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { TransformOperationExecutor } = require('class-transformer/cjs/TransformOperationExecutor') as {
  TransformOperationExecutor: { prototype: { getKeys: unknown } };
};

class Address {
  @Expose({ name: 'street_name' }) street!: string;
  @Exclude() secret?: string;
}

class Member {
  @Expose() id!: number;
  @Expose({ name: 'display_name' }) name!: string;
  @Exclude() password?: string;
  @Expose({ groups: ['admin'] }) note?: string;
  @Expose({ since: 2 }) added?: string;
  @Expose({ until: 2 }) removed?: string;
  @Type(() => Address) address?: Address;
  @Type(() => Address) addresses?: Address[];
}

@Exclude()
class OnlyExposed {
  @Expose() shown!: string;
  hidden?: string;
}

const plain = {
  id: 7,
  display_name: 'Ann',
  password: 'p',
  note: 'n',
  added: 'a',
  removed: 'r',
  _internal: 'x',
  extra: { z: 1, a: { b: 2 } },
  address: { street_name: 'Main', secret: 's', other: 1 },
  addresses: [{ street_name: 'One' }, { street_name: 'Two', x: 2 }],
  map: new Map([['k', 1]]),
};

const optionSets: ClassTransformOptions[] = [
  {},
  { groups: ['admin'] },
  { version: 1 },
  { version: 3 },
  { excludePrefixes: ['_'] },
  { excludeExtraneousValues: true },
  { ignoreDecorators: true },
  { ignoreDecorators: true, excludeExtraneousValues: true },
  { strategy: 'excludeAll' },
];

function withGetKeys<T>(getKeys: unknown, run: () => T): T {
  const installed = TransformOperationExecutor.prototype.getKeys;
  TransformOperationExecutor.prototype.getKeys = getKeys;
  try {
    return run();
  } finally {
    TransformOperationExecutor.prototype.getKeys = installed;
  }
}

/** The instance as data, with each object's own keys in order (toEqual ignores order). */
function shape(v: unknown): unknown {
  if (v instanceof Map) return ['Map', [...v.entries()].map(([k, x]) => [k, shape(x)])];
  if (Array.isArray(v)) return v.map(shape);
  if (v && typeof v === 'object')
    return [v.constructor?.name, Object.keys(v).map((k) => [k, shape((v as Record<string, unknown>)[k])])];
  return v;
}

describe('class-transformer getKeys, linear', () => {
  it('is installed in place of the original once the validation module is loaded', () => {
    expect(TransformOperationExecutor.prototype.getKeys).toBe(linearGetKeys);
    expect(originalGetKeys).not.toBe(linearGetKeys);
  });

  it.each(optionSets.map((o) => [JSON.stringify(o), o] as const))(
    'turns a body into the same instance as the original (options %s)',
    (_name, options) => {
      for (const cls of [Member, OnlyExposed, Address] as Array<new () => object>) {
        const before = withGetKeys(originalGetKeys, () => shape(plainToInstance(cls, plain, options)));
        const after = withGetKeys(linearGetKeys, () => shape(plainToInstance(cls, plain, options)));
        expect(after).toEqual(before);
      }
    },
  );

  it('finds the keys of an object in work linear in their number (the original compared each with every other)', () => {
    const many: Record<string, number> = {};
    for (let i = 0; i < 5000; i++) many[`f${i}`] = i;
    const body = { id: 1, extra: many };
    const indexOfCalls = (getKeys: unknown) => {
      const spy = jest.spyOn(Array.prototype, 'indexOf');
      try {
        withGetKeys(getKeys, () => plainToInstance(Member, body));
        return spy.mock.calls.length;
      } finally {
        spy.mockRestore();
      }
    };
    expect(indexOfCalls(originalGetKeys)).toBeGreaterThanOrEqual(5000);
    expect(indexOfCalls(linearGetKeys)).toBeLessThan(100);
  });
});

describe('validation errors reported', () => {
  class Profile {
    @IsOptional() @IsString() nickname?: string;
  }

  it(`lists at most ${MAX_REPORTED_FIELD_ERRORS} failing fields and counts the rest`, async () => {
    const body: Record<string, unknown> = { nickname: 'x' };
    for (let i = 0; i < 1000; i++) body[`f${i}`] = 1;
    const refused = (await envelopeValidationPipe()
      .transform(body, { type: 'body', metatype: Profile })
      .catch((e: unknown) => e)) as BusinessException;
    expect(refused).toBeInstanceOf(BusinessException);
    const details = refused.extras.details as { fields: unknown[] };
    expect(details.fields).toHaveLength(MAX_REPORTED_FIELD_ERRORS);
    expect(refused.message).toContain('980 more invalid fields');
    expect(refused.message).toContain('f0: property f0 should not exist');
    expect(refused.message).not.toContain(`f${MAX_REPORTED_FIELD_ERRORS}:`);
  });
});
