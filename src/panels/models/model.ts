/**
 * State of a Models view: the current route, the filters and the data
 * fetched for them. Rendering lives in `view.tsx`, polling in `widget.tsx`.
 */
import { ISignal, Signal } from '@lumino/signaling';

import {
  compareVersions,
  CompareResult,
  CubeApiError,
  describeError,
  getModel,
  getVersion,
  listModels,
  ModelDetail,
  ModelList,
  ModelVersion,
  whoami,
  WhoAmI
} from '../../api';

export type ModelsRoute =
  | { kind: 'list' }
  | { kind: 'model'; project: string; name: string }
  | { kind: 'version'; project: string; name: string; version: number }
  | { kind: 'compare'; project: string; name: string; versions: number[] };

export interface IErrorInfo {
  error: string;
  detail: string;
  status: number;
}

export interface IModelsState {
  route: ModelsRoute;
  /** Free text search. */
  query: string;
  /** Project filter ('' = every project I am a member of). */
  project: string;
  includeArchived: boolean;
  /** How many models to ask for. */
  limit: number;
  whoami: WhoAmI | null;
  list: ModelList | null;
  model: ModelDetail | null;
  version: ModelVersion | null;
  compare: CompareResult | null;
  /** Versions ticked for comparison (of `route`'s model). */
  selection: number[];
  loading: boolean;
  error: IErrorInfo | null;
  lastUpdated: Date | null;
}

export const PAGE_SIZE = 50;

function initialState(route: ModelsRoute): IModelsState {
  return {
    route,
    query: '',
    project: '',
    includeArchived: false,
    limit: PAGE_SIZE,
    whoami: null,
    list: null,
    model: null,
    version: null,
    compare: null,
    selection: [],
    loading: false,
    error: null,
    lastUpdated: null
  };
}

/** Whether two routes point at the same model. */
export function sameModel(
  a: ModelsRoute,
  b: { project: string; name: string } | null
): boolean {
  return (
    !!b && a.kind !== 'list' && a.project === b.project && a.name === b.name
  );
}

export class ModelsModel {
  constructor(route: ModelsRoute = { kind: 'list' }) {
    this._state = initialState(route);
  }

  get state(): IModelsState {
    return this._state;
  }

  /** Emitted when the state changes. */
  get changed(): ISignal<ModelsModel, IModelsState> {
    return this._changed;
  }

  /** Emitted when the data must be fetched again (route or filter changed). */
  get invalidated(): ISignal<ModelsModel, void> {
    return this._invalidated;
  }

  /** Go to a route; data of another model is dropped. */
  navigate(route: ModelsRoute): void {
    const s = this._state;
    const patch: Partial<IModelsState> = { route, error: null };
    if (route.kind === 'list') {
      patch.selection = [];
    } else {
      if (!sameModel(route, s.model)) {
        patch.model = null;
        patch.selection = [];
      }
      if (
        route.kind === 'version' &&
        !(
          s.version &&
          sameModel(route, {
            project: s.version.project,
            name: s.version.model
          }) &&
          s.version.version === route.version
        )
      ) {
        patch.version = null;
      }
      if (route.kind === 'compare') {
        patch.compare = null;
      }
    }
    this._set(patch);
    this._invalidated.emit();
  }

  setQuery(query: string): void {
    if (query !== this._state.query) {
      this._set({ query, limit: PAGE_SIZE });
      this._invalidated.emit();
    }
  }

  setProject(project: string): void {
    if (project !== this._state.project) {
      this._set({ project, limit: PAGE_SIZE });
      this._invalidated.emit();
    }
  }

  setIncludeArchived(includeArchived: boolean): void {
    if (includeArchived !== this._state.includeArchived) {
      this._set({ includeArchived });
      this._invalidated.emit();
    }
  }

  showMore(): void {
    this._set({ limit: this._state.limit + PAGE_SIZE });
    this._invalidated.emit();
  }

  toggleSelected(version: number): void {
    const selection = this._state.selection.includes(version)
      ? this._state.selection.filter(v => v !== version)
      : [...this._state.selection, version].sort((a, b) => a - b);
    this._set({ selection });
  }

  clearSelection(): void {
    this._set({ selection: [] });
  }

  /** Forget who I am, so the next refresh asks again (projects may change). */
  resetIdentity(): void {
    this._state = { ...this._state, whoami: null };
  }

  /**
   * Fetch what the current route shows.
   *
   * Rejects on failure (after recording the error in the state) so a poll
   * can back off.
   */
  async refresh(): Promise<void> {
    const generation = ++this._generation;
    const s = this._state;
    const route = s.route;
    this._set({ loading: true });
    try {
      const patch: Partial<IModelsState> = {};
      const who = s.whoami ? Promise.resolve(s.whoami) : whoami();
      switch (route.kind) {
        case 'list': {
          const [me, list] = await Promise.all([
            who,
            listModels({
              q: s.query,
              project: s.project || undefined,
              includeArchived: s.includeArchived,
              limit: s.limit,
              offset: 0
            })
          ]);
          patch.whoami = me;
          patch.list = list;
          break;
        }
        case 'model': {
          const [me, model] = await Promise.all([
            who,
            getModel(route.project, route.name)
          ]);
          patch.whoami = me;
          patch.model = model;
          const known = new Set(model.versions.map(v => v.version));
          patch.selection = s.selection.filter(v => known.has(v));
          break;
        }
        case 'version': {
          const [me, model, version] = await Promise.all([
            who,
            getModel(route.project, route.name),
            getVersion(route.project, route.name, route.version)
          ]);
          patch.whoami = me;
          patch.model = model;
          patch.version = version;
          break;
        }
        case 'compare': {
          const [me, model, compare] = await Promise.all([
            who,
            getModel(route.project, route.name),
            compareVersions(route.project, route.name, route.versions)
          ]);
          patch.whoami = me;
          patch.model = model;
          patch.compare = compare;
          break;
        }
      }
      if (generation !== this._generation) {
        return;
      }
      this._set({
        ...patch,
        loading: false,
        error: null,
        lastUpdated: new Date()
      });
    } catch (reason) {
      if (generation !== this._generation) {
        return;
      }
      const { error, detail } = describeError(reason);
      const status = reason instanceof CubeApiError ? reason.status : 0;
      this._set({ loading: false, error: { error, detail, status } });
      throw reason;
    }
  }

  private _set(patch: Partial<IModelsState>): void {
    this._state = { ...this._state, ...patch };
    this._changed.emit(this._state);
  }

  private _state: IModelsState;
  private _generation = 0;
  private _changed = new Signal<ModelsModel, IModelsState>(this);
  private _invalidated = new Signal<ModelsModel, void>(this);
}
