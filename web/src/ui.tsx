import { ReactNode, useEffect, useId, useRef } from 'react';
import { api } from './api/client';
import { signedOut, useSession } from './api/session';
import { t } from './i18n';
import { Area, navigate } from './router';

/** The frame of every page: skip link, header (area, member, sign-out) and the main landmark. */
export function Shell({
  area,
  children,
  wide = false,
  nav,
  className,
}: {
  area: Area;
  children: ReactNode;
  wide?: boolean;
  nav?: ReactNode;
  className?: string;
}) {
  const { member } = useSession();
  const signOut = async () => {
    // The session ends on the server too (its refresh token stops working); locally in any case.
    await api('POST', '/api/v1/app/auth/logout').catch(() => undefined);
    signedOut();
    navigate(area, '/sign-in', { replace: true });
  };
  return (
    <>
      <a className="skip" href="#main">
        {t('app.skip')}
      </a>
      <header className="top">
        <span className="brand">{area === 'console' ? t('app.console') : t('app.account')}</span>
        {member && (
          <span className="who">
            <span className="name">{member.nickname ?? member.username}</span>
            <button type="button" className="quiet" onClick={() => void signOut()}>
              {t('app.signOut')}
            </button>
          </span>
        )}
      </header>
      {nav ? (
        <div className="console-frame">
          {nav}
          <main id="main" className={className ?? 'console'}>
            {children}
          </main>
        </div>
      ) : (
        <main id="main" className={className ?? (wide ? 'wide' : 'narrow')}>
          {children}
        </main>
      )}
    </>
  );
}

/** A page heading that takes focus when the page changes (router.ts navigate). */
export const PageTitle = ({ children }: { children: ReactNode }) => <h1 tabIndex={-1}>{children}</h1>;

/** A labelled input; the hint and error are tied to it for screen readers. */
export function Field(props: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  type?: string;
  autoComplete?: string;
  inputMode?: 'numeric' | 'tel' | 'text' | 'email';
  hint?: string;
  required?: boolean;
  maxLength?: number;
  pattern?: string;
  name?: string;
  autoFocus?: boolean;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      <input
        id={id}
        name={props.name}
        type={props.type ?? 'text'}
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
        autoComplete={props.autoComplete}
        inputMode={props.inputMode}
        required={props.required ?? true}
        maxLength={props.maxLength}
        pattern={props.pattern}
        autoFocus={props.autoFocus}
        aria-describedby={props.hint ? `${id}-hint` : undefined}
      />
      {props.hint && (
        <p className="hint" id={`${id}-hint`}>
          {props.hint}
        </p>
      )}
    </div>
  );
}

/** A result line: an error is announced at once (role=alert), a success politely (role=status). */
export function Notice({ error, success }: { error?: string | null; success?: string | null }) {
  return (
    <>
      <div role="alert" className={error ? 'notice error' : 'notice empty'}>
        {error}
      </div>
      <div role="status" className={success ? 'notice success' : 'notice empty'}>
        {success}
      </div>
    </>
  );
}

/** A titled block of the security page. */
export function Section({
  id,
  title,
  intro,
  children,
}: {
  id: string;
  title: string;
  intro?: string;
  children: ReactNode;
}) {
  return (
    <section className="card" id={id} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      {intro && <p className="intro">{intro}</p>}
      {children}
    </section>
  );
}

/** A modal dialog (the native <dialog>: focus is kept inside, Escape closes it). */
export function Dialog({
  title,
  open,
  onClose,
  children,
}: {
  title: string;
  open: boolean;
  onClose: () => void;
  children: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const id = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} aria-labelledby={id} onClose={onClose} onCancel={onClose}>
      <h2 id={id}>{title}</h2>
      {open && children}
    </dialog>
  );
}
