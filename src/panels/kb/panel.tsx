/**
 * The "Knowledge bases" side panel: the knowledge bases of the user's
 * projects with their counts of sources and chunks, a form to create one
 * (a name and a project), and Delete (after a confirmation).
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import { addIcon, refreshIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import {
  createKnowledgeBase,
  deleteKnowledgeBase,
  describeError,
  KnowledgeBase,
  listKnowledgeBases,
  Project,
  whoami
} from '../../api';
import { ICubeSettings } from '../../tokens';
import { EmptyState } from '../empty';
import { ErrorBox } from '../errorbox';
import { PolledSection } from '../section';
import { confirmDelete } from './remove';

type ErrorInfo = { error: string; detail: string };

export class KnowledgeBasesPanel extends PolledSection {
  constructor(options: KnowledgeBasesPanel.IOptions) {
    super({ ...options, pollName: 'cube-lab:knowledge-bases' });
    this.addClass('cube-KbPanel');
    this._open = options.open;
    this._deleted = options.deleted ?? (() => undefined);
    this.title.label = this.trans.__('Knowledge bases');
    this.title.caption = this.trans.__(
      'Documents indexed for search and chat with citations'
    );
    this.addButton('new', addIcon, this.trans.__('New knowledge base'), () =>
      this.showCreate()
    );
    this.addButton(
      'refresh',
      refreshIcon,
      this.trans.__('Refresh knowledge bases'),
      () => void this.refresh()
    );
  }

  get knowledgeBases(): KnowledgeBase[] {
    return this._items;
  }

  /** Show the create form. */
  showCreate(): void {
    this._creating = true;
    this.update();
  }

  protected async fetch(): Promise<void> {
    try {
      if (!this._projects.length) {
        const me = await whoami();
        this._projects = me.projects;
        this._user = me.user;
      }
      this._items = (await listKnowledgeBases()).knowledge_bases;
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
      throw err;
    } finally {
      this._loaded = true;
    }
  }

  protected render(): JSX.Element {
    const trans = this.trans;
    return (
      <div className="cube-Kb">
        {this._creating ? (
          <CreateForm
            trans={trans}
            projects={this._projects}
            defaultProject={this._user}
            cancel={() => {
              this._creating = false;
              this.update();
            }}
            create={async (name, project) => {
              const kb = await createKnowledgeBase({ name, project });
              this._creating = false;
              this._items = [
                ...this._items.filter(
                  k => !(k.project === kb.project && k.name === kb.name)
                ),
                kb
              ];
              this.update();
              this._open(kb);
              void this.refresh();
            }}
          />
        ) : null}
        {this._error ? <ErrorBox error={this._error} /> : null}
        {!this._loaded ? (
          <div className="cube-Loading">
            <span className="cube-Spinner" />{' '}
            {trans.__('Loading knowledge bases…')}
          </div>
        ) : this._items.length ? (
          <ul className="cube-KbList" aria-label={trans.__('Knowledge bases')}>
            {this._items.map(kb => (
              <li
                key={`${kb.project}/${kb.name}`}
                className="cube-KbItem"
                data-kb={kb.name}
              >
                <button
                  className="cube-KbItem-main"
                  onClick={() => this._open(kb)}
                  title={trans.__('Open knowledge base %1', kb.name)}
                >
                  <span className="cube-KbItem-name">{kb.name}</span>
                  <span className="cube-KbItem-meta">
                    {trans._n('%1 source', '%1 sources', kb.sources)} ·{' '}
                    {trans._n('%1 chunk', '%1 chunks', kb.chunks)}
                    {kb.project !== this._user ? ` · ${kb.project}` : ''}
                  </span>
                </button>
                <button
                  className="cube-TLink cube-KbItem-delete"
                  disabled={this._deleting.has(`${kb.project}/${kb.name}`)}
                  onClick={() => void this._delete(kb)}
                  title={trans.__('Delete knowledge base %1', kb.name)}
                >
                  {trans.__('Delete')}
                </button>
              </li>
            ))}
          </ul>
        ) : this._error || this._creating ? null : (
          <EmptyState
            title={trans.__('No knowledge bases yet')}
            text={trans.__(
              'A knowledge base indexes documents (Markdown, text, HTML, PDF, DOCX, CSV, notebooks) for search and for answers with citations.'
            )}
            action={{
              label: trans.__('New knowledge base'),
              run: () => this.showCreate()
            }}
            terminal="cube-lab kb create docs"
            trans={trans}
          />
        )}
      </div>
    );
  }

  private async _delete(kb: KnowledgeBase): Promise<void> {
    if (!(await confirmDelete(kb, this.trans))) {
      return;
    }
    const key = `${kb.project}/${kb.name}`;
    this._deleting.add(key);
    this.update();
    try {
      await deleteKnowledgeBase(kb.project, kb.name);
      this._items = this._items.filter(
        k => !(k.project === kb.project && k.name === kb.name)
      );
      this._error = null;
      this._deleted(kb);
    } catch (err) {
      this._error = describeError(err);
    } finally {
      this._deleting.delete(key);
      this.update();
    }
  }

  private _open: (kb: KnowledgeBase) => void;
  private _deleted: (kb: KnowledgeBase) => void;
  private _items: KnowledgeBase[] = [];
  private _projects: Project[] = [];
  private _user = '';
  private _loaded = false;
  private _creating = false;
  private _deleting = new Set<string>();
  private _error: ErrorInfo | null = null;
}

