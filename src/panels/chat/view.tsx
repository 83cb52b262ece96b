/**
 * The Chat tab: a project's conversations on the left; on the right the
 * target (a deployment of the project, or any OpenAI-compatible URL), the
 * system prompt and parameters, the conversation streaming in as Markdown,
 * and the composer (Send, Stop, Regenerate). Compare puts a second target
 * beside the first, both answering the same prompts. "Copy as code" copies
 * the Python `openai` snippet of the conversation; "Export as preference
 * data" turns the feedback given into a dataset version for DPO.
 */
import {
  Clipboard,
  Dialog,
  ReactWidget,
  showDialog
} from '@jupyterlab/apputils';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { Message } from '@lumino/messaging';
import * as React from 'react';

import {
  ChatTarget,
  ChatTargetInfo,
  Conversation,
  datasetVersionDownloadUrl,
  deleteConversation,
  describeError,
  exportPreferences,
  listChatTargets,
  listConversations,
  listKnowledgeBases,
  listProjects,
  PreferenceExport,
  updateConversation
} from '../../api';
import { ErrorBox } from '../errorbox';
import { ConversationList } from './conversations';
import { askExport } from './export';
import { IKbAsk, kbFromValue, KbChatSession, kbTargetValue } from './kbchat';
import { KbTranscript } from './kbtranscript';
import {
  contextMessages,
  IParamsForm,
  paramsToForm,
  readParams,
  regenerable,
  targetFromValue,
  targetLabel,
  targetValue,
  toTurns,
  upsertConversation,
  URL_TARGET
} from './logic';
import { IChatSettings, ChatSession } from './session';
import { ITargetForm, ParamsFields, TargetPicker } from './settings';
import { deploymentBaseUrl, openaiSnippet } from './snippet';
import { Transcript } from './transcript';

type ErrorText = { error: string; detail: string };

const EMPTY_TARGET: ITargetForm = {
  choice: '',
  answerer: '',
  baseUrl: '',
  model: '',
  apiKey: ''
};

function targetForm(target: ChatTarget): ITargetForm {
  if ('deployment' in target) {
    return { ...EMPTY_TARGET, choice: targetValue(target) };
  }
  return {
    choice: URL_TARGET,
    answerer: '',
    baseUrl: target.base_url,
    model: target.model,
    apiKey: target.api_key ?? ''
  };
}

/** The model a picker value (a deployment or `URL_TARGET`) names, or null. */
function chatTargetOf(choice: string, form: ITargetForm): ChatTarget | null {
  if (choice === URL_TARGET) {
    const base_url = form.baseUrl.trim();
    const model = form.model.trim();
    if (!base_url || !model) {
      return null;
    }
    return form.apiKey
      ? { base_url, model, api_key: form.apiKey }
      : { base_url, model };
  }
  return targetFromValue(choice);
}

/** The model a form names (not a knowledge base), or null when it is incomplete. */
function formTarget(form: ITargetForm): ChatTarget | null {
  return kbFromValue(form.choice) === null
    ? chatTargetOf(form.choice, form)
    : null;
}

/** The knowledge base a form names and the model that answers, or null. */
function formKb(form: ITargetForm): { kb: string; target: ChatTarget } | null {
  const kb = kbFromValue(form.choice);
  const target = kb === null ? null : chatTargetOf(form.answerer, form);
  return kb !== null && target ? { kb, target } : null;
}

export class ChatView extends ReactWidget {
  constructor(options: ChatView.IOptions) {
    super();
    this.addClass('cube-ChatView');
    this._trans = options.translator.load('cube_lab');
    this._rendermime = options.rendermime;
    this._project = options.project ?? '';
    this._wanted = options.deployment ?? null;
    this._wantedKb = options.knowledgeBase ?? null;
    this._openPath = options.openPath;
    this._main = this._session(this._project);
    this._kb = this._kbSession(this._project);
  }

  get project(): string {
    return this._project;
  }

  /**
   * Chat with `deployment` of `project` (a new conversation unless one is
   * shown already), or ask knowledge base `knowledgeBase` (answered by
   * `deployment` when given).
   */
  async chatWith(
    project: string,
    deployment: string,
    knowledgeBase = ''
  ): Promise<void> {
    this._wanted = deployment || null;
    this._wantedKb = knowledgeBase || null;
    if (project && project !== this._project) {
      await this._switchProject(project);
    } else {
      await this._loadTargets();
      this._applyWanted();
    }
    this.update();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._main.dispose();
    this._compare?.dispose();
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (!this._started) {
      this._started = true;
      void this._start();
    }
  }

