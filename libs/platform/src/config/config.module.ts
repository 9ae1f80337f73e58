import { DynamicModule, Global, Module } from '@nestjs/common';
import { BaseConfig } from './base.config';

/** Provides the app's validated config object under its own class and under BaseConfig. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot<T extends BaseConfig>(cls: new () => T, config: T): DynamicModule {
    const providers = [
      { provide: cls, useValue: config },
      ...(cls === (BaseConfig as unknown) ? [] : [{ provide: BaseConfig, useValue: config }]),
    ];
    return { module: ConfigModule, providers, exports: providers.map((p) => p.provide) };
  }
}
