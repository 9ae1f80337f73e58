export * from './principal';
export * from './decorators';
export * from './default-deny.guard';
