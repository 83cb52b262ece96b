/**
 * The conversation list of a project: new, open, rename and delete.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { Conversation } from '../../api';
import { targetLabel } from './logic';

export function ConversationList(props: {
  conversations: Conversation[];
  current: number | null;
  trans: TranslationBundle;
  open: (c: Conversation) => void;
  create: () => void;
  rename: (c: Conversation, title: string) => void;
  remove: (c: Conversation) => void;
}): JSX.Element {
  const { trans } = props;
  const [renaming, setRenaming] = React.useState<{
    id: number;
    title: string;
  } | null>(null);
  return (
    <nav className="cube-ChatList" aria-label={trans.__('Conversations')}>
      <button
        className="cube-Button cube-mod-primary cube-ChatList-new"
        onClick={props.create}
      >
        {trans.__('New chat')}
      </button>
      {props.conversations.length === 0 ? (
        <div className="cube-TMuted cube-ChatList-empty">
          {trans.__('No conversations yet.')}
        </div>
      ) : null}
      <ul>
        {props.conversations.map(c => (
          <li
            key={c.id}
            className={`cube-ChatList-item${c.id === props.current ? ' cube-mod-current' : ''}`}
            data-conversation={c.id}
          >
            {renaming?.id === c.id ? (
              <form
                className="cube-ChatList-rename"
                onSubmit={e => {
                  e.preventDefault();
                  if (renaming.title.trim()) {
                    props.rename(c, renaming.title.trim());
                  }
                  setRenaming(null);
                }}
              >
                <input
                  autoFocus
                  aria-label={trans.__('Title')}
                  value={renaming.title}
                  onChange={e =>
                    setRenaming({ id: c.id, title: e.target.value })
                  }
                  onKeyDown={e => {
                    if (e.key === 'Escape') {
                      setRenaming(null);
                    }
                  }}
                  onBlur={() => setRenaming(null)}
                />
              </form>
            ) : (
              <>
                <button
                  className="cube-ChatList-open"
                  title={c.title || trans.__('New chat')}
                  onClick={() => props.open(c)}
                >
                  <span className="cube-ChatList-title jp-text-truncated">
                    {c.title || trans.__('New chat')}
                  </span>
                  <span className="cube-TMuted cube-ChatList-meta jp-text-truncated">
                    {targetLabel(c.target)}
                  </span>
                </button>
                <button
                  className="cube-ChatAction"
                  title={trans.__('Rename')}
                  aria-label={trans.__(
                    'Rename %1',
                    c.title || trans.__('New chat')
                  )}
                  onClick={() => setRenaming({ id: c.id, title: c.title })}
                >
                  ✎
                </button>
                <button
                  className="cube-ChatAction"
                  title={trans.__('Delete')}
                  aria-label={trans.__(
                    'Delete %1',
                    c.title || trans.__('New chat')
                  )}
                  onClick={() => props.remove(c)}
                >
                  ×
                </button>
              </>
            )}
          </li>
        ))}
      </ul>
    </nav>
  );
}
