import { startAuthentication, startRegistration } from '@simplewebauthn/browser';
import { FormEvent, ReactNode, useEffect, useState } from 'react';
import { ApiError, messageOf, publicApi } from '../../api/client';
import type { MemberLogin } from '../../api/session';
import {
  ErrorCodes,
  MfaChallenge,
  MfaEnrolmentLogin,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  TotpEnrolment,
} from '../../api/types';
import { t } from '../../i18n';
import { Area, href, navigate } from '../../router';
import { Field, Notice, PageTitle, Shell } from '../../ui';
import { showRecoveryCodes } from './recovery-codes';
import { clearChallenge, finishSignIn, pendingChallenge } from './sign-in-flow';

/** The second step of a sign-in: a TOTP code, a passkey or a recovery code; or enrolling a first factor when the role requires one. */
export function ChallengePage({ area = 'account' }: { area?: Area }) {
  const [challenge] = useState(pendingChallenge);
  const [error, setError] = useState<string | null>(null);
  const [expired, setExpired] = useState(false);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (!challenge) navigate(area, '/sign-in', { replace: true });
  }, [challenge]);
  if (!challenge) return null;

  const run = async (step: () => Promise<MemberLogin | MfaEnrolmentLogin>) => {
    setBusy(true);
    setError(null);
    try {
      const login = await step();
      showRecoveryCodes((login as MfaEnrolmentLogin).recoveryCodes);
      finishSignIn(login, area);
    } catch (e) {
      if (e instanceof ApiError && e.code === ErrorCodes.MFA_CHALLENGE_INVALID) {
        clearChallenge();
        setExpired(true);
      }
      setError(messageOf(e));
      setBusy(false);
    }
  };

  const body = expired ? (
    <p>
      <a href={href(area, '/sign-in')}>{t('challenge.restart')}</a>
    </p>
  ) : challenge.enrolmentRequired ? (
    <Enrolment challenge={challenge} busy={busy} run={run} onError={setError} />
  ) : (
    <Verification challenge={challenge} busy={busy} run={run} />
  );
  return (
    <Shell area={area}>
      <div className="card">
        <PageTitle>{challenge.enrolmentRequired ? t('challenge.enrolTitle') : t('challenge.title')}</PageTitle>
        <p className="intro">{challenge.enrolmentRequired ? t('challenge.enrolIntro') : t('challenge.intro')}</p>
        {body}
        <Notice error={error} />
      </div>
    </Shell>
  );
}

interface StepProps {
  challenge: MfaChallenge;
  busy: boolean;
  run: (step: () => Promise<MemberLogin | MfaEnrolmentLogin>) => Promise<void>;
}

function passkeyCancelled(): never {
  throw new ApiError(0, 0, t('signIn.passkeyFailed'));
}

function Verification({ challenge, busy, run }: StepProps) {
  const { mfaToken, methods } = challenge;
  const verify = (body: object) => publicApi<MemberLogin>('POST', '/api/v1/app/auth/mfa/verify', { mfaToken, ...body });
  const passkey = () =>
    run(async () => {
      const optionsJSON = await publicApi<PublicKeyCredentialRequestOptionsJSON>(
        'POST',
        '/api/v1/app/auth/mfa/passkey-options',
        { mfaToken },
      );
      const credential = await startAuthentication({ optionsJSON }).catch(passkeyCancelled);
      return verify({ method: 'passkey', credential });
    });
  return (
    <>
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
          submit={(code) => run(() => verify({ method: 'totp', code }))}
        />
      )}
      {methods.includes('recovery_code') && (
        <CodeForm
          title={t('challenge.recovery')}
          label={t('challenge.recoveryCode')}
          busy={busy}
          submit={(code) => run(() => verify({ method: 'recovery_code', code }))}
        />
      )}
    </>
  );
}

/** A one-field form for a code (TOTP: 6 digits; a recovery code: letters, digits, dashes). */
export function CodeForm(props: {
  title: string;
  label: string;
  action?: string;
  numeric?: boolean;
  busy: boolean;
  submit: (code: string) => Promise<void>;
  children?: ReactNode;
}) {
  const { title, label, action = t('challenge.verify'), numeric = false, busy, submit, children } = props;
  const [code, setCode] = useState('');
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    void submit(code.trim());
  };
  return (
    <form onSubmit={onSubmit} aria-label={title} className="sub">
      <h2>{title}</h2>
      {children}
      <Field
        label={label}
        value={code}
        onChange={setCode}
        autoComplete="one-time-code"
        inputMode={numeric ? 'numeric' : 'text'}
        pattern={numeric ? '\\d{6}' : undefined}
        maxLength={numeric ? 6 : 32}
      />
      <button type="submit" className="primary" disabled={busy}>
        {action}
      </button>
    </form>
  );
}

/** MFA_REQUIRED_ROLES: the member sets up an authenticator app or a passkey with the challenge token, then is signed in. */
function Enrolment({ challenge, busy, run, onError }: StepProps & { onError: (e: string | null) => void }) {
  const { mfaToken } = challenge;
  const [totp, setTotp] = useState<TotpEnrolment | null>(null);
  const startTotp = async () => {
    onError(null);
    try {
      setTotp(await publicApi<TotpEnrolment>('POST', '/api/v1/app/auth/mfa/enrol/totp', { mfaToken }));
    } catch (e) {
      onError(messageOf(e));
    }
  };
  const passkey = () =>
    run(async () => {
      const optionsJSON = await publicApi<PublicKeyCredentialCreationOptionsJSON>(
        'POST',
        '/api/v1/app/auth/mfa/enrol/passkey/options',
        { mfaToken },
      );
      const credential = await startRegistration({ optionsJSON }).catch(passkeyCancelled);
      return publicApi<MfaEnrolmentLogin>('POST', '/api/v1/app/auth/mfa/enrol/passkey', { mfaToken, credential });
    });
  return (
    <>
      <button type="button" className="primary wide-button" disabled={busy} onClick={() => void passkey()}>
        {t('passkeys.add')}
      </button>
      {totp ? (
        <CodeForm
          title={t('totp.title')}
          label={t('totp.code')}
          numeric
          busy={busy}
          submit={(code) =>
            run(() =>
              publicApi<MfaEnrolmentLogin>('POST', '/api/v1/app/auth/mfa/enrol/totp/confirm', { mfaToken, code }),
            )
          }
        >
          <TotpSecret enrolment={totp} />
        </CodeForm>
      ) : (
        <div className="sub">
          <h2>{t('totp.title')}</h2>
          <p className="intro">{t('totp.intro')}</p>
          <button type="button" onClick={() => void startTotp()} disabled={busy}>
            {t('totp.enable')}
          </button>
        </div>
      )}
    </>
  );
}

/** The QR image and the key typed by hand, for an authenticator app. */
export function TotpSecret({ enrolment }: { enrolment: TotpEnrolment }) {
  return (
    <div className="totp-secret">
      <p>{t('totp.scan')}</p>
      <img src={enrolment.qrDataUrl} alt={t('totp.qrAlt')} width={180} height={180} />
      <p>
        {t('totp.secret')}: <code className="secret">{enrolment.secret}</code>
      </p>
    </div>
  );
}
