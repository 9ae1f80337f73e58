import type { ExecutionContext } from '@nestjs/common';

/** A route's handler and controller class, as a Reflector reads their metadata. */
export type RouteTargets = [ReturnType<ExecutionContext['getHandler']>, ReturnType<ExecutionContext['getClass']>];

/**
 * What a guard reads of a route's metadata (e.g. `@Public()`), computed once per route: per controller
 * class and handler, since a handler inherited by two controllers may carry different class metadata.
 * Metadata does not change while the app runs.
 */
export class RouteMetadataCache<T> {
  private readonly byClass = new WeakMap<object, WeakMap<object, T>>();

  constructor(private readonly read: (targets: RouteTargets) => T) {}

  of(context: ExecutionContext): T {
    const controller = context.getClass();
    const handler = context.getHandler();
    let byHandler = this.byClass.get(controller);
    if (byHandler === undefined) this.byClass.set(controller, (byHandler = new WeakMap()));
    let value = byHandler.get(handler);
    if (value === undefined) {
      value = this.read([handler, controller]);
      byHandler.set(handler, value);
    }
    return value;
  }
}
