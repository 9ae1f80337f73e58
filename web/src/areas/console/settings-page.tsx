import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { FormEvent, useId, useState } from 'react';
import { api, messageOf, uploadFile } from '../../api/client';
import { MessageKey, t } from '../../i18n';
import { prefix } from '../../router';
import { Field, Notice } from '../../ui';
import { ConsolePage, useCanWrite } from './console-area';

/** Every public setting the site reads (apps/membership/src/site-config: site.*, seo.*, footer.*). */
const TEXTS: Array<[string, MessageKey, number]> = [
  ['site.name', 'console.settings.name', 100],
  ['site.description', 'console.settings.description', 500],
  ['seo.title_template', 'console.settings.titleTemplate', 200],
  ['seo.keywords', 'console.settings.keywords', 500],
  ['footer.copyright', 'console.settings.copyright', 200],
  ['footer.icp', 'console.settings.icp', 100],
];
const IMAGES: Array<[string, MessageKey]> = [
  ['site.logo', 'console.settings.logo'],
  ['site.favicon', 'console.settings.favicon'],
];

/** Site settings: saved with PUT /api/v1/admin/system/site-config; images uploaded to /api/v1/app/files first. */
export default function SettingsPage({ path }: { path: string }) {
  const config = useQuery({
    queryKey: ['site-config'],
    queryFn: () => api<{ values: Record<string, string> }>('GET', '/api/v1/admin/system/site-config'),
  });
  return (
    <ConsolePage path={path} title={t('console.nav.settings')}>
      <Notice error={config.error ? messageOf(config.error) : null} />
      {config.data && <SettingsForm initial={config.data.values} />}
    </ConsolePage>
  );
}

/**
 * The form starts from the settings as loaded and is the operator's from then on: a refetch of the settings
 * does not overwrite what they are typing.
 */
function SettingsForm({ initial }: { initial: Record<string, string> }) {
  const canWrite = useCanWrite();
  const queries = useQueryClient();
  const [values, setValues] = useState<Record<string, string>>(initial);
  const set = (key: string) => (v: string) => setValues((old) => ({ ...old, [key]: v }));
  const save = useMutation({
    mutationFn: () => {
      // An emptied field deletes its setting (the site falls back to its default).
      const body: Record<string, string | null> = {};
      for (const [key] of [...TEXTS, ...IMAGES]) body[key] = values[key]?.trim() ? values[key].trim() : null;
      return api<{ values: Record<string, string> }>('PUT', '/api/v1/admin/system/site-config', { values: body });
    },
    onSuccess: (r) => queries.setQueryData(['site-config'], r),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <>
      <Notice error={save.error ? messageOf(save.error) : null} success={save.isSuccess ? t('console.saved') : null} />
      <form onSubmit={submit} className="card">
        <fieldset disabled={!canWrite} className="plain">
          {TEXTS.map(([key, label, max]) => (
            <Field
              key={key}
              label={t(label)}
              name={key}
              value={values[key] ?? ''}
              onChange={set(key)}
              required={false}
              maxLength={max}
              hint={key === 'seo.title_template' ? t('console.settings.titleHint') : undefined}
            />
          ))}
          {IMAGES.map(([key, label]) => (
            <ImageSetting
              key={key}
              label={t(label)}
              name={key}
              value={values[key] ?? ''}
              onChange={set(key)}
              canWrite={canWrite}
            />
          ))}
          {canWrite && (
            <button type="submit" className="primary" disabled={save.isPending}>
              {t('console.save')}
            </button>
          )}
        </fieldset>
      </form>
    </>
  );
}

/** An image setting: its URL (editable), a preview, and an upload that fills the URL in. */
function ImageSetting({
  label,
  name,
  value,
  onChange,
  canWrite,
}: {
  label: string;
  name: string;
  value: string;
  onChange: (v: string) => void;
  canWrite: boolean;
}) {
  const id = useId();
  const upload = useMutation({
    mutationFn: (file: File) => uploadFile<{ url: string }>('/api/v1/app/files', file),
    onSuccess: (f) => onChange(f.url),
  });
  // Uploaded files are served by membership under its path prefix (CONTEXT_PATH).
  const src = value.startsWith('/') ? `${prefix}${value}` : value;
  return (
    <div className="image-setting">
      <Field label={label} name={name} value={value} onChange={onChange} required={false} maxLength={500} />
      <div className="preview">
        {value ? (
          <img src={src} alt={t('console.settings.preview', { name: label })} data-testid={`preview-${name}`} />
        ) : (
          <span className="meta-inline">{t('console.settings.noImage')}</span>
        )}
        {canWrite && (
          <>
            <label htmlFor={id}>{t('console.settings.upload', { name: label })}</label>
            <input
              id={id}
              type="file"
              accept="image/png,image/jpeg,image/gif,image/webp,image/x-icon,image/svg+xml"
              data-testid={`upload-${name}`}
              onChange={(e) => e.target.files?.[0] && upload.mutate(e.target.files[0])}
            />
          </>
        )}
      </div>
      <Notice
        error={upload.error ? messageOf(upload.error) : null}
        success={upload.isSuccess ? t('console.settings.uploaded') : null}
      />
    </div>
  );
}