export namespace KnowledgeBasesPanel {
  export interface IOptions {
    settings: ICubeSettings;
    translator: ITranslator;
    /** Open the knowledge base's view in the main area. */
    open: (kb: KnowledgeBase) => void;
    /** A knowledge base was deleted from here. */
    deleted?: (kb: KnowledgeBase) => void;
  }
}

function CreateForm(props: {
  trans: TranslationBundle;
  projects: Project[];
  defaultProject: string;
  create: (name: string, project: string) => Promise<void>;
  cancel: () => void;
}): JSX.Element {
  const { trans, projects } = props;
  const [name, setName] = React.useState('');
  const [project, setProject] = React.useState(
    props.defaultProject || projects[0]?.name || ''
  );
  const [busy, setBusy] = React.useState(false);
  const [error, setError] = React.useState<ErrorInfo | null>(null);
  const submit = async (event: React.FormEvent) => {
    event.preventDefault();
    if (!name.trim()) {
      setError({
        error: trans.__('A name is required.'),
        detail: trans.__('e.g. docs or handbook')
      });
      return;
    }
    setBusy(true);
    try {
      await props.create(name.trim(), project);
    } catch (err) {
      setError(describeError(err));
      setBusy(false);
    }
  };
  return (
    <form
      className="cube-KbCreate"
      onSubmit={e => void submit(e)}
      aria-label={trans.__('New knowledge base')}
    >
      <label className="cube-KbField">
        <span>{trans.__('Name')}</span>
        <input
          className="jp-mod-styled cube-KbInput"
          name="kb-name"
          value={name}
          autoFocus
          placeholder={trans.__('e.g. docs')}
          onChange={e => setName(e.target.value)}
        />
      </label>
      <label className="cube-KbField">
        <span>{trans.__('Project')}</span>
        <select
          className="jp-mod-styled cube-KbInput"
          name="kb-project"
          value={project}
          onChange={e => setProject(e.target.value)}
        >
          {projects.map(p => (
            <option key={p.name} value={p.name}>
              {p.kind === 'personal'
                ? trans.__('%1 (personal)', p.name)
                : p.name}
            </option>
          ))}
        </select>
      </label>
      {error ? <ErrorBox error={error} /> : null}
      <div className="cube-KbCreate-actions">
        <button type="button" className="cube-Button" onClick={props.cancel}>
          {trans.__('Cancel')}
        </button>
        <button
          type="submit"
          className="cube-Button cube-mod-primary"
          disabled={busy}
        >
          {busy ? trans.__('Creating…') : trans.__('Create')}
        </button>
      </div>
    </form>
  );
}
