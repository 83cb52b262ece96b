/**
 * A knowledge base as the Chat panel's target: its picker value, the turns
 * asked of it (each answer with its numbered citations), the history a next
 * question sends, and the session that asks (POST /kb/{project}/{name}/chat,
 * streamed: the citations first, then the answer as it comes) and can be
 * stopped. The answers live in the tab; feedback and export are
 * the deployments' conversations'.
 */
import { ISignal, Signal } from '@lumino/signaling';

import {
  ChatParams,
  ChatTarget,
  describeError,
  KbCitation,
  streamKnowledgeBaseChat
} from '../../api';
import type { IKbAnswerShown } from '../kb/answer';

/** Picker values of knowledge bases start with this. */
export const KB_PREFIX = 'kb:';

export function kbTargetValue(name: string): string {
  return KB_PREFIX + name;
}

/** The knowledge base a picker value names, or null. */
export function kbFromValue(value: string): string | null {
  return value.startsWith(KB_PREFIX) && value.length > KB_PREFIX.length
    ? value.slice(KB_PREFIX.length)
    : null;
}

export type KbTurnStatus = 'asking' | 'complete' | 'stopped' | 'error';

/** One question to the knowledge base and what came back. */
export interface IKbTurn {
  id: number;
  kb: string;
  query: string;
  status: KbTurnStatus;
  answer: IKbAnswerShown;
  /** Pieces of the answer received (1 for an answer in one piece). */
  deltas: number;
  error: { error: string; detail: string } | null;
}

/** The conversation so far as the endpoint's `history` (answered turns only). */
export function kbHistory(
  turns: IKbTurn[]
): { role: 'user' | 'assistant'; content: string }[] {
  const out: { role: 'user' | 'assistant'; content: string }[] = [];
  for (const t of turns) {
    if (t.status === 'complete' && t.answer.answered) {
      out.push({ role: 'user', content: t.query });
      out.push({ role: 'assistant', content: t.answer.answer });
    }
  }
  return out;
}

/** The citations of an answer, numbers ascending. */
export function sortedCitations(citations: KbCitation[]): KbCitation[] {
  return [...citations].sort((a, b) => a.number - b.number);
}

export interface IKbAsk {
  kb: string;
  query: string;
  target: ChatTarget;
  system: string;
  params: ChatParams;
}

/** The questions asked of knowledge bases in one pane, in order. */
export class KbChatSession {
  constructor(readonly project: string) {}

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get turns(): readonly IKbTurn[] {
    return this._turns;
  }

  /** True while a question is being answered. */
  get busy(): boolean {
    return this._turns.some(t => t.status === 'asking');
  }

  /** Ask `query`; the previous answered turns of this knowledge base go as history. */
  async ask(request: IKbAsk): Promise<void> {
    if (this.busy || !request.query.trim()) {
      return;
    }
    const history = kbHistory(this._turns.filter(t => t.kb === request.kb));
    const turn: IKbTurn = {
      id: ++this._next,
      kb: request.kb,
      query: request.query.trim(),
      status: 'asking',
      answer: {
        answer: '',
        citations: [],
        query: request.query,
        answered: true
      },
      deltas: 0,
      error: null
    };
    this._turns = [...this._turns, turn];
    this._changed.emit();
    const generation = this._generation;
    const abort = new AbortController();
    this._abort = abort;
    let text = '';
    try {
      const events = streamKnowledgeBaseChat(
        this.project,
        request.kb,
        {
          query: turn.query,
          target: request.target,
          history: history.length ? history : undefined,
          system: request.system.trim() || undefined,
          params: Object.keys(request.params).length
            ? request.params
            : undefined
        },
        abort.signal
      );
      for await (const event of events) {
        if (!this._asking(turn.id, generation)) {
          return; // stopped or cleared meanwhile
        }
        const current = this._turns.find(t => t.id === turn.id)!;
        if (event.event === 'citations') {
          this._update(turn.id, {
            answer: {
              ...current.answer,
              citations: sortedCitations(event.citations)
            }
          });
        } else if (event.event === 'delta') {
          text += event.text;
          this._update(turn.id, {
            deltas: current.deltas + 1,
            answer: { ...current.answer, answer: text }
          });
        } else if (event.event === 'done') {
          this._update(turn.id, {
            status: 'complete',
            deltas: Math.max(current.deltas, 1),
            answer: {
              answer: event.answer,
              citations: sortedCitations(event.citations),
              query: event.query,
              answered: event.answered,
              reason: event.reason
            }
          });
        } else {
          this._update(turn.id, {
            status: 'error',
            error: { error: event.error, detail: event.detail }
          });
        }
      }
    } catch (err) {
      if (this._asking(turn.id, generation)) {
        this._update(turn.id, { status: 'error', error: describeError(err) });
      }
    } finally {
      if (this._abort === abort) {
        this._abort = null;
      }
    }
  }

  /** Stop waiting for the answer being asked (kept as "stopped"). */
  stop(): void {
    const asking = this._turns.find(t => t.status === 'asking');
    if (asking) {
      this._update(asking.id, { status: 'stopped' });
      this._abort?.abort(); // the server closes the model's stream with it
    }
  }

  clear(): void {
    this._abort?.abort();
    this._generation++;
    this._turns = [];
    this._changed.emit();
  }

  private _asking(id: number, generation: number): boolean {
    return (
      generation === this._generation &&
      this._turns.find(t => t.id === id)?.status === 'asking'
    );
  }

  private _update(id: number, patch: Partial<IKbTurn>): void {
    this._turns = this._turns.map(t => (t.id === id ? { ...t, ...patch } : t));
    this._changed.emit();
  }

  private _turns: IKbTurn[] = [];
  private _abort: AbortController | null = null;
  private _next = 0;
  private _generation = 0;
  private _changed = new Signal<this, void>(this);
}
