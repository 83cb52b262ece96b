/**
 * "Ask": a question answered by a language model from the knowledge base's
 * passages, with numbered citations; a click on a citation shows the chunk it
 * cites. The model is an LLM deployment of the project or any
 * OpenAI-compatible server.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import {
  chatKnowledgeBase,
  ChatTarget,
  ChatTargetInfo,
  describeError,
  KbChatAnswer,
  listChatTargets
} from '../../api';
import { ErrorBox } from '../errorbox';
import { answerParts, queryTerms } from './logic';
import { Highlighted } from './search';

const OTHER = '__url__';

export function AskBox(props: {
  project: string;
  name: string;
  trans: TranslationBundle;
}): JSX.Element {
  const { trans } = props;
  const [targets, setTargets] = React.useState<ChatTargetInfo[]>([]);
  const [target, setTarget] = React.useState(OTHER);
  const [baseUrl, setBaseUrl] = React.useState('');
  const [model, setModel] = React.useState('');
  const [query, setQuery] = React.useState('');
  const [busy, setBusy] = React.useState(false);
  const [answer, setAnswer] = React.useState<KbChatAnswer | null>(null);
  const [shown, setShown] = React.useState<number | null>(null);
  const [error, setError] = React.useState<{
    error: string;
    detail: string;
  } | null>(null);

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

  const ask = async (event: React.FormEvent) => {
    event.preventDefault();
    if (!query.trim()) {
      return;
    }
    setBusy(true);
    try {
      setAnswer(
        await chatKnowledgeBase(props.project, props.name, {
          query: query.trim(),
          target: chosen()
        })
      );
      setShown(null);
      setError(null);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  const numbers = answer ? answer.citations.map(c => c.number) : [];
  const cited = answer?.citations.find(c => c.number === shown) ?? null;
  return (
    <section className="cube-KbSection cube-KbAsk">
      <h3 className="cube-KbSection-title">{trans.__('Ask')}</h3>
      <form className="cube-KbAsk-form" onSubmit={e => void ask(e)}>
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
        </div>
      </form>
      {error ? <ErrorBox error={error} /> : null}
      {answer ? (
        <div
          className="cube-KbAnswer"
          data-answered={answer.answered ? 'true' : 'false'}
        >
          <p className="cube-KbAnswer-text">
            {answerParts(answer.answer, numbers).map((part, n) =>
              'cite' in part ? (
                <button
                  key={n}
                  className={`cube-KbCite${shown === part.cite ? ' cube-mod-active' : ''}`}
                  data-cite={part.cite}
                  title={trans.__('Show passage %1', part.cite)}
                  onClick={() =>
                    setShown(shown === part.cite ? null : part.cite)
                  }
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
                  <button
                    className="cube-TLink"
                    onClick={() =>
                      setShown(shown === c.number ? null : c.number)
                    }
                  >
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
                [{cited.number}] {cited.source}
                {cited.heading ? ` · ${cited.heading}` : ''}
              </div>
              <Highlighted text={cited.text} terms={queryTerms(answer.query)} />
            </blockquote>
          ) : null}
        </div>
      ) : null}
    </section>
  );
}
