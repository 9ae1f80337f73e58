export * from './principal';
export * from './decorators';
export * from './default-deny.guard';
export * from './roles';
export * from './route-metadata';
