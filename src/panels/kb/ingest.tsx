/**
 * An ingest as the view shows it while it runs and after: status, a bar of
 * files done of total, chunks added, and each file's outcome (a failed file
 * with its error and how to fix it).
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { KbIngest } from '../../api';
import {
  fileOutcomeText,
  ingestActive,
  ingestPercent,
  ingestProgressText,
  ingestStatusText,
  sourceLabel
} from './logic';

export function IngestProgress(props: {
  ingest: KbIngest;
  trans: TranslationBundle;
  dismiss?: () => void;
}): JSX.Element {
  const { ingest, trans } = props;
  const active = ingestActive(ingest);
  const percent = ingestPercent(ingest);
  // ended with some files failed: a warning, not a success
  const tone =
    ingest.status === 'succeeded' && ingest.failed > 0
      ? 'partial'
      : ingest.status;
  return (
    <div
      className="cube-KbIngest"
      data-status={ingest.status}
      data-tone={tone}
      data-ingest={ingest.id}
      aria-live="polite"
    >
      <div className="cube-KbIngest-line">
        <span className={`cube-KbStatus cube-KbStatus-${tone}`}>
          {active ? <span className="cube-Spinner" /> : null}
          {ingestStatusText(ingest.status, trans)}
        </span>
        <span className="cube-KbIngest-text">
          {ingestProgressText(ingest, trans)}
        </span>
        {!active && props.dismiss ? (
          <button
            className="cube-TLink cube-KbIngest-dismiss"
            onClick={props.dismiss}
            aria-label={trans.__('Dismiss')}
            title={trans.__('Dismiss')}
          >
            ×
          </button>
        ) : null}
      </div>
      <div
        className="cube-KbBar"
        role="progressbar"
        aria-valuemin={0}
        aria-valuemax={ingest.files_total}
        aria-valuenow={ingest.files_done}
        aria-label={trans.__('Files ingested')}
      >
        <div className="cube-KbBar-fill" style={{ width: `${percent}%` }} />
      </div>
      {ingest.error ? (
        <div className="cube-KbIngest-error" role="alert">
          {ingest.error}
        </div>
      ) : null}
      {ingest.files.length ? (
        <ul className="cube-KbIngest-files">
          {ingest.files.map(f => (
            <li
              key={f.source}
              className={`cube-KbIngest-file cube-mod-${f.status}`}
              data-source={f.source}
            >
              <span className="cube-KbIngest-name" title={f.source}>
                {sourceLabel(f.source)}
              </span>
              <span className="cube-KbIngest-outcome">
                {fileOutcomeText(f, trans)}
              </span>
              {f.status === 'failed' && (f.error || f.detail) ? (
                <span className="cube-KbIngest-fileError" role="alert">
                  {f.error}
                  {f.detail ? ` — ${f.detail}` : ''}
                </span>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
