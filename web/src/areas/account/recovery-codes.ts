import { useSyncExternalStore } from 'react';

/**
 * Recovery codes just issued (by enrolling a first factor, at sign-in or on the security page, or by
 * regenerating them): shown once by the security page's recovery section, then forgotten. Memory only.
 */
let codes: string[] | null = null;
const listeners = new Set<() => void>();

export function showRecoveryCodes(next: string[] | null | undefined): void {
  if (!next?.length) return;
  codes = next;
  for (const l of listeners) l();
}

export function forgetRecoveryCodes(): void {
  codes = null;
  for (const l of listeners) l();
}

export const useFreshRecoveryCodes = (): string[] | null =>
  useSyncExternalStore(
    (l) => (listeners.add(l), () => listeners.delete(l)),
    () => codes,
  );
