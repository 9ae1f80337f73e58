import { useSyncExternalStore } from 'react';

/** What login, login-by-phone, refresh-token and a completed second-factor challenge return (MemberLoginResponse). */
export interface MemberLogin {
  memberId: string;
  username: string;
  nickname: string | null;
  avatarUrl: string | null;
  token: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
  refreshExpiresIn: number;
}

/**
 * Where the tokens live. The access token only in memory: nothing else on the page can read it from
 * storage, and it is short-lived. The refresh token in sessionStorage: a reload of this tab keeps the
 * member signed in (the token is exchanged once, then rotated), while it is gone when the tab closes and
 * is never shared with other tabs or sent with requests by the browser (unlike a cookie, so no CSRF).
 * Script injected into the page could read it: the app's Content-Security-Policy (libs/platform
 * security-headers.ts) allows scripts from this origin only, which is what stands against that.
 */
const REFRESH_KEY = 'membership.refreshToken';

interface State {
  member: { id: string; username: string; nickname: string | null } | null;
  token: string | null;
}

let state: State = { member: null, token: null };
const listeners = new Set<() => void>();
function set(next: State): void {
  state = next;
  for (const l of listeners) l();
}

export function signedIn(login: MemberLogin): void {
  sessionStorage.setItem(REFRESH_KEY, login.refreshToken);
  set({ member: { id: login.memberId, username: login.username, nickname: login.nickname }, token: login.token });
}

export function signedOut(): void {
  sessionStorage.removeItem(REFRESH_KEY);
  set({ member: null, token: null });
}

/** A new access token for the same session (after a step-up: it carries the updated `amr`). */
export function tokenRenewed(token: string): void {
  set({ ...state, token });
}

export const accessToken = (): string | null => state.token;
export const storedRefreshToken = (): string | null => sessionStorage.getItem(REFRESH_KEY);

export function useSession(): State {
  return useSyncExternalStore(
    (l) => (listeners.add(l), () => listeners.delete(l)),
    () => state,
  );
}
