/**
 * A deployment's request samples (opt-in): the share of requests the router
 * keeps with their answers, a control to change it, and the latest samples.
 * Read again whenever the view's live tick changes.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import {
  deploymentSamples,
  describeError,
  RequestSample,
  setDeploymentSamples
} from '../../api';
import { uiLanguage } from '../../locale';

const SHOWN = 10;

export function SamplesSection(props: {
  project: string;
  name: string;
  percent: number;
  /** Changes on every live tick of the view: samples are read again. */
  tick: number;
  changed: () => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { trans, project, name } = props;
  const [samples, setSamples] = React.useState<RequestSample[]>([]);
  const [draft, setDraft] = React.useState(String(props.percent || ''));
  const [error, setError] = React.useState<string | null>(null);
  const [saving, setSaving] = React.useState(false);

  React.useEffect(() => {
    let live = true;
    deploymentSamples(project, name, SHOWN)
      .then(found => live && setSamples(found.samples))
      .catch(() => undefined); // the view shows the deployment's own errors
    return () => {
      live = false;
    };
  }, [project, name, props.tick]);

  const apply = async (percent: number) => {
    setSaving(true);
    setError(null);
    try {
      await setDeploymentSamples(project, name, percent);
      setDraft(percent ? String(percent) : '');
      props.changed();
    } catch (err) {
      setError(describeError(err).error);
    } finally {
      setSaving(false);
    }
  };
  const wanted = draft.trim() ? Number(draft) : 0;
  const valid = Number.isFinite(wanted) && wanted >= 0 && wanted <= 100;

  return (
    <section className="cube-TSection cube-DSamples">
      <h3>
        {trans.__('Request samples')}{' '}
        <span className="cube-TMuted">
          {props.percent
            ? trans.__(
                '(keeping %1% of requests with their answers)',
                props.percent
              )
            : trans.__('(off: nothing is kept)')}
        </span>
      </h3>
      <form
        className="cube-DSamples-set"
        onSubmit={e => {
          e.preventDefault();
          if (valid) {
            void apply(wanted);
          }
        }}
      >
        <label>
          {trans.__('Keep')}
          <input
            className={`cube-TField-input cube-DDeploy-percent${valid ? '' : ' cube-mod-invalid'}`}
            name="samples-percent"
            type="number"
            min={0}
            max={100}
            value={draft}
            placeholder="0"
            onChange={e => setDraft(e.target.value)}
          />
          {trans.__('% of requests')}
        </label>
        <button
          className="cube-Button"
          type="submit"
          disabled={saving || !valid || wanted === props.percent}
        >
          {trans.__('Apply')}
        </button>
        {props.percent ? (
          <button
            className="cube-Button"
            type="button"
            disabled={saving}
            onClick={() => void apply(0)}
          >
            {trans.__('Stop sampling')}
          </button>
        ) : null}
        {error ? <span className="cube-TField-error">{error}</span> : null}
      </form>
      {samples.length ? (
        <table className="cube-DSamples-table">
          <thead>
            <tr>
              <th>{trans.__('time')}</th>
              <th>{trans.__('version')}</th>
              <th>{trans.__('status')}</th>
              <th>{trans.__('ms')}</th>
              <th>{trans.__('request')}</th>
              <th>{trans.__('answer')}</th>
            </tr>
          </thead>
          <tbody>
            {samples
              .slice()
              .reverse()
              .map(s => (
                <tr key={`${s.ts}-${s.latency_ms}`}>
                  <td>
                    {new Date(s.ts * 1000).toLocaleTimeString(uiLanguage())}
                  </td>
                  <td>v{s.version}</td>
                  <td className={s.status >= 400 ? 'cube-DSamples-bad' : ''}>
                    {s.status}
                  </td>
                  <td>{s.latency_ms.toFixed(1)}</td>
                  <td>
                    <code title={s.request}>{s.request}</code>
                  </td>
                  <td>
                    <code title={s.response}>{s.response}</code>
                  </td>
                </tr>
              ))}
          </tbody>
        </table>
      ) : props.percent ? (
        <p className="cube-TMuted">{trans.__('No request sampled yet.')}</p>
      ) : null}
    </section>
  );
}
