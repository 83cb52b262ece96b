/**
 * The Chat panel's pure logic: the target picker's values, the parameters
 * form read and checked, a conversation's messages as turns (the shown answer
 * and its alternatives), the context sent to a model, titles.
 */
import type {
  ChatMessage,
  ChatParams,
  ChatTarget,
  ChatTargetInfo,
  Conversation
} from '../../api';

/** The picker's value for "any OpenAI-compatible server". */
export const URL_TARGET = 'url';

/** A select value for a deployment target (and one of its models). */
export function targetValue(target: ChatTarget | null): string {
  if (!target) {
    return '';
  }
  if ('deployment' in target) {
    return target.model
      ? `deployment:${target.deployment}:${target.model}`
      : `deployment:${target.deployment}`;
  }
  return URL_TARGET;
}

/** The picker's options: each deployment, and each of its other models (adapters). */
export function targetOptions(
  targets: ChatTargetInfo[]
): { value: string; label: string }[] {
  const options: { value: string; label: string }[] = [];
  for (const t of targets) {
    options.push({
      value: targetValue({ deployment: t.deployment }),
      label: t.deployment
    });
    for (const m of t.models) {
      if (m !== t.model) {
        options.push({
          value: targetValue({ deployment: t.deployment, model: m }),
          label: `${t.deployment} · ${m}`
        });
      }
    }
  }
  return options;
}

/** The target a picker value names (`null` for the URL choice or none). */
export function targetFromValue(value: string): ChatTarget | null {
  if (!value.startsWith('deployment:')) {
    return null;
  }
  const rest = value.slice('deployment:'.length);
  const colon = rest.indexOf(':');
  return colon < 0
    ? { deployment: rest }
    : { deployment: rest.slice(0, colon), model: rest.slice(colon + 1) };
}

/** A short name of a target, for headers and compare columns. */
export function targetLabel(target: ChatTarget | null): string {
  if (!target) {
    return '';
  }
  if ('deployment' in target) {
    return target.model
      ? `${target.deployment} · ${target.model}`
      : target.deployment;
  }
  return target.model || target.base_url;
}

/** The parameters form, as typed (empty: the model's default). */
export interface IParamsForm {
  temperature: string;
  top_p: string;
  max_tokens: string;
}

/** What is wrong with a parameter: its bounds, and whether it must be whole. */
export interface IParamError {
  min: number;
  max: number;
  integer: boolean;
}

export function paramsToForm(
  params: ChatParams | null | undefined
): IParamsForm {
  const text = (v: number | undefined) => (v === undefined ? '' : String(v));
  return {
    temperature: text(params?.temperature),
    top_p: text(params?.top_p),
    max_tokens: text(params?.max_tokens)
  };
}

/**
 * Read the parameters form: the params to send, or what is wrong with each
 * field (message keys for the translator: `range` with its bounds).
 */
export function readParams(form: IParamsForm): {
  params: ChatParams;
  errors: Partial<Record<keyof IParamsForm, IParamError>>;
} {
  const params: ChatParams = {};
  const errors: Partial<Record<keyof IParamsForm, IParamError>> = {};
  const read = (
    key: keyof IParamsForm,
    min: number,
    max: number,
    integer: boolean,
    minOpen = false
  ) => {
    const raw = form[key].trim();
    if (raw === '') {
      return;
    }
    const n = Number(raw);
    const bad =
      !Number.isFinite(n) ||
      (integer && !Number.isInteger(n)) ||
      n > max ||
      (minOpen ? n <= min : n < min);
    if (bad) {
      errors[key] = { min, max, integer };
    } else {
      params[key] = n;
    }
  };
  read('temperature', 0, 2, false);
  read('top_p', 0, 1, false, true);
  read('max_tokens', 1, 32768, true);
  return { params, errors };
}

/** One turn as shown: the user's message and the active answer with its alternatives. */
export interface ITurn {
  turn: number;
  user: ChatMessage | null;
  /** The shown answer (null while none came yet). */
  answer: ChatMessage | null;
  /** Every answer of the turn, oldest first (the shown one among them). */
  answers: ChatMessage[];
}

/** A conversation's messages grouped by turn, in order. */
export function toTurns(messages: ChatMessage[]): ITurn[] {
  const byTurn = new Map<number, ITurn>();
  const sorted = [...messages].sort((a, b) => a.turn - b.turn || a.id - b.id);
  for (const m of sorted) {
    let t = byTurn.get(m.turn);
    if (!t) {
      t = { turn: m.turn, user: null, answer: null, answers: [] };
      byTurn.set(m.turn, t);
    }
    if (m.role === 'user') {
      t.user = m;
    } else {
      t.answers.push(m);
    }
  }
  for (const t of byTurn.values()) {
    const active = t.answers.find(a => a.active);
    t.answer = active ?? t.answers[t.answers.length - 1] ?? null;
  }
  return [...byTurn.values()].sort((a, b) => a.turn - b.turn);
}

/** What a model is told in this turn: the edited text when there is one. */
export function answerText(m: ChatMessage): string {
  return m.edited ?? m.content;
}

/** OpenAI messages of a conversation (system first), as later turns send them. */
export function contextMessages(
  system: string,
  turns: ITurn[],
  next = ''
): { role: string; content: string }[] {
  const out: { role: string; content: string }[] = [];
  if (system.trim()) {
    out.push({ role: 'system', content: system });
  }
  for (const t of turns) {
    if (t.user) {
      out.push({ role: 'user', content: t.user.content });
    }
    if (t.answer) {
      out.push({ role: 'assistant', content: answerText(t.answer) });
    }
  }
  if (next.trim()) {
    out.push({ role: 'user', content: next });
  }
  return out;
}

/** The answer Regenerate redoes: the last turn's shown answer (null when none). */
export function regenerable(turns: ITurn[]): ChatMessage | null {
  const last = turns[turns.length - 1];
  return last?.answer ?? null;
}

/** A title from the first message (the server's default until then). */
export function titleFrom(text: string, max = 48): string {
  const line = text.trim().split(/\s+/).join(' ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Conversations newest first, with `changed` in place of its old copy. */
export function upsertConversation(
  list: Conversation[],
  changed: Conversation
): Conversation[] {
  const rest = list.filter(c => c.id !== changed.id);
  return [changed, ...rest].sort((a, b) =>
    b.updated_at.localeCompare(a.updated_at)
  );
}

/** Is `a` the same target as `b` (an unchanged hidden key counts as the same)? */
export function sameTarget(a: ChatTarget, b: ChatTarget): boolean {
  if ('deployment' in a || 'deployment' in b) {
    return (
      'deployment' in a &&
      'deployment' in b &&
      a.deployment === b.deployment &&
      (a.model ?? '') === (b.model ?? '')
    );
  }
  return (
    a.base_url === b.base_url &&
    a.model === b.model &&
    (a.api_key === undefined || a.api_key === '***' || a.api_key === b.api_key)
  );
}

/** Are two params the same (keys in any order)? */
export function sameParams(a: ChatParams, b: ChatParams): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    const x = (a as Record<string, unknown>)[k];
    const y = (b as Record<string, unknown>)[k];
    if (JSON.stringify(x) !== JSON.stringify(y)) {
      return false;
    }
  }
  return true;
}
