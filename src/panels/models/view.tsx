/**
 * React views of the model registry: list, versions, version detail,
 * comparison, empty / loading / error states.
 */
import { TranslationBundle } from '@jupyterlab/translation';
import {
  caretLeftIcon,
  copyIcon,
  deleteIcon,
  downloadIcon,
  launchIcon,
  searchIcon,
  tagIcon
} from '@jupyterlab/ui-components';
import * as React from 'react';

import {
  JSONValue,
  lineageDatasetLabel,
  Model,
  ModelDetail,
  ModelVersion
} from '../../api';
import {
  formatBytes,
  formatDateTime,
  formatMetric,
  formatRelativeTime,
  formatValue,
  shortChecksum
} from '../../format';
import { bestIndex, keyMetrics } from './helpers';
import { IErrorInfo, IModelsState, ModelsModel, ModelsRoute } from './model';

/** What the views can ask the panel to do. */
export interface IModelsActions {
  navigate(route: ModelsRoute): void;
  refresh(): void;
  openPath(path: string): void;
  copy(text: string, what: string): void;
  downloadUrl(version: ModelVersion): string;
  setAlias(version: ModelVersion): void;
  removeAlias(project: string, name: string, alias: string): void;
  setVersionArchived(version: ModelVersion, archived: boolean): void;
  deleteVersion(version: ModelVersion): void;
  setModelArchived(model: Model, archived: boolean): void;
  deleteModel(model: Model): void;
  /** Deploy a version as an inference service (when the serving plugin is there). */
  deploy?: (version: ModelVersion) => void;
  canDeploy?: () => boolean;
  /** Open a route in a main-area tab (absent inside that tab). */
  openInTab?: (route: ModelsRoute) => void;
}

interface IViewProps {
  state: IModelsState;
  /** Narrow container (the sidebar): stacked rows instead of wide tables. */
  compact: boolean;
  model: ModelsModel;
  actions: IModelsActions;
  trans: TranslationBundle;
}

/** Below this width (px) the views use their compact layout. */
const COMPACT_WIDTH = 480;

/** Subscribe to the model and render the current route. */
export function ModelsView(props: {
  model: ModelsModel;
  actions: IModelsActions;
  trans: TranslationBundle;
}): JSX.Element {
  const { model } = props;
  const [state, setState] = React.useState<IModelsState>(model.state);
  React.useEffect(() => {
    const onChange = (_: ModelsModel, next: IModelsState) => setState(next);
    model.changed.connect(onChange);
    setState(model.state);
    return () => {
      model.changed.disconnect(onChange);
    };
  }, [model]);

  const root = React.useRef<HTMLDivElement>(null);
  const [width, setWidth] = React.useState(0);
  React.useEffect(() => {
    const node = root.current;
    if (!node || typeof ResizeObserver === 'undefined') {
      return;
    }
    const observer = new ResizeObserver(entries => {
      setWidth(entries[0]?.contentRect.width ?? 0);
    });
    observer.observe(node);
    return () => observer.disconnect();
  }, []);
  const compact = width < COMPACT_WIDTH;

  const view = { ...props, state, compact };
  let body: JSX.Element;
  switch (state.route.kind) {
    case 'list':
      body = <ListView {...view} />;
      break;
    case 'model':
      body = <ModelView {...view} />;
      break;
    case 'version':
      body = <VersionView {...view} />;
      break;
    case 'compare':
      body = <CompareView {...view} />;
      break;
  }
  return (
    <div
      ref={root}
      className={`cube-Models${compact ? ' cube-mod-compact' : ''}`}
      data-route={state.route.kind}
    >
      {body}
    </div>
  );
}

/* -------------------------------------------------------------------------- */
/* Shared bits                                                                */
/* -------------------------------------------------------------------------- */

function RelativeTime(props: { value: string }): JSX.Element {
  return (
    <time dateTime={props.value} title={formatDateTime(props.value)}>
      {formatRelativeTime(props.value)}
    </time>
  );
}

