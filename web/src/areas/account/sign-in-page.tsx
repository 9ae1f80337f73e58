import {
  browserSupportsWebAuthn,
  browserSupportsWebAuthnAutofill,
  startAuthentication,
  WebAuthnAbortService,
} from '@simplewebauthn/browser';
import { FormEvent, useEffect, useState } from 'react';
import { ApiError, messageOf, publicApi } from '../../api/client';
import type { MemberLogin } from '../../api/session';
import type { PublicKeyCredentialRequestOptionsJSON, SignInResult } from '../../api/types';
import { t } from '../../i18n';
import type { Area } from '../../router';
import { Field, Notice, PageTitle, Shell } from '../../ui';
import { finishSignIn } from './sign-in-flow';

type Method = 'password' | 'phone';
const RESEND_SECONDS = 60; // send-code's resend interval (apps/membership/src/verification/verification.service.ts)

/** Sign-in by password, by SMS code, or with a passkey (passwordless); the same page for the account area and the console. */
export function SignInPage({ area = 'account' }: { area?: Area }) {
  const [method, setMethod] = useState<Method>('password');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const run = async (step: () => Promise<SignInResult>) => {
    setBusy(true);
    setError(null);
    try {
      finishSignIn(await step(), area);
    } catch (e) {
      setError(messageOf(e));
      setBusy(false);
    }
  };

  return (
    <Shell area={area}>
      <div className="card">
        <PageTitle>{t('signIn.title')}</PageTitle>
        <div className="segmented" role="group" aria-label={t('signIn.method')}>
          {(['password', 'phone'] as const).map((m) => (
            <button
              key={m}
              type="button"
              aria-pressed={method === m}
              onClick={() => {
                setMethod(m);
                setError(null);
              }}
            >
              {m === 'password' ? t('signIn.byPassword') : t('signIn.byPhone')}
            </button>
          ))}
        </div>
        {method === 'password' ? (
          <PasswordForm busy={busy} run={run} />
        ) : (
          <PhoneForm busy={busy} run={run} setError={setError} />
        )}
        <Notice error={error} />
        {browserSupportsWebAuthn() && <PasskeySignIn busy={busy} run={run} />}
      </div>
    </Shell>
  );
}

interface FormProps {
  busy: boolean;
  run: (step: () => Promise<SignInResult>) => Promise<void>;
}

function PasswordForm({ busy, run }: FormProps) {
  useConditionalPasskey(run);
  const [account, setAccount] = useState('');
  const [password, setPassword] = useState('');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run(() => publicApi<SignInResult>('POST', '/api/v1/app/auth/login', { account, password }));
  };
  return (
    <form onSubmit={submit}>
      <Field
        label={t('signIn.account')}
        name="account"
        value={account}
        onChange={setAccount}
        autoComplete="username webauthn"
        maxLength={254}
      />
      <Field
        label={t('signIn.password')}
        name="password"
        type="password"
        value={password}
        onChange={setPassword}
        autoComplete="current-password"
        maxLength={128}
      />
      <button type="submit" className="primary" disabled={busy}>
        {t('signIn.submit')}
      </button>
    </form>
  );
}

function PhoneForm({ busy, run, setError }: FormProps & { setError: (e: string | null) => void }) {
  const [phone, setPhone] = useState('');
  const [code, setCode] = useState('');
  const [sentTo, setSentTo] = useState<string | null>(null);
  const [wait, setWait] = useState(0);
  useEffect(() => {
    if (wait <= 0) return;
    const timer = setTimeout(() => setWait(wait - 1), 1000);
    return () => clearTimeout(timer);
  }, [wait]);
  const send = async () => {
    setError(null);
    try {
      await publicApi('POST', '/api/v1/app/auth/send-code', { type: 'sms', phone });
      setSentTo(phone);
      setWait(RESEND_SECONDS);
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run(() => publicApi<MemberLogin>('POST', '/api/v1/app/auth/login-by-phone', { phone, code }));
  };
  return (
    <form onSubmit={submit}>
      <Field
        label={t('signIn.phone')}
        name="phone"
        type="tel"
        value={phone}
        onChange={setPhone}
        autoComplete="tel"
        inputMode="tel"
        hint={t('signIn.phoneNote')}
        maxLength={20}
      />
      <div className="row">
        <button type="button" onClick={() => void send()} disabled={!phone || wait > 0}>
          {wait > 0 ? t('signIn.resendIn', { seconds: wait }) : t('signIn.sendCode')}
        </button>
      </div>
      {sentTo && <p role="status">{t('signIn.codeSent', { phone: sentTo })}</p>}
      <Field
        label={t('signIn.code')}
        name="code"
        value={code}
        onChange={setCode}
        autoComplete="one-time-code"
        inputMode="numeric"
        pattern="\d{6}"
        maxLength={6}
      />
      <button type="submit" className="primary" disabled={busy}>
        {t('signIn.submit')}
      </button>
    </form>
  );
}

/** Asks the server for passwordless options (they name no credential): a discoverable passkey's sign-in. */
async function passkeyLogin(autofill: boolean): Promise<MemberLogin> {
  const optionsJSON = await publicApi<PublicKeyCredentialRequestOptionsJSON>(
    'POST',
    '/api/v1/app/auth/passkey/options',
  );
  let credential;
  try {
    credential = await startAuthentication({ optionsJSON, useBrowserAutofill: autofill });
  } catch {
    throw new ApiError(0, 0, t('signIn.passkeyFailed'));
  }
  return publicApi<MemberLogin>('POST', '/api/v1/app/auth/passkey/login', { credential });
}

/**
 * Conditional mediation: while the password form shows, the browser offers the member's passkeys in the
 * account field's autofill (`autocomplete="username webauthn"`); choosing one signs in without a password.
 * The passkey button, or leaving the page, cancels this pending request (WebAuthnAbortService).
 */
function useConditionalPasskey(run: FormProps['run']) {
  useEffect(() => {
    let live = true;
    void (async () => {
      if (!(await browserSupportsWebAuthnAutofill()) || !live) return;
      try {
        const login = await passkeyLogin(true);
        if (live) await run(async () => login);
      } catch {
        // Cancelled (the button took over, or the page changed) or refused: the form stays as it is.
      }
    })();
    return () => {
      live = false;
      WebAuthnAbortService.cancelCeremony();
    };
    // Once per showing of the form (`run` is recreated on every render of the page).
  }, []);
}

/** Passwordless sign-in with a discoverable passkey (the server's options name no credential). */
function PasskeySignIn({ busy, run }: FormProps) {
  useEffect(() => () => WebAuthnAbortService.cancelCeremony(), []);
  const signIn = () => run(() => passkeyLogin(false));
  return (
    <>
      <p className="divider">
        <span>{t('signIn.or')}</span>
      </p>
      <button type="button" className="wide-button" disabled={busy} onClick={() => void signIn()}>
        {t('signIn.passkey')}
      </button>
    </>
  );
}
