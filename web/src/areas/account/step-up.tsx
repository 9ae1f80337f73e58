import { startAuthentication } from '@simplewebauthn/browser';
import { useState, useSyncExternalStore } from 'react';
import { api, ApiError, messageOf } from '../../api/client';
import { tokenRenewed } from '../../api/session';
import { ErrorCodes, Factors, PublicKeyCredentialRequestOptionsJSON } from '../../api/types';
import { t } from '../../i18n';
import { Dialog, Notice } from '../../ui';
import { CodeForm } from './challenge-page';

type StepUpMethod = 'totp' | 'passkey' | 'recovery_code';
interface Request {
  methods: StepUpMethod[];
  settle: (done: boolean) => void;
}

/** Thrown when the member closes the step-up dialog: the action is dropped without an error message. */
export class StepUpCancelled extends Error {}

let request: Request | null = null;
const listeners = new Set<() => void>();
function setRequest(next: Request | null): void {
  request = next;
  for (const l of listeners) l();
}

/**
 * Runs a change that may need a recent sign-in with the member's strongest factor (STEP_UP_REQUIRED):
 * asks for that factor in a dialog, renews the access token (it carries the step-up) and runs it again.
 */
export async function withStepUp<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (e) {
    if (!(e instanceof ApiError) || e.code !== ErrorCodes.STEP_UP_REQUIRED) throw e;
    const data = (e.data ?? {}) as { required?: StepUpMethod | null; methods?: StepUpMethod[] };
    const methods = [...new Set([...(data.required ? [data.required] : []), ...(data.methods ?? [])])];
    const done = await new Promise<boolean>((settle) => setRequest({ methods, settle }));
    if (!done) throw new StepUpCancelled();
    return action();
  }
}

interface StepUpResponse {
  token: string;
}

/** The dialog withStepUp opens; rendered once by the security page, which says which factors the member has. */
export function StepUpDialog({ factors }: { factors: Factors | null }) {
  const current = useSyncExternalStore(
    (l) => (listeners.add(l), () => listeners.delete(l)),
    () => request,
  );
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const close = (done: boolean) => {
    current?.settle(done);
    setRequest(null);
    setError(null);
    setBusy(false);
  };
  const stepUp = async (body: () => Promise<object>) => {
    setBusy(true);
    setError(null);
    try {
      const { token } = await api<StepUpResponse>('POST', '/api/v1/app/auth/step-up', await body());
      tokenRenewed(token);
      close(true);
    } catch (e) {
      setError(messageOf(e));
      setBusy(false);
    }
  };
  const passkey = () =>
    stepUp(async () => {
      const optionsJSON = await api<PublicKeyCredentialRequestOptionsJSON>(
        'POST',
        '/api/v1/app/auth/step-up/passkey-options',
      );
      const credential = await startAuthentication({ optionsJSON }).catch(() => {
        throw new ApiError(0, 0, t('signIn.passkeyFailed'));
      });
      return { method: 'passkey', credential };
    });
  // The server lists every kind of factor that would do; only those the member has are offered.
  const has: Record<StepUpMethod, boolean> = {
    passkey: !!factors?.passkeys.length,
    totp: !!factors?.totp.enabled,
    recovery_code: (factors?.recoveryCodes.remaining ?? 0) > 0,
  };
  const methods = (current?.methods ?? []).filter((m) => has[m]);
  return (
    <Dialog title={t('stepUp.title')} open={current !== null} onClose={() => close(false)}>
      <p className="intro">{t('stepUp.intro')}</p>
      {methods.includes('passkey') && (
        <button type="button" className="primary wide-button" disabled={busy} onClick={() => void passkey()}>
          {t('challenge.passkey')}
        </button>
      )}
      {methods.includes('totp') && (
        <CodeForm
          title={t('challenge.totp')}
          label={t('challenge.totpCode')}
          numeric
          busy={busy}
          submit={(code) => stepUp(async () => ({ method: 'totp', code }))}
        />
      )}
      {methods.includes('recovery_code') && (
        <CodeForm
          title={t('challenge.recovery')}
          label={t('challenge.recoveryCode')}
          busy={busy}
          submit={(code) => stepUp(async () => ({ method: 'recovery_code', code }))}
        />
      )}
      <Notice error={error} />
      <div className="row end">
        <button type="button" onClick={() => close(false)}>
          {t('stepUp.cancel')}
        </button>
      </div>
    </Dialog>
  );
}

/** The message to show for a failed action (none when the member cancelled the step-up). */
export const failureOf = (e: unknown): string | null => (e instanceof StepUpCancelled ? null : messageOf(e));
