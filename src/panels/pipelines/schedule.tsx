/**
 * The editor's Schedule dialog: the pipeline's schedules (next run, pause,
 * resume, delete) and a form to add one (cron, parameters, catch-up).
 */
import { Dialog, ReactWidget, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import {
  createSchedule,
  deleteSchedule,
  describeError,
  JSONValue,
  listSchedules,
  PipelineSchedule,
  setScheduleEnabled
} from '../../api';
import { suggestName } from '../../validate';
import { parseValue } from './properties';
import { PipelineParameter } from './serializer';
import { uiLanguage } from '../../locale';

/** Common cron expressions to start from. */
export const CRON_PRESETS: { cron: string; label: string }[] = [
  { cron: '0 * * * *', label: 'Every hour' },
  { cron: '0 3 * * *', label: 'Every day at 03:00 UTC' },
  { cron: '0 3 * * 1', label: 'Every Monday at 03:00 UTC' },
  { cron: '0 3 1 * *', label: 'On the 1st of the month at 03:00 UTC' }
];

/** Five space-separated fields, or an @-macro: the server checks the rest. */
export function looksLikeCron(text: string): boolean {
  const t = text.trim();
  return /^@\w+$/.test(t) || t.split(/\s+/).length === 5;
}

/** The values to send for the pipeline's parameters (blank: the default). */
export function scheduleParams(
  parameters: readonly PipelineParameter[],
  drafts: Record<string, string>
): Record<string, JSONValue> {
  const out: Record<string, JSONValue> = {};
  for (const p of parameters) {
    const text = drafts[p.name];
    if (text === undefined || text.trim() === '') {
      continue;
    }
    out[p.name] = p.type === 'String' ? text : parseValue(text);
  }
  return out;
}

function when(at: string | null): string {
  if (!at) {
    return '—';
  }
  return new Date(at).toLocaleString(uiLanguage(), {
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit'
  });
}

function SchedulesView(props: {
  path: string;
  name: string;
  parameters: readonly PipelineParameter[];
  trans: TranslationBundle;
}): JSX.Element {
  const { path, trans, parameters } = props;
  const [schedules, setSchedules] = React.useState<PipelineSchedule[] | null>(
    null
  );
  const [error, setError] = React.useState('');
  const [cron, setCron] = React.useState(CRON_PRESETS[1].cron);
  // the pipeline's display name ("Two notebooks") as a name the server allows
  const [label, setLabel] = React.useState(suggestName(props.name, 'schedule'));
  const [catchup, setCatchup] = React.useState(false);
  const [maxActive, setMaxActive] = React.useState('1');
  const [drafts, setDrafts] = React.useState<Record<string, string>>({});
  const [busy, setBusy] = React.useState(false);

  const load = React.useCallback(async () => {
    try {
      setSchedules((await listSchedules(path)).schedules);
    } catch (err) {
      setError(describeError(err).error);
    }
  }, [path]);
  React.useEffect(() => void load(), [load]);

  const act = async (fn: () => Promise<unknown>) => {
    setBusy(true);
    setError('');
    try {
      await fn();
      await load();
    } catch (err) {
      const { error, detail } = describeError(err);
      setError(detail ? `${error}: ${detail.split('\n')[0]}` : error);
    } finally {
      setBusy(false);
    }
  };

  const add = () =>
    act(() =>
      createSchedule({
        path,
        cron: cron.trim(),
        name: label.trim() || undefined,
        catchup,
        max_active_runs: Math.max(1, parseInt(maxActive, 10) || 1),
        params: scheduleParams(parameters, drafts)
      })
    );

  return (
    <div className="cube-Schedules">
      <div className="cube-Schedules-list">
        {schedules === null ? (
          <p className="cube-Muted">{trans.__('Loading…')}</p>
        ) : schedules.length === 0 ? (
          <p className="cube-Muted">
            {trans.__('This pipeline has no schedules yet.')}
          </p>
        ) : (
          <table className="cube-Runs-table cube-Schedules-table">
            <thead>
              <tr>
                <th>{trans.__('Name')}</th>
                <th>{trans.__('Cron (UTC)')}</th>
                <th>{trans.__('Next run')}</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {schedules.map(s => (
                <tr
                  key={s.id}
                  className="cube-Schedules-row"
                  data-schedule={s.id}
                >
                  <td title={s.last_error ?? undefined}>
                    {s.name}
                    {s.last_error ? (
                      <span className="cube-Field-error"> !</span>
                    ) : null}
                  </td>
                  <td>
                    <code>{s.cron}</code>
                  </td>
                  <td>
                    {s.enabled ? when(s.next_fire_at) : trans.__('paused')}
                  </td>
                  <td className="cube-Runs-actions">
                    <button
                      className="cube-LinkButton"
                      disabled={busy}
                      onClick={() =>
                        void act(() => setScheduleEnabled(s.id, !s.enabled))
                      }
                    >
                      {s.enabled ? trans.__('Pause') : trans.__('Resume')}
                    </button>
                    <button
                      className="cube-LinkButton"
                      disabled={busy}
                      onClick={() => void act(() => deleteSchedule(s.id))}
                    >
                      {trans.__('Delete')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
      <fieldset className="cube-Fieldset">
        <legend>{trans.__('New schedule')}</legend>
        <label className="cube-Field">
          <span className="cube-Field-label">{trans.__('Cron (UTC)')}</span>
          <input
            className={`jp-mod-styled cube-Field-input${looksLikeCron(cron) ? '' : ' cube-mod-invalid'}`}
            name="cron"
            value={cron}
            onChange={e => setCron(e.target.value)}
            list="cube-cron-presets"
          />
          <datalist id="cube-cron-presets">
            {CRON_PRESETS.map(p => (
              <option key={p.cron} value={p.cron}>
                {trans.__(p.label)}
              </option>
            ))}
          </datalist>
          <span className="cube-Field-hint">
            {trans.__('minute hour day-of-month month day-of-week')}
          </span>
        </label>
        <div className="cube-FieldRow">
          <label className="cube-Field">
            <span className="cube-Field-label">{trans.__('Name')}</span>
            <input
              className="jp-mod-styled cube-Field-input"
              name="schedule-name"
              value={label}
              onChange={e => setLabel(e.target.value)}
            />
          </label>
          <label className="cube-Field">
            <span className="cube-Field-label">{trans.__('Runs at once')}</span>
            <input
              className="jp-mod-styled cube-Field-input"
              name="max-active"
              type="number"
              min={1}
              value={maxActive}
              onChange={e => setMaxActive(e.target.value)}
            />
          </label>
        </div>
        {parameters.map(p => (
          <label className="cube-Field" key={p.name}>
            <span className="cube-Field-label">
              {p.name}
              {p.required ? (
                <span className="cube-Field-required">*</span>
              ) : null}
            </span>
            <input
              className="jp-mod-styled cube-Field-input"
              name={`schedule-param-${p.name}`}
              placeholder={
                p.default === null || p.default === undefined
                  ? ''
                  : String(p.default)
              }
              value={drafts[p.name] ?? ''}
              onChange={e => setDrafts({ ...drafts, [p.name]: e.target.value })}
            />
          </label>
        ))}
        <label className="cube-Field cube-Field-check">
          <input
            type="checkbox"
            name="catchup"
            checked={catchup}
            onChange={e => setCatchup(e.target.checked)}
          />
          <span className="cube-Field-label">
            {trans.__('Catch up: also run the times missed while stopped')}
          </span>
        </label>
        <button
          className="jp-mod-styled jp-mod-accept cube-Schedules-add"
          disabled={busy || !looksLikeCron(cron)}
          onClick={() => void add()}
        >
          {trans.__('Add schedule')}
        </button>
      </fieldset>
      {error ? (
        <p className="cube-Field-error" role="alert">
          {error}
        </p>
      ) : null}
    </div>
  );
}

/** Open the Schedule dialog for a saved pipeline. */
export async function showScheduleDialog(options: {
  path: string;
  name: string;
  parameters: readonly PipelineParameter[];
  trans: TranslationBundle;
}): Promise<void> {
  const { trans } = options;
  const body = ReactWidget.create(<SchedulesView {...options} />);
  body.addClass('cube-ScheduleDialog-body');
  await showDialog({
    title: trans.__('Schedule %1', options.name),
    body,
    buttons: [Dialog.okButton({ label: trans.__('Close') })]
  });
}
