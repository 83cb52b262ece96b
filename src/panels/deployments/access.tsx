/**
 * A deployment's Access section: its API keys (name, prefix, created, last
 * used, expiry; make one, shown once with a copy button; revoke one) and who
 * may call it (auth required or not, a rate limit, allow / deny lists of
 * client addresses). The router enforces all of it.
 */
import { Clipboard, Dialog, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { copyIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import {
  createDeploymentKey,
  Deployment,
  DeploymentKey,
  describeError,
  listDeploymentKeys,
  revokeDeploymentKey,
  setDeploymentAccess
} from '../../api';
import { formatDateTime, formatRelativeTime } from '../../format';
import {
  accessForm,
  AccessField,
  accessOf,
  accessSummary,
  curlExample,
  IAccessForm,
  IKeyForm,
  planAccess,
  planNewKey,
  sortKeys
} from './accessLogic';

/** Keys are read again every this many live ticks (last used moves). */
const KEYS_EVERY_TICKS = 8;

export function AccessSection(props: {
  d: Deployment;
  /** Changes on every live tick of the view. */
  tick: number;
  /** The deployment changed here: the view reads it again. */
  changed: (d?: Deployment) => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { d, trans } = props;
  const access = accessOf(d);
  const [keys, setKeys] = React.useState<DeploymentKey[] | null>(null);
  const [keysError, setKeysError] = React.useState<string | null>(null);
  const [reload, setReload] = React.useState(0);
  const [made, setMade] = React.useState<DeploymentKey | null>(null);
  const [keyForm, setKeyForm] = React.useState<IKeyForm>({
    name: '',
    days: ''
  });
  const [keyError, setKeyError] = React.useState<string | null>(null);
  const [busy, setBusy] = React.useState<string | null>(null);
  const [form, setForm] = React.useState<IAccessForm>(accessForm(access));
  const [dirty, setDirty] = React.useState(false);
  const [saveError, setSaveError] = React.useState<string | null>(null);
  const [saved, setSaved] = React.useState(false);
  const slot = Math.floor(props.tick / KEYS_EVERY_TICKS);
  const accessKey = JSON.stringify(access);

  React.useEffect(() => {
    let live = true;
    listDeploymentKeys(d.project, d.name)
      .then(found => {
        if (live) {
          setKeys(found.keys);
          setKeysError(null);
        }
      })
      .catch(err => live && setKeysError(describeError(err).error));
    return () => {
      live = false;
    };
  }, [d.project, d.name, reload, slot]);

  React.useEffect(() => {
    if (!dirty) {
      setForm(accessForm(access)); // changed elsewhere (CLI, another tab)
    }
  }, [accessKey]);

  const edit = (change: Partial<IAccessForm>) => {
    setForm({ ...form, ...change });
    setDirty(true);
    setSaved(false);
  };
  const plan = planAccess(form, access);
  const fieldError = (field: AccessField): string | null => {
    if (plan.ok || !plan.errors[field]) {
      return null;
    }
    const [message, arg] = plan.errors[field]!;
    return trans.__(message, arg);
  };
  const nothingToSave = plan.ok && Object.keys(plan.changes).length === 0;

  const save = async () => {
    if (!plan.ok) {
      return;
    }
    setBusy('save');
    setSaveError(null);
    try {
      const next = await setDeploymentAccess(d.project, d.name, plan.changes);
      setDirty(false);
      setForm(accessForm(accessOf(next)));
      setSaved(true);
      props.changed(next);
    } catch (err) {
      setSaveError(describeError(err).error);
    } finally {
      setBusy(null);
    }
  };

  const create = async () => {
    const request = planNewKey(keyForm);
    if (!request.ok) {
      setKeyError(trans.__(request.error));
      return;
    }
    setBusy('create');
    setKeyError(null);
    try {
      const key = await createDeploymentKey(d.project, d.name, request.request);
      setMade(key);
      setKeyForm({ name: '', days: '' });
      setReload(reload + 1);
    } catch (err) {
      setKeyError(describeError(err).error);
    } finally {
      setBusy(null);
    }
  };

  const revoke = async (key: DeploymentKey) => {
    const result = await showDialog({
      title: trans.__('Revoke key %1?', key.name),
      body: trans.__(
        'Requests with key "%1" (%2…) are refused from now on. This cannot be undone; make a new key to call the deployment again.',
        key.name,
        key.prefix
      ),
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.warnButton({ label: trans.__('Revoke') })
      ]
    });
    if (!result.button.accept) {
      return;
    }
    setBusy(`revoke:${key.id}`);
    setKeyError(null);
    try {
      await revokeDeploymentKey(d.project, d.name, key.id);
      if (made?.id === key.id) {
        setMade(null);
      }
      setReload(reload + 1);
    } catch (err) {
      setKeyError(describeError(err).error);
    } finally {
      setBusy(null);
    }
  };

  const activeKeys = (keys ?? []).filter(k => k.state === 'active').length;
  const summary = accessSummary(access, activeKeys)
    .map(([message, ...args]) => trans.__(message, ...args))
    .join(' · ');
  const sorted = sortKeys(keys ?? []);
  const stateLabel = (state: string) =>
    state === 'active'
      ? trans.__('active')
      : state === 'expired'
        ? trans.__('expired')
        : state === 'revoked'
          ? trans.__('revoked')
          : state;

  return (
    <section className="cube-TSection cube-DAccess" data-auth={access.auth}>
      <h3>
        {trans.__('Access')}{' '}
        <span className="cube-TMuted cube-DAccess-summary">({summary})</span>
      </h3>
      {made && made.key ? (
        <div className="cube-DAccess-newkey" role="status">
          <div>
            <b>
              {trans.__('Copy key "%1" now: it is not shown again.', made.name)}
            </b>{' '}
            <span className="cube-TMuted">
              {trans.__('Only its hash is stored.')}
            </span>
          </div>
          <div className="cube-DAccess-newkey-row">
            <code className="cube-DAccess-secret" data-key-id={made.id}>
              {made.key}
            </code>
            <button
              className="cube-IconButton"
              title={trans.__('Copy the key')}
              aria-label={trans.__('Copy the key')}
              onClick={() => Clipboard.copyToSystem(made.key!)}
            >
              <copyIcon.react tag="span" />
            </button>
            <button className="cube-Button" onClick={() => setMade(null)}>
              {trans.__('Done')}
            </button>
          </div>
          {d.endpoint ? (
            <code className="cube-DAccess-curl">
              {curlExample(d.endpoint, d.model)}
            </code>
          ) : null}
        </div>
      ) : null}
      <div className="cube-DAccess-grid">
        <div className="cube-DAccess-keys">
          <h4>{trans.__('API keys')}</h4>
          {keysError ? (
            <p className="cube-TField-error">{keysError}</p>
          ) : keys === null ? (
            <p className="cube-TMuted">{trans.__('Reading the keys…')}</p>
          ) : sorted.length ? (
            <table className="cube-DAccess-table">
              <thead>
                <tr>
                  <th>{trans.__('name')}</th>
                  <th>{trans.__('key')}</th>
                  <th>{trans.__('created')}</th>
                  <th>{trans.__('last used')}</th>
                  <th>{trans.__('expires')}</th>
                  <th>{trans.__('state')}</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {sorted.map(k => (
                  <tr
                    key={k.id}
                    data-key={k.name}
                    data-state={k.state}
                    className={k.state === 'active' ? '' : 'cube-DAccess-gone'}
                  >
                    <td title={trans.__('made by %1', k.created_by)}>
                      {k.name}
                    </td>
                    <td>
                      <code>{k.prefix}…</code>
                    </td>
                    <td title={formatDateTime(k.created_at)}>
                      {formatRelativeTime(k.created_at)}
                    </td>
                    <td title={formatDateTime(k.last_used_at)}>
                      {k.last_used_at
                        ? formatRelativeTime(k.last_used_at)
                        : trans.__('never')}
                    </td>
                    <td title={formatDateTime(k.expires_at)}>
                      {k.expires_at
                        ? formatRelativeTime(k.expires_at)
                        : trans.__('never')}
                    </td>
                    <td>{stateLabel(k.state)}</td>
                    <td>
                      {k.state === 'revoked' ? null : (
                        <button
                          className="cube-TLink cube-DAccess-revoke"
                          disabled={busy !== null}
                          onClick={() => void revoke(k)}
                          title={trans.__('Refuse this key from now on')}
                        >
                          {busy === `revoke:${k.id}`
                            ? trans.__('Revoking…')
                            : trans.__('Revoke')}
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p className="cube-TMuted cube-DAccess-empty">
              {access.auth === 'required'
                ? trans.__(
                    'No key yet: nobody can call this deployment until you make one.'
                  )
                : trans.__(
                    'No key yet. Keys are not asked while auth is "none".'
                  )}
            </p>
          )}
          <form
            className="cube-DAccess-create"
            onSubmit={e => {
              e.preventDefault();
              void create();
            }}
          >
            <input
              className="cube-TField-input"
              name="key-name"
              value={keyForm.name}
              placeholder={trans.__('key name, e.g. ci')}
              aria-label={trans.__('Key name')}
              onChange={e => setKeyForm({ ...keyForm, name: e.target.value })}
            />
            <label className="cube-DAccess-days">
              {trans.__('expires in')}
              <input
                className="cube-TField-input"
                name="key-days"
                type="number"
                min={1}
                max={3650}
                value={keyForm.days}
                placeholder={trans.__('never')}
                onChange={e => setKeyForm({ ...keyForm, days: e.target.value })}
              />
              {trans.__('days')}
            </label>
            <button
              className="cube-Button cube-mod-primary"
              type="submit"
              disabled={busy !== null || !keyForm.name.trim()}
            >
              {busy === 'create'
                ? trans.__('Creating…')
                : trans.__('Create key')}
            </button>
          </form>
          {keyError ? <p className="cube-TField-error">{keyError}</p> : null}
          <p className="cube-TMuted cube-DAccess-how">
            {trans.__(
              'Callers send the key as "Authorization: Bearer <key>" (the openai client’s api_key, tritonclient’s headers=) or as "X-API-Key: <key>". The health probes /v2/health/live and /v2/health/ready stay open.'
            )}
          </p>
        </div>
        <form
          className="cube-DAccess-settings"
          onSubmit={e => {
            e.preventDefault();
            void save();
          }}
        >
          <h4>{trans.__('Who may call')}</h4>
          <label className="cube-DAccess-row">
            <span>{trans.__('Authentication')}</span>
            <select
              className="cube-TField-input"
              name="auth"
              value={form.auth}
              onChange={e =>
                edit({ auth: e.target.value as IAccessForm['auth'] })
              }
            >
              <option value="required">{trans.__('API key required')}</option>
              <option value="none">
                {trans.__('none (anyone who reaches the port)')}
              </option>
            </select>
          </label>
          <label className="cube-DAccess-check">
            <input
              type="checkbox"
              name="rate-limit"
              checked={form.limit}
              onChange={e => edit({ limit: e.target.checked })}
            />
            {trans.__('Limit the request rate (429 beyond it)')}
          </label>
          {form.limit ? (
            <div className="cube-DAccess-limit">
              <label>
                <input
                  className={`cube-TField-input${fieldError('rps') ? ' cube-mod-invalid' : ''}`}
                  name="rps"
                  type="number"
                  min={0}
                  step="any"
                  value={form.rps}
                  onChange={e => edit({ rps: e.target.value })}
                />
                {trans.__('requests/s')}
              </label>
              <label>
                {trans.__('burst')}
                <input
                  className={`cube-TField-input${fieldError('burst') ? ' cube-mod-invalid' : ''}`}
                  name="burst"
                  type="number"
                  min={1}
                  step={1}
                  value={form.burst}
                  placeholder={form.rps || '1'}
                  onChange={e => edit({ burst: e.target.value })}
                />
              </label>
              <label className="cube-DAccess-check">
                <input
                  type="checkbox"
                  name="per-key"
                  checked={form.perKey}
                  onChange={e => edit({ perKey: e.target.checked })}
                />
                {trans.__('per key')}
              </label>
            </div>
          ) : null}
          {fieldError('rps') ? (
            <p className="cube-TField-error">{fieldError('rps')}</p>
          ) : null}
          {fieldError('burst') ? (
            <p className="cube-TField-error">{fieldError('burst')}</p>
          ) : null}
          <div className="cube-DAccess-lists">
            {(['allow', 'deny'] as const).map(field => (
              <label key={field} className="cube-DAccess-list">
                <span>
                  {field === 'allow'
                    ? trans.__('Allow only (empty: any address)')
                    : trans.__('Deny')}
                </span>
                <textarea
                  className={`cube-TField-input${fieldError(field) ? ' cube-mod-invalid' : ''}`}
                  name={field}
                  rows={3}
                  spellCheck={false}
                  placeholder={field === 'allow' ? '10.0.0.0/8' : '192.0.2.13'}
                  value={form[field]}
                  onChange={e =>
                    edit(
                      field === 'allow'
                        ? { allow: e.target.value }
                        : { deny: e.target.value }
                    )
                  }
                />
                {fieldError(field) ? (
                  <span className="cube-TField-error">{fieldError(field)}</span>
                ) : null}
              </label>
            ))}
          </div>
          <div className="cube-DAccess-actions">
            <button
              className="cube-Button cube-mod-primary"
              type="submit"
              disabled={busy !== null || !plan.ok || nothingToSave}
            >
              {busy === 'save' ? trans.__('Saving…') : trans.__('Save')}
            </button>
            {dirty ? (
              <button
                className="cube-Button"
                type="button"
                disabled={busy !== null}
                onClick={() => {
                  setForm(accessForm(access));
                  setDirty(false);
                  setSaveError(null);
                }}
              >
                {trans.__('Reset')}
              </button>
            ) : null}
            {saved && !dirty ? (
              <span className="cube-TMuted" role="status">
                {trans.__('Saved; the router applies it now.')}
              </span>
            ) : null}
            {saveError ? (
              <span className="cube-TField-error">{saveError}</span>
            ) : null}
          </div>
        </form>
      </div>
    </section>
  );
}