  protected render(): JSX.Element {
    const trans = this._trans;
    const main = this._main;
    const compare = this._compare;
    const busy =
      main.streaming !== null ||
      (compare?.streaming ?? null) !== null ||
      this._kb.busy;
    const kbChoice = formKb(this._targetA);
    const kbPicked = kbFromValue(this._targetA.choice) !== null;
    const turns = toTurns(main.conversation?.messages ?? []);
    const last = regenerable(turns);
    const { errors } = readParams(this._params);
    const paramsOk = Object.keys(errors).length === 0;
    const readyA = formTarget(this._targetA) !== null || kbChoice !== null;
    const readyB = !compare || formTarget(this._targetB) !== null;
    const canSend =
      !busy && paramsOk && readyA && readyB && this._draft.trim() !== '';
    const sessionError = main.error ?? compare?.error ?? null;
    return (
      <div className="cube-ChatLayout" data-project={this._project}>
        <ConversationList
          conversations={this._conversations}
          current={main.conversation?.id ?? null}
          trans={trans}
          open={c => this.openConversation(c)}
          create={() => this.newConversation()}
          rename={(c, title) => void this.renameConversation(c, title)}
          remove={c => void this.removeConversation(c)}
        />
        <section className="cube-ChatMain">
          <header className="cube-ChatHead">
            <label className="cube-ChatHead-project">
              <span className="cube-TMuted">{trans.__('Project')}</span>
              <select
                name="project"
                value={this._project}
                disabled={busy}
                onChange={e => void this._switchProject(e.target.value)}
              >
                {this._projects.map(p => (
                  <option key={p} value={p}>
                    {p}
                  </option>
                ))}
              </select>
            </label>
            <h2 className="cube-ChatHead-title jp-text-truncated">
              {main.conversation?.title || trans.__('New chat')}
            </h2>
            <div className="cube-ChatHead-actions">
              <button
                className={`cube-Button${compare ? ' cube-mod-on' : ''}`}
                aria-pressed={compare !== null}
                disabled={busy || kbPicked}
                title={trans.__(
                  'Send the same prompts to a second target, side by side'
                )}
                onClick={() => this._toggleCompare()}
              >
                {compare ? trans.__('End compare') : trans.__('Compare')}
              </button>
              <button
                className="cube-Button"
                title={trans.__(
                  'Copy the Python openai code of this conversation'
                )}
                disabled={!readyA || kbPicked}
                onClick={() => this._copyCode()}
              >
                {trans.__('Copy as code')}
              </button>
              <button
                className="cube-Button"
                disabled={busy || this._exporting}
                title={trans.__(
                  'Turn your feedback into prompt / chosen / rejected pairs for DPO'
                )}
                onClick={() => void this._export()}
              >
                {this._exporting ? (
                  <span className="cube-TBusy">
                    <span className="cube-Spinner" /> {trans.__('Exporting…')}
                  </span>
                ) : (
                  trans.__('Export as preference data')
                )}
              </button>
            </div>
          </header>
          <div
            className={`cube-ChatSettings${compare ? ' cube-mod-compare' : ''}`}
          >
            <TargetPicker
              form={this._targetA}
              targets={this._targets}
              kbs={compare ? [] : this._kbs}
              trans={trans}
              name="target"
              label={compare ? trans.__('Target A') : trans.__('Target')}
              disabled={busy}
              onChange={c => {
                this._targetA = this._withAnswerer({ ...this._targetA, ...c });
                this.update();
              }}
            />
            {compare ? (
              <TargetPicker
                form={this._targetB}
                targets={this._targets}
                trans={trans}
                name="target-b"
                label={trans.__('Target B')}
                disabled={busy}
                onChange={c => {
                  this._targetB = { ...this._targetB, ...c };
                  this.update();
                }}
              />
            ) : null}
            <ParamsFields
              system={this._system}
              params={this._params}
              errors={errors}
              trans={trans}
              disabled={busy}
              onSystem={system => {
                this._system = system;
                this.update();
              }}
              onParams={changes => {
                this._params = { ...this._params, ...changes };
                this.update();
              }}
            />
          </div>
          {this._error ? (
            <ErrorBox
              error={this._error}
              dismiss={() => {
                this._error = null;
                this.update();
              }}
              dismissLabel={trans.__('Dismiss')}
            />
          ) : null}
          {sessionError ? (
            <ErrorBox
              error={sessionError}
              dismiss={() => {
                main.dismissError();
                compare?.dismissError();
              }}
              dismissLabel={trans.__('Dismiss')}
            />
          ) : null}
          {this._notice ? (
            <div className="cube-ChatNotice" role="status">
              {this._notice}
            </div>
          ) : null}
          {this._exported ? this._renderExported(this._exported) : null}
          <div
            className={`cube-ChatPanes${compare ? ' cube-mod-compare' : ''}`}
          >
            <div className="cube-ChatPane" data-pane="a">
              {compare ? (
                <div className="cube-ChatPane-head jp-text-truncated">
                  {targetLabel(formTarget(this._targetA))}
                </div>
              ) : null}
              {kbPicked ? (
                <KbTranscript
                  session={this._kb}
                  trans={trans}
                  empty={trans.__(
                    'Ask a question: the answer cites the passages of knowledge base %1 it used.',
                    kbFromValue(this._targetA.choice) ?? ''
                  )}
                  openSource={this._openPath}
                />
              ) : (
                <Transcript
                  session={main}
                  rendermime={this._rendermime}
                  trans={trans}
                  empty={this._emptyText()}
                />
              )}
            </div>
            {compare ? (
              <div className="cube-ChatPane" data-pane="b">
                <div className="cube-ChatPane-head jp-text-truncated">
                  {targetLabel(formTarget(this._targetB))}
                </div>
                <Transcript
                  session={compare}
                  rendermime={this._rendermime}
                  trans={trans}
                  empty={trans.__('Target B answers the same prompts here.')}
                />
              </div>
            ) : null}
          </div>
          <form
            className="cube-ChatComposer"
            onSubmit={e => {
              e.preventDefault();
              if (canSend) {
                void this._send();
              }
            }}
          >
            <textarea
              name="message"
              rows={3}
              aria-label={trans.__('Message')}
              placeholder={trans.__(
                'Message (Enter to send, Shift+Enter for a new line)'
              )}
              value={this._draft}
              onChange={e => {
                this._draft = e.target.value;
                this.update();
              }}
              onKeyDown={e => {
                if (
                  e.key === 'Enter' &&
                  !e.shiftKey &&
                  !e.nativeEvent.isComposing
                ) {
                  e.preventDefault();
                  if (canSend) {
                    void this._send();
                  }
                }
              }}
            />
            <div className="cube-ChatComposer-actions">
              {busy ? (
                <button
                  type="button"
                  className="cube-Button cube-DDanger"
                  name="stop"
                  onClick={() => this._stop()}
                >
                  {trans.__('Stop')}
                </button>
              ) : (
                <button
                  type="submit"
                  className="cube-Button cube-mod-primary"
                  name="send"
                  disabled={!canSend}
                >
                  {trans.__('Send')}
                </button>
              )}
              <button
                type="button"
                className="cube-Button"
                name="regenerate"
                disabled={busy || !last || !paramsOk || !readyA || kbPicked}
                title={trans.__(
                  'Ask a new answer to the last message (the current one is kept)'
                )}
                onClick={() => void this._regenerate()}
              >
                {trans.__('Regenerate')}
              </button>
            </div>
          </form>
        </section>
      </div>
    );
  }

