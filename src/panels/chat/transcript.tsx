/**
 * One pane's conversation: its turns (the user's message, the shown answer),
 * the answer streaming now, and the pane kept scrolled to the end while it
 * grows (unless the user scrolled up to read).
 */
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { toTurns } from './logic';
import { AnswerMessage, StreamingAnswer, UserMessage } from './message';
import type { ChatSession } from './session';

/** Closer to the end than this (px) counts as "at the end": keep following. */
const FOLLOW_PX = 48;

export function Transcript(props: {
  session: ChatSession;
  rendermime: IRenderMimeRegistry | null;
  trans: TranslationBundle;
  empty: React.ReactNode;
}): JSX.Element {
  const { session, trans, rendermime } = props;
  const scroller = React.useRef<HTMLDivElement>(null);
  const follow = React.useRef(true);
  const conversation = session.conversation;
  const streaming = session.streaming;
  const turns = toTurns(conversation?.messages ?? []);
  const busy = streaming !== null;

  React.useLayoutEffect(() => {
    const node = scroller.current;
    if (node && follow.current) {
      node.scrollTop = node.scrollHeight;
    }
  });

  const streamingAnswer = streaming ? (
    <StreamingAnswer
      text={streaming.text}
      deltas={streaming.deltas}
      rendermime={rendermime}
      trans={trans}
    />
  ) : null;
  const regenerating = streaming?.regenerateOf?.turn ?? null;
  const nothing = turns.length === 0 && !streaming;

  return (
    <div
      className="cube-ChatTranscript"
      ref={scroller}
      data-streaming={busy ? 'true' : 'false'}
      onScroll={e => {
        const n = e.currentTarget;
        follow.current =
          n.scrollHeight - n.scrollTop - n.clientHeight < FOLLOW_PX;
      }}
    >
      {nothing ? <div className="cube-ChatEmpty">{props.empty}</div> : null}
      {turns.map(t => (
        <React.Fragment key={t.turn}>
          {t.user ? <UserMessage text={t.user.content} trans={trans} /> : null}
          {regenerating === t.turn ? (
            streamingAnswer
          ) : t.answer ? (
            <AnswerMessage
              message={t.answer}
              answers={t.answers}
              rendermime={rendermime}
              trans={trans}
              busy={busy}
              rate={rating => void session.feedback(t.answer!, rating)}
              edit={text =>
                void session.feedback(t.answer!, t.answer!.rating, text)
              }
              show={other => void session.activate(other)}
            />
          ) : null}
        </React.Fragment>
      ))}
      {streaming && regenerating === null ? (
        <>
          {streaming.pendingUser !== null ? (
            <UserMessage text={streaming.pendingUser} trans={trans} />
          ) : null}
          {streamingAnswer}
        </>
      ) : null}
    </div>
  );
}
