/**
 * A labelled form field with its error (role="alert") or hint below: the
 * one field layout of every cube-lab form.
 */
import * as React from 'react';

export function Field(props: {
  label: string;
  /** `data-field`, for tests and for focusing the first invalid field. */
  name?: string;
  error?: string;
  hint?: string;
  className?: string;
  children: React.ReactNode;
}): JSX.Element {
  return (
    <label
      className={`cube-TField${props.className ? ` ${props.className}` : ''}`}
      data-field={props.name}
    >
      <span className="cube-TField-label">{props.label}</span>
      {props.children}
      {props.error ? (
        <span className="cube-TField-error" role="alert">
          {props.error}
        </span>
      ) : props.hint ? (
        <span className="cube-TField-hint">{props.hint}</span>
      ) : null}
    </label>
  );
}
