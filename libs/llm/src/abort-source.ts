/**
 * What the upstream clients and undici need of an abort signal (`aborted`, `reason`, abort
 * listeners), without an AbortController: Node's EventTarget-based controllers cost a proxied call
 * more than its routing. Listeners run once, in the order they were added.
 */
export class AbortSource {
  aborted = false;
  reason: unknown;
  private listeners: Array<() => void> = [];

  /** This source, typed as the AbortSignal the clients accept. */
  get signal(): AbortSignal {
    return this as unknown as AbortSignal;
  }

  abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = [];
    for (const fn of listeners) fn();
  }

  addEventListener(_type: 'abort', fn: () => void): void {
    if (!this.aborted) this.listeners.push(fn);
  }

  removeEventListener(_type: 'abort', fn: () => void): void {
    const i = this.listeners.indexOf(fn);
    if (i >= 0) this.listeners.splice(i, 1);
  }
}
