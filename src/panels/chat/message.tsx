/**
 * One turn's message in the chat: the user's text, or an answer rendered as
 * Markdown with its actions: thumbs up / down, edit the answer (the corrected
 * text is what preference data takes as chosen), and the switch between the
 * turn's answers when it was regenerated.
 */
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { ChatMessage, ChatRating } from '../../api';
import { Markdown } from './markdown';

/** A thumb (up; `down` turns it over), drawn on a 24 x 24 grid in the text's colour. */
function Thumb(props: { down?: boolean }): JSX.Element {
  return (
    <svg
      className="cube-ChatThumb"
      viewBox="0 0 24 24"
      width="14"
      height="14"
      aria-hidden="true"
    >
      <path
        fill="currentColor"
        transform={props.down ? 'rotate(180 12 12)' : undefined}
        d="M2 10h4v11H2zM8 10l4-8c1.5 0 2.5 1 2.5 2.5L14 9h6a2 2 0 0 1 2 2.2l-1.4 7.6A2.5 2.5 0 0 1 18.1 21H8z"
      />
    </svg>
  );
}

export function UserMessage(props: {
  text: string;
  trans: TranslationBundle;
}): JSX.Element {
  return (
    <div className="cube-ChatMsg cube-ChatMsg-user" data-role="user">
      <div className="cube-ChatMsg-who">{props.trans.__('You')}</div>
      <div className="cube-ChatMsg-text">{props.text}</div>
    </div>
  );
}

/** The answer arriving now. */
export function StreamingAnswer(props: {
  text: string;
  deltas: number;
  rendermime: IRenderMimeRegistry | null;
  trans: TranslationBundle;
}): JSX.Element {
  return (
    <div
      className="cube-ChatMsg cube-ChatMsg-assistant"
      data-role="assistant"
      data-streaming="true"
      data-deltas={props.deltas}
    >
      <div className="cube-ChatMsg-who">
        <span className="cube-Spinner" /> {props.trans.__('Answering…')}
      </div>
      {props.text ? (
        <Markdown text={props.text} rendermime={props.rendermime} />
      ) : null}
    </div>
  );
}

export function AnswerMessage(props: {
  message: ChatMessage;
  /** Every answer of its turn, oldest first. */
  answers: ChatMessage[];
  rendermime: IRenderMimeRegistry | null;
  trans: TranslationBundle;
  busy: boolean;
  rate: (rating: ChatRating) => void;
  edit: (text: string | null) => void;
  show: (other: ChatMessage) => void;
}): JSX.Element {
  const { message: m, trans, answers } = props;
  const [editing, setEditing] = React.useState<string | null>(null);
  const index = answers.findIndex(a => a.id === m.id);
  const rateButton = (rating: 'up' | 'down', label: string) => (
    <button
      className={`cube-ChatAction${m.rating === rating ? ' cube-mod-on' : ''}`}
      aria-pressed={m.rating === rating}
      title={label}
      aria-label={label}
      data-action={`rate-${rating}`}
      disabled={props.busy}
      onClick={() => props.rate(m.rating === rating ? null : rating)}
    >
      <Thumb down={rating === 'down'} />
    </button>
  );
  return (
    <div
      className="cube-ChatMsg cube-ChatMsg-assistant"
      data-role="assistant"
      data-message={m.id}
      data-status={m.status}
      data-rating={m.rating ?? ''}
    >
      <div className="cube-ChatMsg-who">
        <span>{m.model ?? trans.__('Assistant')}</span>
        {m.status === 'stopped' ? (
          <span className="cube-ChatTag">{trans.__('stopped')}</span>
        ) : null}
        {m.status === 'error' ? (
          <span className="cube-ChatTag cube-mod-error">
            {trans.__('failed')}
          </span>
        ) : null}
        {m.edited !== null ? (
          <span className="cube-ChatTag">{trans.__('edited')}</span>
        ) : null}
        {m.usage ? (
          <span className="cube-TMuted cube-ChatUsage">
            {trans.__(
              '%1 + %2 tokens',
              m.usage.prompt_tokens,
              m.usage.completion_tokens
            )}
          </span>
        ) : null}
      </div>
      {editing !== null ? (
        <div className="cube-ChatEdit">
          <textarea
            className="cube-ChatEdit-text"
            aria-label={trans.__('The corrected answer')}
            value={editing}
            rows={Math.min(14, Math.max(4, editing.split('\n').length + 1))}
            onChange={e => setEditing(e.target.value)}
          />
          <div className="cube-ChatEdit-actions">
            <button
              className="cube-Button cube-mod-primary"
              disabled={!editing.trim()}
              onClick={() => {
                props.edit(editing === m.content ? null : editing);
                setEditing(null);
              }}
            >
              {trans.__('Save the answer')}
            </button>
            <button className="cube-Button" onClick={() => setEditing(null)}>
              {trans.__('Cancel')}
            </button>
          </div>
        </div>
      ) : (
        <Markdown text={m.edited ?? m.content} rendermime={props.rendermime} />
      )}
      {m.edited !== null && editing === null ? (
        <details className="cube-ChatOriginal">
          <summary>{trans.__('The model’s answer')}</summary>
          <div className="cube-ChatPlain">{m.content}</div>
        </details>
      ) : null}
      {m.error ? <div className="cube-TField-error">{m.error}</div> : null}
      <div className="cube-ChatMsg-actions">
        {rateButton('up', trans.__('Good answer'))}
        {rateButton('down', trans.__('Bad answer'))}
        <button
          className="cube-ChatAction"
          data-action="edit"
          title={trans.__(
            'Edit the answer: your text becomes the preferred one'
          )}
          disabled={props.busy || editing !== null}
          onClick={() => setEditing(m.edited ?? m.content)}
        >
          {trans.__('Edit')}
        </button>
        {m.edited !== null ? (
          <button
            className="cube-ChatAction"
            disabled={props.busy}
            title={trans.__('Go back to the model’s answer')}
            onClick={() => props.edit(null)}
          >
            {trans.__('Undo edit')}
          </button>
        ) : null}
        {answers.length > 1 ? (
          <span
            className="cube-ChatAlternatives"
            data-alternatives={answers.length}
          >
            <button
              className="cube-ChatAction"
              disabled={props.busy || index <= 0}
              aria-label={trans.__('Previous answer')}
              title={trans.__('Previous answer')}
              onClick={() => props.show(answers[index - 1])}
            >
              ‹
            </button>
            <span className="cube-TMuted">
              {trans.__('%1 of %2', index + 1, answers.length)}
            </span>
            <button
              className="cube-ChatAction"
              disabled={props.busy || index >= answers.length - 1}
              aria-label={trans.__('Next answer')}
              title={trans.__('Next answer')}
              onClick={() => props.show(answers[index + 1])}
            >
              ›
            </button>
          </span>
        ) : null}
      </div>
    </div>
  );
}
