/**
 * A pane's questions to a knowledge base: each question, and its answer with
 * numbered citations that show the cited chunk and open its source (the
 * knowledge base view's rendering, src/panels/kb/answer.tsx).
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorBox } from '../errorbox';
import { KbAnswerState, KbAnswerView } from '../kb/answer';
import type { KbChatSession } from './kbchat';
import { UserMessage } from './message';

export function KbTranscript(props: {
  session: KbChatSession;
  trans: TranslationBundle;
  empty: React.ReactNode;
  openSource?: (source: string) => void;
}): JSX.Element {
  const { session, trans } = props;
  const scroller = React.useRef<HTMLDivElement>(null);
  React.useLayoutEffect(() => {
    const node = scroller.current;
    if (node) {
      node.scrollTop = node.scrollHeight;
    }
  });
  const turns = session.turns;
  return (
    <div
      className="cube-ChatTranscript cube-ChatKb"
      ref={scroller}
      data-streaming={session.busy ? 'true' : 'false'}
    >
      {turns.length === 0 ? (
        <div className="cube-ChatEmpty">{props.empty}</div>
      ) : null}
      {turns.map(t => (
        <React.Fragment key={t.id}>
          <UserMessage text={t.query} trans={trans} />
          <div
            className="cube-ChatMsg cube-ChatMsg-assistant cube-ChatKbAnswer"
            data-kb-turn={t.id}
            data-status={t.status}
            data-streaming={t.status === 'asking' ? 'true' : undefined}
            data-deltas={t.deltas}
          >
            <div className="cube-ChatMsg-who">
              {t.status === 'asking' ? <span className="cube-Spinner" /> : null}{' '}
              {trans.__('Knowledge base %1', t.kb)}
              <KbAnswerState
                status={t.status}
                answer={t.answer}
                trans={trans}
              />
            </div>
            {t.error ? <ErrorBox error={t.error} /> : null}
            {t.answer.answer || t.answer.citations.length || t.answer.reason ? (
              <KbAnswerView
                answer={t.answer}
                trans={trans}
                streaming={t.status === 'asking'}
                openSource={props.openSource}
              />
            ) : null}
          </div>
        </React.Fragment>
      ))}
    </div>
  );
}
