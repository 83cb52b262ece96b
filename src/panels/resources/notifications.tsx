/**
 * The Notifications panel (main area): a project's alert rules over
 * `/projects/{project}/alert-rules`: list, add (events, channel, URL and
 * secret, which the server answers masked), send a test, read the delivery
 * log, remove.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import {
  alertDeliveries,
  AlertDelivery,
  AlertRule,
  ChannelType,
  createAlertRule,
  deleteAlertRule,
  describeError,
  listAlertRules,
  listProjects,
  testAlertRule
} from '../../api';
import {
  ALERT_EVENTS,
  QUOTA_EVENT,
  QUOTA_RESOURCES,
  quotaResourceLabel,
  CHANNEL_TYPES,
  channelText,
  emptyRuleForm,
  hasSecret,
  IRuleForm,
  ruleRequest
} from './logic';

type ErrorText = { error: string; detail: string };

export function channelLabel(
  type: ChannelType,
  trans: TranslationBundle
): string {
  switch (type) {
    case 'webhook':
      return trans.__('Webhook (JSON)');
    case 'wecom':
      return trans.__('WeCom group bot');
    case 'dingtalk':
      return trans.__('DingTalk robot');
    case 'feishu':
      return trans.__('Feishu bot');
    case 'slack':
      return trans.__('Slack incoming webhook');
    case 'email':
      return trans.__('E-mail (SMTP)');
  }
}

export class NotificationsView extends ReactWidget {
  constructor(options: NotificationsView.IOptions) {
    super();
    this.addClass('cube-Notifications');
    this._trans = options.translator.load('cube_lab');
    this._project = options.project ?? '';
    this.title.label = this._trans.__('Notifications');
    this.title.caption = this._trans.__('Alert rules of a project');
  }

  get project(): string {
    return this._project;
  }

  protected render(): JSX.Element {
    return (
      <NotificationsBody
        initialProject={this._project}
        onProject={p => (this._project = p)}
        trans={this._trans}
      />
    );
  }

  private _trans: TranslationBundle;
  private _project: string;
}

export namespace NotificationsView {
  export interface IOptions {
    translator: ITranslator;
    project?: string;
  }
}

function NotificationsBody(props: {
  initialProject: string;
  onProject: (project: string) => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { trans } = props;
  const [projects, setProjects] = React.useState<string[]>([]);
  const [project, setProject] = React.useState(props.initialProject);
  const [rules, setRules] = React.useState<AlertRule[] | null>(null);
  const [error, setError] = React.useState<ErrorText | null>(null);
  const [version, setVersion] = React.useState(0);
  const [shown, setShown] = React.useState<string>('');

  React.useEffect(() => {
    listProjects()
      .then(found => {
        const names = found.projects.map(p => p.name);
        setProjects(names);
        if (!project && names.length) {
          setProject(names[0]);
        }
      })
      .catch(err => setError(describeError(err)));
  }, []);
  React.useEffect(() => {
    if (!project) {
      return;
    }
    props.onProject(project);
    let stopped = false;
    listAlertRules(project)
      .then(found => {
        if (!stopped) {
          setRules(found);
          setError(null);
        }
      })
      .catch(err => !stopped && setError(describeError(err)));
    return () => {
      stopped = true;
    };
  }, [project, version]);

  const reload = () => setVersion(v => v + 1);
  return (
    <div className="cube-Notifications-body">
      <h2>{trans.__('Notifications')}</h2>
      <label className="cube-Notifications-project">
        {trans.__('Project')}{' '}
        <select
          value={project}
          onChange={e => {
            setRules(null);
            setProject(e.currentTarget.value);
          }}
        >
          {projects.map(p => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </label>
      {error ? <ErrorBox error={error} /> : null}
      <section className="cube-Notifications-rules">
        <h3>{trans.__('Rules')}</h3>
        {rules === null ? (
          <p className="cube-TMuted">{trans.__('Loading…')}</p>
        ) : rules.length ? (
          <ul>
            {rules.map(rule => (
              <RuleItem
                key={rule.name}
                rule={rule}
                project={project}
                expanded={shown === rule.name}
                toggle={() => setShown(shown === rule.name ? '' : rule.name)}
                removed={reload}
                trans={trans}
              />
            ))}
          </ul>
        ) : (
          <p className="cube-TMuted cube-Notifications-empty">
            {trans.__('This project has no alert rules yet.')}
          </p>
        )}
      </section>
      {project ? (
        <AddRule
          project={project}
          added={name => {
            setShown(name);
            reload();
          }}
          trans={trans}
        />
      ) : null}
    </div>
  );
}

function RuleItem(props: {
  rule: AlertRule;
  project: string;
  expanded: boolean;
  toggle: () => void;
  removed: () => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { rule, project, trans } = props;
  const [deliveries, setDeliveries] = React.useState<AlertDelivery[] | null>(
    null
  );
  const [busy, setBusy] = React.useState(false);
  const [error, setError] = React.useState<ErrorText | null>(null);
  const load = () =>
    alertDeliveries(project, rule.name)
      .then(setDeliveries)
      .catch(err => setError(describeError(err)));
  React.useEffect(() => {
    if (props.expanded) {
      void load();
    }
  }, [props.expanded, project, rule.name]);
  const act = async (what: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await what();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <li className="cube-Notifications-rule" data-rule={rule.name}>
      <div className="cube-Notifications-ruleHead">
        <button className="cube-TLink" onClick={props.toggle}>
          <strong>{rule.name}</strong>
        </button>
        <span className="cube-Notifications-events">
          {rule.events.join(', ')}
        </span>
        <span className="cube-TMuted">
          {channelLabel(rule.channel.type, trans)}: {channelText(rule.channel)}
        </span>
        <span className="cube-Notifications-actions">
          <button
            className="jp-mod-styled"
            disabled={busy}
            onClick={() =>
              void act(async () => {
                await testAlertRule(project, rule.name);
                if (!props.expanded) {
                  props.toggle();
                } else {
                  await load();
                }
              })
            }
          >
            {trans.__('Send a test')}
          </button>
          <button
            className="jp-mod-styled jp-mod-warn"
            disabled={busy}
            onClick={() =>
              void act(async () => {
                await deleteAlertRule(project, rule.name);
                props.removed();
              })
            }
          >
            {trans.__('Remove')}
          </button>
        </span>
      </div>
      {error ? <ErrorBox error={error} /> : null}
      {props.expanded ? (
        <table className="cube-Notifications-log">
          <caption>{trans.__('Delivery log')}</caption>
          <thead>
            <tr>
              <th>{trans.__('When')}</th>
              <th>{trans.__('Event')}</th>
              <th>{trans.__('Outcome')}</th>
              <th>{trans.__('Attempts')}</th>
            </tr>
          </thead>
          <tbody>
            {(deliveries ?? []).map((d, i) => (
              <tr key={i} data-ok={d.ok ? 'true' : 'false'}>
                <td>{new Date(d.at).toLocaleString()}</td>
                <td>{d.event}</td>
                <td>
                  {d.ok
                    ? trans.__('delivered (%1)', d.status ?? '')
                    : trans.__('failed: %1', d.error)}
                </td>
                <td>{d.attempts}</td>
              </tr>
            ))}
            {deliveries && !deliveries.length ? (
              <tr>
                <td colSpan={4} className="cube-TMuted">
                  {trans.__('Nothing sent yet.')}
                </td>
              </tr>
            ) : null}
          </tbody>
        </table>
      ) : null}
    </li>
  );
}

function AddRule(props: {
  project: string;
  added: (name: string) => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { trans } = props;
  const [form, setForm] = React.useState<IRuleForm>(emptyRuleForm());
  const [problem, setProblem] = React.useState('');
  const [error, setError] = React.useState<ErrorText | null>(null);
  const [busy, setBusy] = React.useState(false);
  const set = (patch: Partial<IRuleForm>) => setForm({ ...form, ...patch });
  const text = (
    key: keyof IRuleForm,
    label: string,
    type: 'text' | 'password' = 'text'
  ) => (
    <label className="cube-Notifications-field">
      <span>{label}</span>
      <input
        name={key}
        type={type}
        autoComplete="off"
        value={String(form[key])}
        onChange={e => set({ [key]: e.currentTarget.value })}
      />
    </label>
  );
  const submit = async () => {
    const checked = ruleRequest(form, trans);
    if ('problem' in checked) {
      setProblem(checked.problem);
      return;
    }
    setProblem('');
    setError(null);
    setBusy(true);
    try {
      await createAlertRule(props.project, checked.request);
      setForm(emptyRuleForm());
      props.added(checked.request.name);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="cube-Notifications-add">
      <h3>{trans.__('Add a rule')}</h3>
      {text('name', trans.__('Name'))}
      <fieldset className="cube-Notifications-eventsPick">
        <legend>{trans.__('Events')}</legend>
        {ALERT_EVENTS.map(ev => (
          <label key={ev}>
            <input
              type="checkbox"
              value={ev}
              checked={form.events.includes(ev)}
              onChange={e =>
                set({
                  events: e.currentTarget.checked
                    ? [...form.events, ev]
                    : form.events.filter(x => x !== ev)
                })
              }
            />{' '}
            {ev}
          </label>
        ))}
      </fieldset>
      {form.events.some(e => e.endsWith('.duration'))
        ? text('durationMinutes', trans.__('Duration limit (minutes)'))
        : null}
      {form.events.some(
        e => e === 'deployment.error_rate' || e === 'deployment.p99'
      )
        ? text(
            'threshold',
            trans.__('Threshold (error rate 0–1, or p99 in ms)')
          )
        : null}
      {form.events.includes(QUOTA_EVENT) ? (
        <>
          {text('thresholdPct', trans.__('Quota use threshold (%)'))}
          <label className="cube-Notifications-field">
            <span>{trans.__('Quota')}</span>
            <select
              name="quotaResource"
              value={form.quotaResource}
              onChange={e => set({ quotaResource: e.currentTarget.value })}
            >
              {QUOTA_RESOURCES.map(r => (
                <option key={r} value={r}>
                  {quotaResourceLabel(r, trans)}
                </option>
              ))}
            </select>
          </label>
        </>
      ) : null}
      <label className="cube-Notifications-field">
        <span>{trans.__('Channel')}</span>
        <select
          name="type"
          value={form.type}
          onChange={e => set({ type: e.currentTarget.value as ChannelType })}
        >
          {CHANNEL_TYPES.map(t => (
            <option key={t} value={t}>
              {channelLabel(t, trans)}
            </option>
          ))}
        </select>
      </label>
      {form.type === 'email' ? (
        <>
          {text('host', trans.__('SMTP host'))}
          {text('port', trans.__('SMTP port'))}
          {text('sender', trans.__('Sender'))}
          {text('to', trans.__('Recipients (comma separated)'))}
          {text('username', trans.__('User name (optional)'))}
          {text('password', trans.__('Password'), 'password')}
          <label className="cube-Notifications-field">
            <input
              type="checkbox"
              checked={form.starttls}
              onChange={e => set({ starttls: e.currentTarget.checked })}
            />{' '}
            {trans.__('STARTTLS')}
          </label>
        </>
      ) : (
        <>
          {text('url', trans.__('Webhook URL'), 'password')}
          {hasSecret(form.type)
            ? text('secret', trans.__('Signing secret (optional)'), 'password')
            : null}
        </>
      )}
      <p className="cube-TMuted">
        {trans.__(
          'The URL and secrets are stored as secrets: the list shows the URL as its host only.'
        )}
      </p>
      {problem ? <p className="cube-Field-error">{problem}</p> : null}
      {error ? <ErrorBox error={error} /> : null}
      <button
        className="jp-mod-styled jp-mod-accept"
        disabled={busy}
        onClick={() => void submit()}
      >
        {trans.__('Add rule')}
      </button>
    </section>
  );
}