function AliasBadge(props: {
  alias: string;
  version?: number;
  onRemove?: () => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { alias, version, onRemove, trans } = props;
  return (
    <span
      className="cube-Badge cube-Badge-alias"
      title={
        version !== undefined
          ? trans.__('Alias "%1" points at version %2', alias, version)
          : trans.__('Alias "%1"', alias)
      }
    >
      <span className="cube-Badge-label">{alias}</span>
      {version !== undefined && (
        <span className="cube-Badge-version">v{version}</span>
      )}
      {onRemove && (
        <button
          className="cube-Badge-remove"
          title={trans.__('Remove alias "%1"', alias)}
          aria-label={trans.__('Remove alias "%1"', alias)}
          onClick={e => {
            e.stopPropagation();
            onRemove();
          }}
        >
          ×
        </button>
      )}
    </span>
  );
}

function ArchivedBadge(props: { trans: TranslationBundle }): JSX.Element {
  return (
    <span className="cube-Badge cube-Badge-archived">
      {props.trans.__('archived')}
    </span>
  );
}

/** Course material (a teacher's hand-out): readable, deployable, not changeable. */
function ReadOnlyBadge(props: {
  owner: string;
  trans: TranslationBundle;
}): JSX.Element {
  return (
    <span
      className="cube-Badge cube-Badge-readonly"
      title={props.trans.__(
        'Course material of %1: use it as it is; only they change it.',
        props.owner
      )}
    >
      {props.trans.__('read-only')}
    </span>
  );
}

function ErrorBox(props: {
  error: IErrorInfo;
  trans: TranslationBundle;
  onRetry?: () => void;
  onBack?: () => void;
}): JSX.Element {
  const { error, trans } = props;
  return (
    <div className="cube-Error" role="alert">
      <div className="cube-Error-title">{error.error}</div>
      {error.detail && <pre className="cube-Error-detail">{error.detail}</pre>}
      <div className="cube-Error-actions">
        {props.onRetry && (
          <button className="jp-mod-styled cube-Button" onClick={props.onRetry}>
            {trans.__('Retry')}
          </button>
        )}
        {props.onBack && (
          <button className="jp-mod-styled cube-Button" onClick={props.onBack}>
            {trans.__('Back to models')}
          </button>
        )}
      </div>
    </div>
  );
}

function Loading(props: { trans: TranslationBundle }): JSX.Element {
  return (
    <div className="cube-Loading" aria-busy="true">
      <span className="cube-Spinner" />
      {props.trans.__('Loading…')}
    </div>
  );
}

function Breadcrumbs(props: {
  items: { label: string; route?: ModelsRoute }[];
  actions: IModelsActions;
  trans: TranslationBundle;
  /** Offer to open this route in a main-area tab. */
  tabRoute?: ModelsRoute;
}): JSX.Element {
  const { items, actions, trans, tabRoute } = props;
  const back = [...items].reverse().find(i => i.route)?.route;
  return (
    <nav className="cube-Breadcrumbs" aria-label={trans.__('Location')}>
      {back && (
        <button
          className="cube-IconButton"
          title={trans.__('Back')}
          aria-label={trans.__('Back')}
          onClick={() => actions.navigate(back)}
        >
          <caretLeftIcon.react tag="span" />
        </button>
      )}
      {items.map((item, i) => (
        <React.Fragment key={i}>
          {i > 0 && <span className="cube-Breadcrumbs-sep">/</span>}
          {item.route ? (
            <a
              href="#"
              className="cube-Breadcrumbs-link"
              title={item.label}
              onClick={e => {
                e.preventDefault();
                actions.navigate(item.route!);
              }}
            >
              {item.label}
            </a>
          ) : (
            <span className="cube-Breadcrumbs-current" title={item.label}>
              {item.label}
            </span>
          )}
        </React.Fragment>
      ))}
      {tabRoute && actions.openInTab && (
        <button
          className="cube-IconButton cube-Breadcrumbs-tab"
          title={trans.__('Open in a tab')}
          aria-label={trans.__('Open in a tab')}
          onClick={() => actions.openInTab!(tabRoute)}
        >
          <launchIcon.react tag="span" />
        </button>
      )}
    </nav>
  );
}

function ToolButton(props: {
  icon?: { react: React.ComponentType<any> };
  label: string;
  title?: string;
  onClick: () => void;
  disabled?: boolean;
  danger?: boolean;
  className?: string;
}): JSX.Element {
  const Icon = props.icon?.react;
  return (
    <button
      className={`cube-ToolButton${props.danger ? ' cube-mod-danger' : ''}${
        props.className ? ' ' + props.className : ''
      }`}
      title={props.title ?? props.label}
      onClick={props.onClick}
      disabled={props.disabled}
    >
      {Icon && <Icon tag="span" className="cube-ToolButton-icon" />}
      <span className="cube-ToolButton-label">{props.label}</span>
    </button>
  );
}

function KeyValueTable(props: {
  rows: [string, React.ReactNode][];
  className?: string;
  empty: string;
}): JSX.Element {
  if (!props.rows.length) {
    return <div className="cube-Muted">{props.empty}</div>;
  }
  return (
    <table className={`cube-KV ${props.className ?? ''}`}>
      <tbody>
        {props.rows.map(([k, v]) => (
          <tr key={k}>
            <th scope="row" title={k}>
              {k}
            </th>
            <td>{v}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Section(props: {
  title: string;
  children: React.ReactNode;
  className?: string;
}): JSX.Element {
  return (
    <section className={`cube-Section ${props.className ?? ''}`}>
      <h3 className="cube-Section-title">{props.title}</h3>
      {props.children}
    </section>
  );
}

/* -------------------------------------------------------------------------- */
/* List                                                                       */
/* -------------------------------------------------------------------------- */

function ListView(props: IViewProps): JSX.Element {
  const { state, model, actions, trans } = props;
  const [query, setQuery] = React.useState(state.query);
  React.useEffect(() => setQuery(state.query), [state.query]);
  const list = state.list;
  const projects = state.whoami?.projects ?? [];
  const filtered =
    state.query !== '' || state.project !== '' || state.includeArchived;

  let content: JSX.Element;
  if (!list && state.error) {
    content = (
      <ErrorBox error={state.error} trans={trans} onRetry={actions.refresh} />
    );
  } else if (!list) {
    content = <Loading trans={trans} />;
  } else if (list.models.length === 0 && !filtered) {
    content = <EmptyState actions={actions} trans={trans} />;
  } else if (list.models.length === 0) {
    content = (
      <div className="cube-NoResults">
        <p>
          {state.query
            ? trans.__('No models match "%1".', state.query)
            : trans.__('No models match these filters.')}
        </p>
        <button
          className="jp-mod-styled cube-Button"
          onClick={() => {
            model.setQuery('');
            model.setProject('');
            model.setIncludeArchived(false);
          }}
        >
          {trans.__('Clear filters')}
        </button>
      </div>
    );
  } else {
    content = (
      <>
        {state.error && (
          <ErrorBox
            error={state.error}
            trans={trans}
            onRetry={actions.refresh}
          />
        )}
        <ul className="cube-ModelList" aria-label={trans.__('Models')}>
          {list.models.map(m => (
            <ModelItem
              key={`${m.project}/${m.name}`}
              item={m}
              showProject={projects.length > 1 || state.project === ''}
              actions={actions}
              trans={trans}
            />
          ))}
        </ul>
        <div className="cube-ListFooter">
          <span className="cube-Muted">
            {trans._n(
              '%1 model',
              '%1 models',
              list.total ?? list.models.length
            )}
          </span>
          {list.total > list.models.length && (
            <button
              className="jp-mod-styled cube-Button"
              onClick={() => model.showMore()}
            >
              {trans.__('Show more')}
            </button>
          )}
        </div>
      </>
    );
  }

  return (
    <div className="cube-ListView">
      <div className="cube-Filters">
        <label className="cube-Search">
          <searchIcon.react tag="span" className="cube-Search-icon" />
          <input
            type="search"
            className="cube-Search-input"
            placeholder={trans.__('Search models')}
            aria-label={trans.__('Search models')}
            value={query}
            onChange={e => {
              setQuery(e.target.value);
              model.setQuery(e.target.value);
            }}
          />
        </label>
        <div className="cube-Filters-row">
          <select
            className="cube-Select"
            aria-label={trans.__('Project')}
            title={trans.__('Project')}
            value={state.project}
            onChange={e => model.setProject(e.target.value)}
          >
            <option value="">{trans.__('All projects')}</option>
            {projects.map(p => (
              <option key={p.name} value={p.name}>
                {p.kind === 'personal'
                  ? trans.__('%1 (personal)', p.name)
                  : p.name}
              </option>
            ))}
          </select>
          <label className="cube-Check">
            <input
              type="checkbox"
              checked={state.includeArchived}
              onChange={e => model.setIncludeArchived(e.target.checked)}
            />
            {trans.__('Archived')}
          </label>
        </div>
      </div>
      <div className="cube-Scroll">{content}</div>
    </div>
  );
}

function ModelItem(props: {
  item: Model;
  showProject: boolean;
  actions: IModelsActions;
  trans: TranslationBundle;
}): JSX.Element {
  const { item, actions, trans } = props;
  const open = () =>
    actions.navigate({ kind: 'model', project: item.project, name: item.name });
  const aliases = Object.entries(item.aliases ?? {});
  return (
    <li
      className={`cube-ModelItem${item.archived ? ' cube-mod-archived' : ''}`}
      data-model={item.name}
      data-project={item.project}
      tabIndex={0}
      role="button"
      onClick={open}
      onKeyDown={e => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          open();
        }
      }}
    >
      <div className="cube-ModelItem-top">
        <span className="cube-ModelItem-name">{item.name}</span>
        {item.latest_version !== null && (
          <span
            className="cube-Badge cube-Badge-version-latest"
            title={trans.__('Latest version')}
          >
            v{item.latest_version}
          </span>
        )}
        {item.archived && <ArchivedBadge trans={trans} />}
        {item.read_only && <ReadOnlyBadge owner={item.owner} trans={trans} />}
        <span className="cube-ModelItem-time">
          <RelativeTime value={item.updated_at} />
        </span>
      </div>
      <div className="cube-ModelItem-meta">
        {props.showProject && (
          <span className="cube-ModelItem-project" title={trans.__('Project')}>
            {item.project}
          </span>
        )}
        {item.flavor && <span className="cube-Flavor">{item.flavor}</span>}
        <span>{trans._n('%1 version', '%1 versions', item.version_count)}</span>
      </div>
      {aliases.length > 0 && (
        <div className="cube-ModelItem-aliases">
          {aliases.map(([alias, version]) => (
            <AliasBadge
              key={alias}
              alias={alias}
              version={version}
              trans={trans}
            />
          ))}
        </div>
      )}
    </li>
  );
}

/* -------------------------------------------------------------------------- */
/* Empty state                                                                */
/* -------------------------------------------------------------------------- */

function EmptyState(props: {
  actions: IModelsActions;
  trans: TranslationBundle;
}): JSX.Element {
  const { actions, trans } = props;
  const ways: { title: string; code?: string }[] = [
    {
      title: trans.__('In a notebook (cube kernel or %load_ext cube_lab)'),
      code: '%cube_register NAME PATH'
    },
    {
      title: trans.__('From Python'),
      code: 'import cube_lab\n\ncube_lab.registry.register(\n    model, name="NAME"\n)'
    },
    {
      title: trans.__('From a terminal'),
      code: 'cube-lab model register PATH \\\n    --name NAME'
    },
    {
      title: trans.__(
        'In the file browser: right-click a file or folder, then "Register as model"'
      )
    }
  ];
  return (
    <div className="cube-Empty">
      <div className="cube-Empty-title">{trans.__('No models yet')}</div>
      <p className="cube-Empty-text">
        {trans.__(
          'Register a trained model to version it, compare metrics and share it with your project.'
        )}
      </p>
      <ul className="cube-Empty-ways">
        {ways.map(w => (
          <li key={w.title}>
            <div className="cube-Empty-way">
              <span>{w.title}</span>
              {w.code && (
                <button
                  className="cube-IconButton cube-Snippet-copy"
                  title={trans.__('Copy')}
                  aria-label={trans.__('Copy')}
                  onClick={() => actions.copy(w.code!, trans.__('Snippet'))}
                >
                  <copyIcon.react tag="span" />
                </button>
              )}
            </div>
            {w.code && (
              <pre className="cube-Snippet">
                <code>{w.code}</code>
              </pre>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}

/* -------------------------------------------------------------------------- */
/* Model: versions table                                                      */
/* -------------------------------------------------------------------------- */

function ModelView(props: IViewProps): JSX.Element {
  const { state, model, actions, trans, compact } = props;
  const route = state.route as Extract<ModelsRoute, { kind: 'model' }>;
  const detail =
    state.model &&
    state.model.project === route.project &&
    state.model.name === route.name
      ? state.model
      : null;
  const crumbs = [
    { label: trans.__('Models'), route: { kind: 'list' } as ModelsRoute },
    { label: route.name }
  ];

  let content: JSX.Element;
  if (!detail && state.error) {
    content = (
      <ErrorBox
        error={state.error}
        trans={trans}
        onRetry={actions.refresh}
        onBack={() => actions.navigate({ kind: 'list' })}
      />
    );
  } else if (!detail) {
    content = <Loading trans={trans} />;
  } else {
    content = (
      <ModelDetailBody
        detail={detail}
        state={state}
        model={model}
        actions={actions}
        trans={trans}
        compact={compact}
      />
    );
  }
  return (
    <div className="cube-ModelView">
      <Breadcrumbs
        items={crumbs}
        actions={actions}
        trans={trans}
        tabRoute={route}
      />
      <div className="cube-Scroll">{content}</div>
    </div>
  );
}

function ModelDetailBody(props: {
  detail: ModelDetail;
  state: IModelsState;
  model: ModelsModel;
  actions: IModelsActions;
  trans: TranslationBundle;
  compact: boolean;
}): JSX.Element {
  const { detail, state, model, actions, trans, compact } = props;
  const versions = detail.versions ?? [];
  const aliases = Object.entries(detail.aliases ?? {});
  const selection = state.selection;
  const rowProps = { versions, selection, model, actions, trans };
  return (
    <>
      {state.error && (
        <ErrorBox error={state.error} trans={trans} onRetry={actions.refresh} />
      )}
      <header className="cube-Header">
        <div className="cube-Header-title">
          <h2 title={detail.name}>{detail.name}</h2>
          {detail.archived && <ArchivedBadge trans={trans} />}
          {detail.read_only && (
            <ReadOnlyBadge owner={detail.owner} trans={trans} />
          )}
        </div>
        <div className="cube-Header-meta cube-mod-dotted">
          <span
            title={trans.__(
              'Project %1, owner %2',
              detail.project,
              detail.owner
            )}
          >
            {detail.project}
          </span>
          {detail.flavor && (
            <span className="cube-Flavor">{detail.flavor}</span>
          )}
          <span>
            {trans._n('%1 version', '%1 versions', detail.version_count)}
          </span>
          <span>
            {trans.__('updated')} <RelativeTime value={detail.updated_at} />
          </span>
        </div>
        {detail.description && (
          <p className="cube-Description">{detail.description}</p>
        )}
        {aliases.length > 0 && (
          <div className="cube-Aliases">
            {aliases.map(([alias, version]) => (
              <AliasBadge
                key={alias}
                alias={alias}
                version={version}
                trans={trans}
                onRemove={() =>
                  actions.removeAlias(detail.project, detail.name, alias)
                }
              />
            ))}
          </div>
        )}
        <div className="cube-Actions">
          <ToolButton
            label={
              detail.archived ? trans.__('Unarchive') : trans.__('Archive')
            }
            title={
              detail.archived
                ? trans.__('Show this model in the list again')
                : trans.__('Hide this model from the list (nothing is deleted)')
            }
            onClick={() => actions.setModelArchived(detail, !detail.archived)}
          />
          <ToolButton
            icon={deleteIcon}
            label={trans.__('Delete model')}
            title={trans.__('Delete this model and all its versions')}
            danger
            onClick={() => actions.deleteModel(detail)}
          />
        </div>
      </header>
      {versions.length === 0 ? (
        <div className="cube-Muted">
          {trans.__('This model has no versions.')}
        </div>
      ) : compact ? (
        <VersionCards {...rowProps} />
      ) : (
        <VersionTable {...rowProps} />
      )}
      {versions.length > 1 && <CompareBar detail={detail} {...rowProps} />}
    </>
  );
}

interface IVersionRowsProps {
  versions: ModelVersion[];
  selection: number[];
  model: ModelsModel;
  actions: IModelsActions;
  trans: TranslationBundle;
}

function openVersion(actions: IModelsActions, v: ModelVersion): void {
  actions.navigate({
    kind: 'version',
    project: v.project,
    name: v.model,
    version: v.version
  });
}

function SelectBox(props: {
  v: ModelVersion;
  selection: number[];
  model: ModelsModel;
  trans: TranslationBundle;
}): JSX.Element {
  const { v, selection, model, trans } = props;
  return (
    <input
      type="checkbox"
      className="cube-SelectBox"
      aria-label={trans.__('Select version %1 to compare', v.version)}
      title={trans.__('Select to compare')}
      checked={selection.includes(v.version)}
      onClick={e => e.stopPropagation()}
      onChange={() => model.toggleSelected(v.version)}
    />
  );
}

function rowClass(base: string, v: ModelVersion, selection: number[]) {
  return `${base} cube-VersionRow${v.archived ? ' cube-mod-archived' : ''}${
    selection.includes(v.version) ? ' cube-mod-selected' : ''
  }`;
}

/** Versions as stacked rows, for narrow panels. */
function VersionCards(props: IVersionRowsProps): JSX.Element {
  const { versions, selection, model, actions, trans } = props;
  const metrics = keyMetrics(versions);
  return (
    <ul className="cube-VersionCards" aria-label={trans.__('Versions')}>
      {versions.map(v => {
        const shown = metrics.filter(m => m in (v.metrics ?? {}));
        return (
          <li
            key={v.version}
            className={rowClass('cube-VersionCard', v, selection)}
            data-version={v.version}
            tabIndex={0}
            role="button"
            onClick={() => openVersion(actions, v)}
            onKeyDown={e => {
              if (e.key === 'Enter') {
                openVersion(actions, v);
              }
            }}
          >
            <SelectBox
              v={v}
              selection={selection}
              model={model}
              trans={trans}
            />
            <div className="cube-VersionCard-body">
              <div className="cube-VersionCard-top">
                <span className="cube-VersionNumber">v{v.version}</span>
                {v.aliases.map(a => (
                  <AliasBadge key={a} alias={a} trans={trans} />
                ))}
                {v.archived && <ArchivedBadge trans={trans} />}
                <span className="cube-VersionCard-time">
                  <RelativeTime value={v.created_at} />
                </span>
              </div>
              {shown.length > 0 && (
                <div className="cube-VersionCard-metrics">
                  {shown.map(m => (
                    <span key={m} className="cube-MetricChip" title={m}>
                      <span className="cube-MetricChip-name">{m}</span>
                      <span className="cube-MetricChip-value">
                        {formatMetric(v.metrics[m])}
                      </span>
                    </span>
                  ))}
                </div>
              )}
              <div className="cube-VersionCard-meta cube-mod-dotted">
                <span>{v.created_by}</span>
                <span>{v.flavor}</span>
                <span>{formatBytes(v.size_bytes)}</span>
              </div>
            </div>
          </li>
        );
      })}
    </ul>
  );
}

/** Versions as a table with one column per key metric, for wide panels. */
function VersionTable(props: IVersionRowsProps): JSX.Element {
  const { versions, selection, model, actions, trans } = props;
  const metrics = keyMetrics(versions, 5);
  return (
    <div className="cube-TableWrap">
      <table className="cube-Table cube-VersionsTable">
        <thead>
          <tr>
            <th className="cube-col-select">
              <span className="cube-VisuallyHidden">{trans.__('Select')}</span>
            </th>
            <th>{trans.__('Version')}</th>
            <th>{trans.__('Aliases')}</th>
            {metrics.map(m => (
              <th key={m} className="cube-col-metric cube-num" title={m}>
                {m}
              </th>
            ))}
            <th>{trans.__('Flavor')}</th>
            <th>{trans.__('Created')}</th>
            <th>{trans.__('Created by')}</th>
            <th className="cube-num">{trans.__('Size')}</th>
          </tr>
        </thead>
        <tbody>
          {versions.map(v => (
            <tr
              key={v.version}
              className={rowClass('cube-VersionTable-row', v, selection)}
              data-version={v.version}
              onClick={() => openVersion(actions, v)}
              tabIndex={0}
              onKeyDown={e => {
                if (e.key === 'Enter') {
                  openVersion(actions, v);
                }
              }}
            >
              <td className="cube-col-select">
                <SelectBox
                  v={v}
                  selection={selection}
                  model={model}
                  trans={trans}
                />
              </td>
              <td className="cube-col-version">
                <span className="cube-VersionNumber">v{v.version}</span>
                {v.archived && <ArchivedBadge trans={trans} />}
              </td>
              <td className="cube-col-aliases">
                {v.aliases.map(a => (
                  <AliasBadge key={a} alias={a} trans={trans} />
                ))}
              </td>
              {metrics.map(m => (
                <td key={m} className="cube-col-metric cube-num">
                  {m in (v.metrics ?? {}) ? formatMetric(v.metrics[m]) : '—'}
                </td>
              ))}
              <td className="cube-col-dim">
                <span className="cube-Flavor">{v.flavor}</span>
              </td>
              <td className="cube-col-dim">
                <RelativeTime value={v.created_at} />
              </td>
              <td className="cube-col-dim">{v.created_by}</td>
              <td className="cube-col-dim cube-num">
                {formatBytes(v.size_bytes)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** "Compare" for the ticked versions, under the versions. */
function CompareBar(
  props: IVersionRowsProps & { detail: ModelDetail }
): JSX.Element {
  const { detail, selection, model, actions, trans } = props;
  if (selection.length === 0) {
    return (
      <div className="cube-Hint cube-Muted">
        {trans.__('Tick two or more versions to compare them side by side.')}
      </div>
    );
  }
  return (
    <div className="cube-CompareBar">
      <button
        className="cube-Button cube-mod-primary cube-CompareButton"
        disabled={selection.length < 2}
        title={
          selection.length < 2
            ? trans.__('Tick one more version')
            : trans.__('Compare the ticked versions')
        }
        onClick={() =>
          actions.navigate({
            kind: 'compare',
            project: detail.project,
            name: detail.name,
            versions: selection
          })
        }
      >
        {selection.length < 2
          ? trans.__('Compare')
          : trans.__('Compare %1 versions', selection.length)}
      </button>
      <a
        href="#"
        onClick={e => {
          e.preventDefault();
          model.clearSelection();
        }}
      >
        {trans.__('Clear')}
      </a>
    </div>
  );
}

/* -------------------------------------------------------------------------- */
/* Version detail                                                             */
/* -------------------------------------------------------------------------- */

function VersionView(props: IViewProps): JSX.Element {
  const { state, actions, trans } = props;
  const route = state.route as Extract<ModelsRoute, { kind: 'version' }>;
  const v =
    state.version &&
    state.version.project === route.project &&
    state.version.model === route.name &&
    state.version.version === route.version
      ? state.version
      : null;
  const crumbs = [
    { label: trans.__('Models'), route: { kind: 'list' } as ModelsRoute },
    {
      label: route.name,
      route: {
        kind: 'model',
        project: route.project,
        name: route.name
      } as ModelsRoute
    },
    { label: `v${route.version}` }
  ];
  let content: JSX.Element;
  if (!v && state.error) {
    content = (
      <ErrorBox
        error={state.error}
        trans={trans}
        onRetry={actions.refresh}
        onBack={() => actions.navigate({ kind: 'list' })}
      />
    );
  } else if (!v) {
    content = <Loading trans={trans} />;
  } else {
    content = (
      <VersionDetailBody
        v={v}
        error={state.error}
        actions={actions}
        trans={trans}
      />
    );
  }
  return (
    <div className="cube-VersionView">
      <Breadcrumbs
        items={crumbs}
        actions={actions}
        trans={trans}
        tabRoute={route}
      />
      <div className="cube-Scroll">{content}</div>
    </div>
  );
}

function VersionDetailBody(props: {
  v: ModelVersion;
  error: IErrorInfo | null;
  actions: IModelsActions;
  trans: TranslationBundle;
}): JSX.Element {
  const { v, actions, trans } = props;
  const metrics = Object.entries(v.metrics ?? {});
  const params = Object.entries(v.params ?? {});
  const tags = Object.entries(v.tags ?? {});
  const lineage = v.lineage ?? {
    source: null,
    pipeline_run_id: null,
    training_job_id: null
  };
  const lineageRows: [string, React.ReactNode][] = [];
  if (lineage.source) {
    const source = lineage.source;
    lineageRows.push([
      trans.__('Source'),
      <span className="cube-Path">
        <a
          href="#"
          className="cube-Link cube-SourceLink"
          title={trans.__('Open %1', source)}
          onClick={e => {
            e.preventDefault();
            actions.openPath(source);
          }}
        >
          {source.split('/').pop()}
        </a>
        {source.includes('/') && (
          <span className="cube-Path-dir" title={source}>
            <bdi>{source.slice(0, source.lastIndexOf('/'))}</bdi>
          </span>
        )}
      </span>
    ]);
  }
  if (lineage.pipeline_run_id) {
    lineageRows.push([
      trans.__('Pipeline run'),
      <code>{lineage.pipeline_run_id}</code>
    ]);
  }
  if (lineage.training_job_id) {
    lineageRows.push([
      trans.__('Training job'),
      <code>{lineage.training_job_id}</code>
    ]);
  }
  const datasets = lineage.datasets ?? [];
  if (datasets.length) {
    lineageRows.push([
      trans.__('Datasets'),
      <span className="cube-LineageDatasets">
        {datasets.map((d, i) => (
          <React.Fragment key={i}>
            {i > 0 ? ', ' : null}
            <code className="cube-LineageDataset" title={d.path ?? undefined}>
              {lineageDatasetLabel(d)}
            </code>
          </React.Fragment>
        ))}
      </span>
    ]);
  }

  return (
    <div className="cube-VersionDetail" data-version={v.version}>
      {props.error && (
        <ErrorBox error={props.error} trans={trans} onRetry={actions.refresh} />
      )}
      <header className="cube-Header">
        <div className="cube-Header-title">
          <h2>
            {v.model} <span className="cube-VersionNumber">v{v.version}</span>
          </h2>
          {v.archived && <ArchivedBadge trans={trans} />}
        </div>
        <div className="cube-Header-meta cube-mod-dotted">
          <span className="cube-Flavor">{v.flavor}</span>
          <span>{formatBytes(v.size_bytes)}</span>
          <span>
            {trans.__('by %1', v.created_by)}{' '}
            <RelativeTime value={v.created_at} />
          </span>
        </div>
        {v.description && <p className="cube-Description">{v.description}</p>}
        <div className="cube-Aliases">
          {v.aliases.map(a => (
            <AliasBadge
              key={a}
              alias={a}
              trans={trans}
              onRemove={() => actions.removeAlias(v.project, v.model, a)}
            />
          ))}
        </div>
        <div className="cube-Actions">
          {actions.deploy && actions.canDeploy?.() && !v.archived && (
            <ToolButton
              icon={launchIcon}
              label={trans.__('Deploy')}
              title={trans.__('Serve this version as an inference service')}
              className="cube-DeployButton"
              onClick={() => actions.deploy!(v)}
            />
          )}
          <ToolButton
            icon={tagIcon}
            label={trans.__('Set alias')}
            title={trans.__('Point an alias (e.g. production) at this version')}
            onClick={() => actions.setAlias(v)}
          />
          <a
            className="cube-ToolButton"
            href={actions.downloadUrl(v)}
            download
            title={trans.__('Download the artifact')}
          >
            <downloadIcon.react tag="span" className="cube-ToolButton-icon" />
            <span className="cube-ToolButton-label">
              {trans.__('Download')}
            </span>
          </a>
          <ToolButton
            label={v.archived ? trans.__('Unarchive') : trans.__('Archive')}
            onClick={() => actions.setVersionArchived(v, !v.archived)}
          />
          <ToolButton
            icon={deleteIcon}
            label={trans.__('Delete')}
            title={trans.__('Delete this version and its artifact')}
            danger
            onClick={() => actions.deleteVersion(v)}
          />
        </div>
      </header>

      <Section title={trans.__('Metrics')} className="cube-Metrics">
        <KeyValueTable
          rows={metrics.map(([k, val]) => [
            k,
            <span className="cube-num">{formatMetric(val)}</span>
          ])}
          empty={trans.__('No metrics recorded.')}
        />
      </Section>

      <Section title={trans.__('Parameters')} className="cube-Params">
        <KeyValueTable
          rows={params.map(([k, val]) => [k, <ValueCell value={val} />])}
          empty={trans.__('No parameters recorded.')}
        />
      </Section>

      {tags.length > 0 && (
        <Section title={trans.__('Tags')} className="cube-Tags">
          <div className="cube-TagList">
            {tags.map(([k, val]) => (
              <span key={k} className="cube-Tag">
                <span className="cube-Tag-key">{k}</span>
                <span className="cube-Tag-value">{formatValue(val)}</span>
              </span>
            ))}
          </div>
        </Section>
      )}

      <Section title={trans.__('Lineage')} className="cube-Lineage">
        <KeyValueTable
          rows={lineageRows}
          empty={trans.__('No lineage recorded.')}
        />
      </Section>

      <Section title={trans.__('Artifact')} className="cube-Artifact">
        <KeyValueTable
          rows={[
            [trans.__('Name'), <code>{v.artifact_name}</code>],
            [trans.__('Format'), v.format],
            [
              trans.__('Size'),
              <span title={trans.__('%1 bytes', v.size_bytes)}>
                {formatBytes(v.size_bytes)}
              </span>
            ],
            [
              trans.__('Checksum'),
              <span className="cube-Checksum">
                <code title={v.checksum}>{shortChecksum(v.checksum)}</code>
                {v.checksum && (
                  <button
                    className="cube-IconButton"
                    title={trans.__('Copy checksum')}
                    aria-label={trans.__('Copy checksum')}
                    onClick={() =>
                      actions.copy(v.checksum, trans.__('Checksum'))
                    }
                  >
                    <copyIcon.react tag="span" />
                  </button>
                )}
              </span>
            ],
            [trans.__('Project'), v.project]
          ]}
          empty=""
        />
      </Section>
    </div>
  );
}

function ValueCell(props: { value: JSONValue }): JSX.Element {
  const text = formatValue(props.value);
  return (
    <span className="cube-Value" title={text}>
      {text}
    </span>
  );
}

/* -------------------------------------------------------------------------- */
/* Compare                                                                    */
/* -------------------------------------------------------------------------- */

function CompareView(props: IViewProps): JSX.Element {
  const { state, actions, trans } = props;
  const route = state.route as Extract<ModelsRoute, { kind: 'compare' }>;
  const result = state.compare;
  const crumbs = [
    { label: trans.__('Models'), route: { kind: 'list' } as ModelsRoute },
    {
      label: route.name,
      route: {
        kind: 'model',
        project: route.project,
        name: route.name
      } as ModelsRoute
    },
    { label: trans.__('Compare') }
  ];
  let content: JSX.Element;
  if (!result && state.error) {
    content = (
      <ErrorBox
        error={state.error}
        trans={trans}
        onRetry={actions.refresh}
        onBack={() =>
          actions.navigate({
            kind: 'model',
            project: route.project,
            name: route.name
          })
        }
      />
    );
  } else if (!result) {
    content = <Loading trans={trans} />;
  } else {
    const versions = result.versions;
    const paramDiffers = (name: string) =>
      new Set(versions.map(v => JSON.stringify(v.params?.[name] ?? null)))
        .size > 1;
    // Narrow (the sidebar, a split tab): each row's name sits on a line of
    // its own above the values, so every version column gets the width.
    const stacked = props.compact;
    const span = versions.length + (stacked ? 0 : 1);
    const rowName = (key: string, name: string, className = '') =>
      stacked ? (
        <tr key={`n-${key}`} className={`cube-CompareTable-name ${className}`}>
          <th colSpan={span} scope="colgroup" title={name}>
            {name}
          </th>
        </tr>
      ) : null;
    content = (
      <>
        {state.error && (
          <ErrorBox
            error={state.error}
            trans={trans}
            onRetry={actions.refresh}
          />
        )}
        <div className="cube-TableWrap">
          <table
            className={`cube-Table cube-CompareTable${stacked ? ' cube-mod-stacked' : ''}`}
          >
            <thead>
              <tr>
                {stacked ? null : <th />}
                {versions.map(v => (
                  <th key={v.version} className="cube-num">
                    <a
                      href="#"
                      className="cube-Link"
                      onClick={e => {
                        e.preventDefault();
                        actions.navigate({
                          kind: 'version',
                          project: v.project,
                          name: v.model,
                          version: v.version
                        });
                      }}
                    >
                      v{v.version}
                    </a>
                    {v.aliases.length > 0 && (
                      <div className="cube-CompareTable-aliases">
                        {v.aliases.join(', ')}
                      </div>
                    )}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              <tr className="cube-CompareTable-group">
                <th colSpan={span}>{trans.__('Metrics')}</th>
              </tr>
              {result.metrics.length === 0 && (
                <tr>
                  <td colSpan={span} className="cube-Muted">
                    {trans.__('No metrics recorded.')}
                  </td>
                </tr>
              )}
              {result.metrics.map(name => {
                const values = versions.map(v => v.metrics?.[name]);
                const best = bestIndex(name, values);
                return (
                  <React.Fragment key={`m-${name}`}>
                    {rowName(`m-${name}`, name)}
                    <tr data-metric={name}>
                      {stacked ? null : (
                        <th scope="row" title={name}>
                          {name}
                        </th>
                      )}
                      {values.map((value, i) => (
                        <td
                          key={i}
                          className={`cube-num${
                            best === i ? ' cube-mod-best' : ''
                          }`}
                          title={best === i ? trans.__('Best') : undefined}
                        >
                          {formatMetric(value)}
                        </td>
                      ))}
                    </tr>
                  </React.Fragment>
                );
              })}
              {result.params.length > 0 && (
                <tr className="cube-CompareTable-group">
                  <th colSpan={span}>{trans.__('Parameters')}</th>
                </tr>
              )}
              {result.params.map(name => {
                const differs = paramDiffers(name) ? 'cube-mod-differs' : '';
                return (
                  <React.Fragment key={`p-${name}`}>
                    {rowName(`p-${name}`, name, differs)}
                    <tr data-param={name} className={differs}>
                      {stacked ? null : (
                        <th scope="row" title={name}>
                          {name}
                        </th>
                      )}
                      {versions.map(v => (
                        <td key={v.version}>
                          <ValueCell value={v.params?.[name] ?? null} />
                        </td>
                      ))}
                    </tr>
                  </React.Fragment>
                );
              })}
            </tbody>
          </table>
        </div>
        <div className="cube-Hint cube-Muted">
          {trans.__(
            'Best values are highlighted (lower is better for loss, error and latency metrics); differing parameters are marked.'
          )}
        </div>
      </>
    );
  }
  return (
    <div className="cube-CompareView">
      <Breadcrumbs items={crumbs} actions={actions} trans={trans} />
      <div className="cube-Scroll">{content}</div>
    </div>
  );
}
