/**
 * An error from the server as every cube-lab panel shows it: what is wrong,
 * how to fix it, and optionally an action and a dismiss button.
 */
import * as React from 'react';

export function ErrorBox(props: {
  error: { error: string; detail: string };
  action?: { label: string; run: () => void };
  dismiss?: () => void;
  /** The dismiss button's name for screen readers (translated). */
  dismissLabel?: string;
  className?: string;
}): JSX.Element {
  const { error } = props;
  return (
    <div
      className={`cube-TError${props.className ? ` ${props.className}` : ''}`}
      role="alert"
    >
      <div className="cube-TError-title">
        {error.error}
        {props.dismiss ? (
          <button
            className="cube-TLink cube-LError-close"
            onClick={props.dismiss}
            aria-label={props.dismissLabel}
          >
            ×
          </button>
        ) : null}
      </div>
      {error.detail ? (
        <div className="cube-TError-detail">{error.detail}</div>
      ) : null}
      {props.action ? (
        <button className="cube-TLink" onClick={props.action.run}>
          {props.action.label}
        </button>
      ) : null}
    </div>
  );
}
