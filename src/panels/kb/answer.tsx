/**
 * A knowledge base's answer: its text with numbered citation buttons, the
 * list of the passages it was given, and the cited chunk shown where its
 * number is clicked (source, page, heading, the text with the question's
 * terms highlighted; a source that is a file under the root opens in
 * JupyterLab). One implementation for the knowledge base view's "Ask" and
 * the Chat panel's knowledge base target.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { KbCitation } from '../../api';
import { answerParts, queryTerms } from './logic';
import { Highlighted } from './search';

/** What an answer shows: a whole one, or one still streaming in. */
export interface IKbAnswerShown {
  answer: string;
  citations: KbCitation[];
  query: string;
  answered: boolean;
  reason?: string;
}

/**
 * Where a streamed answer stands, as tags: still searching (nothing of the
 * answer yet), stopped, or no answer in the documents. One rendering for the
 * knowledge base view's Ask and the Chat panel's knowledge base turns.
 */
export function KbAnswerState(props: {
  status: 'asking' | 'complete' | 'stopped' | 'error';
  answer: IKbAnswerShown;
  trans: TranslationBundle;
}): JSX.Element | null {
  const { status, answer, trans } = props;
  if (status === 'asking' && !answer.answer) {
    return (
      <span className="cube-TMuted">
        {' '}
        {trans.__('Searching and answering…')}
      </span>
    );
  }
  if (status === 'stopped') {
    return <span className="cube-ChatTag">{trans.__('stopped')}</span>;
  }
  if (status === 'complete' && !answer.answered) {
    return (
      <span className="cube-ChatTag">
        {trans.__('no answer in the documents')}
      </span>
    );
  }
  return null;
}

/** True for a source that is a file under the root (not an uploaded document). */
export function isFileSource(source: string): boolean {
  return source !== '' && !source.startsWith('upload:');
}

export function KbAnswerView(props: {
  answer: IKbAnswerShown;
  trans: TranslationBundle;
  /** Open a source file (a path relative to the root); none: no Open link. */
  openSource?: (source: string) => void;
  /** True while the answer streams in. */
  streaming?: boolean;
}): JSX.Element {
  const { trans, answer } = props;
  const [shown, setShown] = React.useState<number | null>(null);
  const numbers = answer.citations.map(c => c.number);
  const cited = answer.citations.find(c => c.number === shown) ?? null;
  const toggle = (n: number) => setShown(shown === n ? null : n);
  return (
    <div
      className="cube-KbAnswer"
      data-answered={answer.answered ? 'true' : 'false'}
      data-streaming={props.streaming ? 'true' : undefined}
    >
      <p className="cube-KbAnswer-text">
        {answerParts(answer.answer, numbers).map((part, n) =>
          'cite' in part ? (
            <button
              key={n}
              className={`cube-KbCite${shown === part.cite ? ' cube-mod-active' : ''}`}
              data-cite={part.cite}
              title={trans.__('Show passage %1', part.cite)}
              onClick={() => toggle(part.cite)}
            >
              {part.cite}
            </button>
          ) : (
            <React.Fragment key={n}>{part.text}</React.Fragment>
          )
        )}
      </p>
      {!answer.answered && answer.reason ? (
        <p className="cube-Muted">{answer.reason}</p>
      ) : null}
      {answer.citations.length ? (
        <ol className="cube-KbCitations">
          {answer.citations.map(c => (
            <li
              key={c.number}
              className={c.cited ? 'cube-mod-cited' : ''}
              data-number={c.number}
            >
              <button className="cube-TLink" onClick={() => toggle(c.number)}>
                [{c.number}] {c.name || c.source}
                {c.page !== null ? ` · ${trans.__('page %1', c.page)}` : ''}
                {c.heading ? ` · ${c.heading}` : ''}
              </button>
            </li>
          ))}
        </ol>
      ) : null}
      {cited ? (
        <blockquote className="cube-KbCited" data-cited={cited.number}>
          <div className="cube-KbCited-head">
            <span>
              [{cited.number}] {cited.source}
              {cited.page !== null
                ? ` · ${trans.__('page %1', cited.page)}`
                : ''}
              {cited.heading ? ` · ${cited.heading}` : ''}
            </span>
            {props.openSource && isFileSource(cited.source) ? (
              <button
                className="cube-TLink cube-KbCited-open"
                title={trans.__('Open %1', cited.source)}
                onClick={() => props.openSource!(cited.source)}
              >
                {trans.__('Open the source')}
              </button>
            ) : null}
          </div>
          <Highlighted text={cited.text} terms={queryTerms(answer.query)} />
        </blockquote>
      ) : null}
    </div>
  );
}