  openConversation(c: Conversation): void {
    if (this._busy()) {
      return;
    }
    this._closeCompare();
    this._exported = null;
    void this._main.load(c.id).then(() => this._fromConversation());
  }

  newConversation(): void {
    if (this._busy()) {
      return;
    }
    this._closeCompare();
    this._main.clear();
    this._kb.clear();
    this._exported = null;
    this.update();
  }

  async renameConversation(c: Conversation, title: string): Promise<void> {
    try {
      const changed = await updateConversation(c.id, { title });
      this._conversations = upsertConversation(this._conversations, changed);
      const shown = this._main.conversation;
      if (shown && shown.id === c.id) {
        await this._main.load(c.id);
      }
    } catch (err) {
      this._error = describeError(err);
    }
    this.update();
  }

  async removeConversation(c: Conversation): Promise<void> {
    const trans = this._trans;
    const answer = await showDialog({
      title: trans.__(
        'Delete the conversation %1?',
        c.title || trans.__('New chat')
      ),
      body: trans.__(
        'Its messages and feedback are deleted; datasets exported from it stay.'
      ),
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.warnButton({ label: trans.__('Delete') })
      ]
    });
    if (!answer.button.accept) {
      return;
    }
    try {
      await deleteConversation(c.id);
      this._conversations = this._conversations.filter(x => x.id !== c.id);
      if (this._main.conversation?.id === c.id) {
        this._main.clear();
      }
      if (this._compare?.conversation?.id === c.id) {
        this._compare.clear();
      }
    } catch (err) {
      this._error = describeError(err);
    }
    this.update();
  }

  private _session(project: string): ChatSession {
    const s = new ChatSession(project);
    s.changed.connect(() => this.update());
    s.saved.connect((_, c) => {
      this._conversations = upsertConversation(this._conversations, c);
      void this._loadConversations();
    });
    return s;
  }

  private _kbSession(project: string): KbChatSession {
    const s = new KbChatSession(project);
    s.changed.connect(() => this.update());
    return s;
  }

  /** A knowledge base picked with no model to answer: the first deployment's. */
  private _withAnswerer(form: ITargetForm): ITargetForm {
    if (kbFromValue(form.choice) === null || form.answerer !== '') {
      return form;
    }
    const first = this._targets[0];
    return {
      ...form,
      answerer: first
        ? targetValue({ deployment: first.deployment })
        : URL_TARGET
    };
  }

  private _busy(): boolean {
    return (
      this._kb.busy ||
      this._main.streaming !== null ||
      (this._compare?.streaming ?? null) !== null
    );
  }

  private async _start(): Promise<void> {
    try {
      const { projects } = await listProjects();
      this._projects = projects.map(p => p.name);
    } catch (err) {
      this._error = describeError(err);
    }
    if (!this._project || !this._projects.includes(this._project)) {
      const fallback = this._projects.includes('default')
        ? 'default'
        : (this._projects[0] ?? this._project);
      if (!this._project || this._projects.length) {
        this._project = fallback;
      }
    }
    await this._switchProject(this._project, true);
  }

  private async _switchProject(project: string, force = false): Promise<void> {
    if (!force && project === this._project) {
      return;
    }
    this._project = project;
    this._main.dispose();
    this._closeCompare();
    this._main = this._session(project);
    this._kb.clear();
    this._kb = this._kbSession(project);
    this._conversations = [];
    this._exported = null;
    this.update();
    await Promise.all([this._loadTargets(), this._loadConversations()]);
    this._applyWanted();
    this.update();
  }

  private async _loadTargets(): Promise<void> {
    if (!this._project) {
      return;
    }
    const project = this._project;
    const [targets, kbs] = await Promise.all([
      listChatTargets(project).catch(err => {
        this._error = describeError(err);
        return { targets: [] };
      }),
      // no knowledge bases (or none to see): the picker offers none
      listKnowledgeBases(project).catch(() => ({ knowledge_bases: [] }))
    ]);
    this._targets = targets.targets;
    this._kbs = kbs.knowledge_bases
      .filter(k => k.project === project)
      .map(k => k.name);
    if (this._targetA.choice === '' && this._targets.length) {
      this._targetA = {
        ...EMPTY_TARGET,
        choice: targetValue({ deployment: this._targets[0].deployment })
      };
    }
  }

  private async _loadConversations(): Promise<void> {
    if (!this._project) {
      return;
    }
    const project = this._project;
    try {
      const { conversations } = await listConversations(project);
      if (project === this._project) {
        this._conversations = conversations;
      }
    } catch (err) {
      this._error = describeError(err);
    }
    this.update();
  }

  /** A deployment or knowledge base asked for (`chatWith`): a new chat with it. */
  private _applyWanted(): void {
    const kb = this._wantedKb;
    if (kb) {
      this._wantedKb = null;
      const answerer = this._wanted
        ? targetValue({ deployment: this._wanted })
        : '';
      this._wanted = null;
      this._closeCompare();
      this._targetA = this._withAnswerer({
        ...this._targetA,
        choice: kbTargetValue(kb),
        answerer
      });
      return;
    }
    const wanted = this._wanted;
    if (!wanted) {
      return;
    }
    this._wanted = null;
    const current = this._main.conversation;
    const target: ChatTarget = { deployment: wanted };
    if (
      current &&
      'deployment' in current.target &&
      current.target.deployment === wanted
    ) {
      return;
    }
    if (!this._busy()) {
      this._main.clear();
    }
    this._targetA = targetForm(target);
  }

  /** Show the opened conversation's settings. */
  private _fromConversation(): void {
    const c = this._main.conversation;
    if (c) {
      this._targetA = targetForm(c.target);
      this._system = c.system ?? '';
      this._params = paramsToForm(c.params);
    }
    this.update();
  }

  private _settings(form: ITargetForm): IChatSettings | null {
    const target = formTarget(form);
    const { params, errors } = readParams(this._params);
    if (!target || Object.keys(errors).length) {
      return null;
    }
    return { target, system: this._system, params };
  }

  private async _send(): Promise<void> {
    const text = this._draft;
    const kb = formKb(this._targetA);
    if (kb) {
      const { params, errors } = readParams(this._params);
      if (Object.keys(errors).length || !text.trim()) {
        return;
      }
      this._draft = '';
      this._notice = null;
      const ask: IKbAsk = {
        kb: kb.kb,
        query: text,
        target: kb.target,
        system: this._system,
        params
      };
      await this._kb.ask(ask);
      return;
    }
    const a = this._settings(this._targetA);
    const compare = this._compare;
    const b = compare ? this._settings(this._targetB) : null;
    if (!a || (compare && !b) || !text.trim()) {
      return;
    }
    this._draft = '';
    this._notice = null;
    this.update();
    const sends = [this._main.send(text, a)];
    if (compare && b) {
      sends.push(compare.send(text, b));
    }
    await Promise.all(sends);
  }

  private async _regenerate(): Promise<void> {
    const jobs: Promise<void>[] = [];
    const pairs: [ChatSession | null, ITargetForm][] = [
      [this._main, this._targetA],
      [this._compare, this._targetB]
    ];
    for (const [session, form] of pairs) {
      const settings = this._settings(form);
      const answer = session
        ? regenerable(toTurns(session.conversation?.messages ?? []))
        : null;
      if (session && settings && answer) {
        jobs.push(session.regenerate(answer, settings));
      }
    }
    await Promise.all(jobs);
  }

  private _stop(): void {
    this._kb.stop();
    this._main.stop();
    this._compare?.stop();
  }

  private _toggleCompare(): void {
    if (this._compare) {
      this._closeCompare();
    } else {
      this._compare = this._session(this._project);
      const other = this._targets.find(
        t => targetValue({ deployment: t.deployment }) !== this._targetA.choice
      );
      this._targetB = other
        ? {
            ...EMPTY_TARGET,
            choice: targetValue({ deployment: other.deployment })
          }
        : { ...this._targetA };
    }
    this.update();
  }

  private _closeCompare(): void {
    if (this._compare) {
      this._compare.dispose();
      this._compare = null;
    }
  }

  private _copyCode(): void {
    const trans = this._trans;
    const target = formTarget(this._targetA);
    if (!target) {
      return;
    }
    const { params } = readParams(this._params);
    const messages = contextMessages(
      this._system,
      toTurns(this._main.conversation?.messages ?? []),
      this._draft
    );
    let baseUrl: string;
    let model: string;
    let keyVariable: string;
    if ('deployment' in target) {
      const info: ChatTargetInfo | undefined = this._targets.find(
        t => t.deployment === target.deployment
      );
      if (!info?.endpoint) {
        this._error = {
          error: trans.__('Deployment %1 has no endpoint', target.deployment),
          detail: trans.__('Start the deployment, then copy its code again.')
        };
        this.update();
        return;
      }
      baseUrl = deploymentBaseUrl(info.endpoint);
      model = target.model ?? info.model;
      keyVariable = 'CUBE_LAB_DEPLOYMENT_KEY';
    } else {
      baseUrl = target.base_url;
      model = target.model;
      keyVariable = 'OPENAI_API_KEY';
    }
    const code = openaiSnippet({
      baseUrl,
      model,
      keyVariable,
      messages,
      params
    });
    Clipboard.copyToSystem(code);
    this._lastSnippet = code;
    this._notice = trans.__(
      'Copied the Python code (%1 messages); the key is read from $%2.',
      messages.length,
      keyVariable
    );
    this.update();
  }

  /** The snippet last copied (for tests and for a look). */
  get lastSnippet(): string {
    return this._lastSnippet;
  }

  private async _export(): Promise<void> {
    const current = this._main.conversation;
    const choice = await askExport(
      this._trans,
      this._datasetName,
      current !== null
    );
    if (!choice || !choice.dataset) {
      return;
    }
    this._datasetName = choice.dataset;
    this._exporting = true;
    this._exported = null;
    this.update();
    try {
      const ids = [current?.id, this._compare?.conversation?.id].filter(
        (id): id is number => typeof id === 'number'
      );
      this._exported = await exportPreferences({
        project: this._project,
        dataset: choice.dataset,
        conversation_ids: choice.onlyCurrent ? ids : undefined
      });
    } catch (err) {
      this._error = describeError(err);
    } finally {
      this._exporting = false;
      this.update();
    }
  }

  private _renderExported(e: PreferenceExport): JSX.Element {
    const trans = this._trans;
    const skipped = Object.entries(e.skipped)
      .filter(([, n]) => n > 0)
      .map(([why, n]) => `${skipReason(trans, why)}: ${n}`)
      .join(', ');
    return (
      <div className="cube-ChatExported" role="status" data-ref={e.ref}>
        <div>
          {trans.__(
            'Registered %1: %2 preference pairs from %3 conversations.',
            e.ref,
            e.pairs,
            e.conversations
          )}{' '}
          {skipped ? (
            <span className="cube-TMuted">
              {trans.__('Skipped: %1.', skipped)}
            </span>
          ) : null}
        </div>
        <div className="cube-ChatExported-links">
          <a
            className="cube-TLink"
            href={datasetVersionDownloadUrl(
              e.project ?? this._project,
              e.dataset,
              e.version
            )}
            download
          >
            {trans.__('Download preferences.jsonl')}
          </a>
          <button
            className="cube-TLink"
            onClick={() => Clipboard.copyToSystem(e.ref)}
            title={trans.__(
              'A DPO fine-tune reads it as data: {dataset: "%1"}',
              e.ref
            )}
          >
            {trans.__('Copy %1', e.ref)}
          </button>
          <button
            className="cube-TLink cube-LError-close"
            aria-label={trans.__('Dismiss')}
            onClick={() => {
              this._exported = null;
              this.update();
            }}
          >
            ×
          </button>
        </div>
      </div>
    );
  }

  private _emptyText(): React.ReactNode {
    const trans = this._trans;
    if (this._targets.length === 0) {
      return trans.__(
        'No language model is deployed in project %1. Deploy one from the Models panel, or choose “OpenAI-compatible URL…” as the target.',
        this._project
      );
    }
    return trans.__('Pick a target, then send a message.');
  }

  private _trans: TranslationBundle;
  private _rendermime: IRenderMimeRegistry | null;
  private _project: string;
  private _projects: string[] = [];
  private _wanted: string | null;
  private _wantedKb: string | null;
  private _openPath: ((path: string) => void) | undefined;
  private _kb: KbChatSession;
  private _kbs: string[] = [];
  private _targets: ChatTargetInfo[] = [];
  private _conversations: Conversation[] = [];
  private _main: ChatSession;
  private _compare: ChatSession | null = null;
  private _targetA: ITargetForm = EMPTY_TARGET;
  private _targetB: ITargetForm = EMPTY_TARGET;
  private _system = '';
  private _params: IParamsForm = paramsToForm(null);
  private _draft = '';
  private _error: ErrorText | null = null;
  private _notice: string | null = null;
  private _exported: PreferenceExport | null = null;
  private _exporting = false;
  private _datasetName = 'chat-preferences';
  private _lastSnippet = '';
  private _started = false;
}

/** Why the export skipped turns, in words. */
function skipReason(trans: TranslationBundle, why: string): string {
  switch (why) {
    case 'no_preference':
      return trans.__('no preference');
    case 'stopped':
      return trans.__('stopped answers');
    case 'error':
      return trans.__('failed answers');
    default:
      return why;
  }
}

export namespace ChatView {
  export interface IOptions {
    translator: ITranslator;
    rendermime: IRenderMimeRegistry | null;
    /** The project to open in (default: the user's default project). */
    project?: string;
    /** A deployment to chat with first. */
    deployment?: string;
    /** A knowledge base to ask first (answered by `deployment` when given). */
    knowledgeBase?: string;
    /** Open a file of the root (a knowledge base's cited source). */
    openPath?: (path: string) => void;
  }
}
