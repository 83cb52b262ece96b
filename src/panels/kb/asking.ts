/**
 * The knowledge base view's "Ask": one question at a time, answered as it
 * streams (the citations first, then the text as it comes; Stop aborts).
 * The asking is the Chat panel's (`KbChatSession`, one stream client and one
 * way of reading its events); here each question starts afresh, without the
 * previous one as history, and replaces the answer shown.
 */
import type { ISignal } from '@lumino/signaling';

import type { ChatTarget } from '../../api';
import { IKbTurn, KbChatSession } from '../chat/kbchat';

export class KbAsk {
  constructor(
    readonly project: string,
    readonly name: string
  ) {
    this._session = new KbChatSession(project);
  }

  /** Emitted as the answer streams in, and when it ends. */
  get changed(): ISignal<KbChatSession, void> {
    return this._session.changed;
  }

  /** The question asked last and what came back of it so far. */
  get turn(): IKbTurn | null {
    const turns = this._session.turns;
    return turns.length ? turns[turns.length - 1] : null;
  }

  /** True while an answer streams in. */
  get busy(): boolean {
    return this._session.busy;
  }

  /** Ask `query` of the knowledge base through `target`; resolves when the answer ended. */
  async ask(query: string, target: ChatTarget): Promise<void> {
    if (this.busy || !query.trim()) {
      return;
    }
    this._session.clear(); // a question of its own, not a conversation
    await this._session.ask({
      kb: this.name,
      query,
      target,
      system: '',
      params: {}
    });
  }

  /** Stop the answer streaming in (what came so far stays, marked stopped). */
  stop(): void {
    this._session.stop();
  }

  /** Abort what is asked (the view closed). */
  dispose(): void {
    this._session.clear();
  }

  private _session: KbChatSession;
}
