/**
 * What a cube-lab list panel shows while it has nothing to list: a title,
 * what the panel is for, the button that makes the first item, and how to
 * do the same from a notebook or a terminal.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

export function EmptyState(props: {
  title: string;
  text: string;
  /** The primary button (e.g. "Launch training"). */
  action?: { label: string; run: () => void };
  /** The magic that does it in a notebook. */
  notebook?: string;
  /** The CLI command that does it in a terminal. */
  terminal?: string;
  trans: TranslationBundle;
}): JSX.Element {
  const { trans } = props;
  return (
    <div className="cube-TEmpty">
      <p className="cube-TEmpty-title">{props.title}</p>
      <p className="cube-TEmpty-text">{props.text}</p>
      {props.action ? (
        <button
          className="cube-Button cube-mod-primary"
          onClick={props.action.run}
        >
          {props.action.label}
        </button>
      ) : null}
      {props.notebook || props.terminal ? (
        <p className="cube-TEmpty-text">
          {props.notebook ? (
            <>
              {trans.__('Or from a notebook:')} <code>{props.notebook}</code>
              {props.terminal ? <br /> : null}
            </>
          ) : null}
          {props.terminal ? (
            <>
              {trans.__('or a terminal:')} <code>{props.terminal}</code>
            </>
          ) : null}
        </p>
      ) : null}
    </div>
  );
}
