import { useSyncExternalStore } from 'react';

/**
 * Routes by area: `{prefix}/account/...` (the member's account page) and `{prefix}/console/...` (the operator
 * console). `prefix` is membership's CONTEXT_PATH, found from the URL itself so that the same build works
 * under any context path, in development (Vite at /account/) and behind membership (web-app.ts).
 */
export type Area = 'account' | 'console';
export interface Route {
  area: Area | null;
  /** The path inside the area, '/' at its root, e.g. '/sign-in'. */
  path: string;
}

const AREA = /^(.*?)\/(account|console)(\/.*)?$/;

/** The context path the app and its API live under ('' at the origin's root). */
export const prefix: string = AREA.exec(location.pathname)?.[1] ?? '';

function current(): Route {
  const m = AREA.exec(location.pathname);
  if (!m || m[1] !== prefix) return { area: null, path: location.pathname };
  const path = (m[3] ?? '/').replace(/\/+$/, '') || '/';
  return { area: m[2] as Area, path };
}

let route = current();
const listeners = new Set<() => void>();
const changed = () => {
  route = current();
  for (const l of listeners) l();
};
addEventListener('popstate', changed);

export function useRoute(): Route {
  return useSyncExternalStore(
    (l) => (listeners.add(l), () => listeners.delete(l)),
    () => route,
  );
}

/** The address of a page of an area, e.g. href('account', '/security'). */
export const href = (area: Area, path = '/'): string => `${prefix}/${area}${path === '/' ? '/' : path}`;

/** Shows another page of the app without reloading (replace: no new history entry, e.g. after signing in). */
export function navigate(area: Area, path: string, { replace = false } = {}): void {
  const url = href(area, path);
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  changed();
  // A new page: move focus to its heading so screen readers announce it (the pages' <h1 tabIndex={-1}>).
  requestAnimationFrame(() => document.querySelector<HTMLElement>('main h1')?.focus());
}
