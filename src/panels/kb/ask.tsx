/**
 * "Ask": a question answered by a language model from the knowledge base's
 * passages, streamed as it comes (the numbered citations first, then the
 * text; Stop aborts), with numbered citations; a click on a citation shows
 * the chunk it cites. The model is an LLM deployment of the project or any
 * OpenAI-compatible server.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ChatTarget, ChatTargetInfo, listChatTargets } from '../../api';
import { ErrorBox } from '../errorbox';
import { KbAnswerState, KbAnswerView } from './answer';
import { KbAsk } from './asking';

const OTHER = '__url__';

export function AskBox(props: {
  project: string;
  name: string;
  trans: TranslationBundle;
  /** Open a cited source file (relative to the root). */
  openSource?: (source: string) => void;
  /** Chat with the knowledge base in the Chat panel (a conversation of questions). */
  openChat?: () => void;
}): JSX.Element {
  const { trans } = props;
  const [targets, setTargets] = React.useState<ChatTargetInfo[]>([]);
  const [target, setTarget] = React.useState(OTHER);
  const [baseUrl, setBaseUrl] = React.useState('');
  const [model, setModel] = React.useState('');
  const [query, setQuery] = React.useState('');
  const asking = React.useMemo(
    () => new KbAsk(props.project, props.name),
    [props.project, props.name]
  );
  const [, setVersion] = React.useState(0);
  React.useEffect(() => {
    const changed = () => setVersion(v => v + 1);
    asking.changed.connect(changed);
    return () => {
      asking.changed.disconnect(changed);
      asking.dispose();
    };
  }, [asking]);
  const turn = asking.turn;
  const busy = asking.busy;

  React.useEffect(() => {
    let live = true;
    listChatTargets(props.project)
      .then(r => {
        if (live) {
          setTargets(r.targets);
          if (r.targets.length) {
            setTarget(r.targets[0].deployment);
          }
        }
      })
      .catch(() => undefined); // no LLM deployments: the URL fields stay
    return () => {
      live = false;
    };
  }, [props.project]);

  const chosen = (): ChatTarget =>
    target === OTHER
      ? { base_url: baseUrl.trim(), model: model.trim() }
      : { deployment: target };

  const ask = (event: React.FormEvent) => {
    event.preventDefault();
    void asking.ask(query, chosen());
  };

  return (
    <section className="cube-KbSection cube-KbAsk">
      <div className="cube-KbAsk-head">
        <h3 className="cube-KbSection-title">{trans.__('Ask')}</h3>
        {props.openChat ? (
          <button
            type="button"
            className="cube-TLink"
            name="kb-open-chat"
            title={trans.__(
              'Ask one question after another in the Chat panel, each answer with its citations'
            )}
            onClick={props.openChat}
          >
            {trans.__('Chat in the Chat panel')}
          </button>
        ) : null}
      </div>
      <form className="cube-KbAsk-form" onSubmit={ask}>
        <div className="cube-KbAsk-target">
          <select
            className="jp-mod-styled cube-KbInput"
            name="kb-target"
            value={target}
            aria-label={trans.__('Model')}
            onChange={e => setTarget(e.target.value)}
          >
            {targets.map(t => (
              <option key={t.deployment} value={t.deployment}>
                {trans.__('Deployment %1', t.deployment)}
              </option>
            ))}
            <option value={OTHER}>{trans.__('OpenAI-compatible URL')}</option>
          </select>
          {target === OTHER ? (
            <>
              <input
                className="jp-mod-styled cube-KbInput"
                name="kb-base-url"
                value={baseUrl}
                placeholder="https://host/v1"
                aria-label={trans.__('Base URL')}
                onChange={e => setBaseUrl(e.target.value)}
              />
              <input
                className="jp-mod-styled cube-KbInput"
                name="kb-model"
                value={model}
                placeholder={trans.__('model')}
                aria-label={trans.__('Model name')}
                onChange={e => setModel(e.target.value)}
              />
            </>
          ) : null}
        </div>
        <div className="cube-KbAsk-line">
          <input
            className="jp-mod-styled cube-KbInput cube-KbAsk-query"
            name="kb-question"
            value={query}
            placeholder={trans.__('A question about the documents')}
            aria-label={trans.__('Question')}
            onChange={e => setQuery(e.target.value)}
          />
          <button
            type="submit"
            className="cube-Button cube-mod-primary"
            disabled={busy || !query.trim()}
          >
            {busy ? trans.__('Asking…') : trans.__('Ask')}
          </button>
          {busy ? (
            <button
              type="button"
              name="kb-stop"
              className="cube-Button"
              title={trans.__('Stop the answer (what came so far stays)')}
              onClick={() => asking.stop()}
            >
              {trans.__('Stop')}
            </button>
          ) : null}
        </div>
      </form>
      {turn ? (
        <div
          className="cube-KbAsk-turn"
          data-status={turn.status}
          data-deltas={turn.deltas}
          aria-live="polite"
        >
          <div className="cube-KbAsk-state">
            {turn.status === 'asking' ? (
              <span className="cube-Spinner" />
            ) : null}
            <KbAnswerState
              status={turn.status}
              answer={turn.answer}
              trans={trans}
            />
          </div>
          {turn.error ? <ErrorBox error={turn.error} /> : null}
          {turn.answer.answer ||
          turn.answer.citations.length ||
          turn.answer.reason ? (
            <KbAnswerView
              answer={turn.answer}
              trans={trans}
              streaming={turn.status === 'asking'}
              openSource={props.openSource}
            />
          ) : null}
        </div>
      ) : null}
    </section>
  );
}
