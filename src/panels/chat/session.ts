/**
 * One conversation as a Chat pane holds it: its messages, the answer being
 * streamed (text so far, deltas received), Stop (the fetch aborted; the server
 * keeps the partial answer), Regenerate, feedback and the answer shown per
 * turn. The view renders it and re-renders on `changed`.
 */
import { ISignal, Signal } from '@lumino/signaling';

import {
  activateMessage,
  ChatMessage,
  ChatParams,
  ChatRating,
  ChatSend,
  ChatTarget,
  Conversation,
  ConversationWithMessages,
  createConversation,
  describeError,
  getConversation,
  setMessageFeedback,
  streamChatMessage,
  updateConversation
} from '../../api';
import { sameParams, sameTarget, titleFrom } from './logic';

/** What the settings say a conversation should use from its next message on. */
export interface IChatSettings {
  target: ChatTarget;
  system: string;
  params: ChatParams;
}

/** The answer arriving now. */
export interface IStreaming {
  /** The user's text while the server has not saved it yet (null on regenerate). */
  pendingUser: string | null;
  /** The answer regenerated (its turn), or null for a new turn. */
  regenerateOf: ChatMessage | null;
  text: string;
  /** How many deltas came: more than one is a streamed answer. */
  deltas: number;
}

type ErrorText = { error: string; detail: string };

/** How long after a Stop the saved (stopped) answer is read back, in ms. */
const RELOAD_AFTER_STOP_MS = [300, 1000, 2500];

export class ChatSession {
  constructor(project: string) {
    this.project = project;
  }

  readonly project: string;

  get conversation(): ConversationWithMessages | null {
    return this._conversation;
  }

  get streaming(): IStreaming | null {
    return this._streaming;
  }

  get error(): ErrorText | null {
    return this._error;
  }

  /** Emitted on every change (messages, stream, error). */
  get changed(): ISignal<ChatSession, void> {
    return this._changed;
  }

  /** Emitted when the conversation itself was made or changed (for the list). */
  get saved(): ISignal<ChatSession, Conversation> {
    return this._saved;
  }

  dismissError(): void {
    this._error = null;
    this._changed.emit();
  }

  /** Show conversation `id`. */
  async load(id: number): Promise<void> {
    this.stop();
    try {
      this._conversation = await getConversation(id);
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
    }
    this._changed.emit();
  }

  /** Start afresh: the next message makes a new conversation. */
  clear(): void {
    this.stop();
    this._conversation = null;
    this._error = null;
    this._changed.emit();
  }

  /** Send `content` as the next user message; the answer streams in. */
  async send(content: string, settings: IChatSettings): Promise<void> {
    if (this._streaming || !content.trim()) {
      return;
    }
    this._streaming = {
      pendingUser: content,
      regenerateOf: null,
      text: '',
      deltas: 0
    };
    this._error = null;
    this._changed.emit();
    const id = await this._ensure(settings, content);
    if (id === null) {
      this._streaming = null;
      this._changed.emit();
      return;
    }
    await this._stream(id, { content });
  }

  /** Ask a new answer for the last turn (its shown answer stays as an alternative). */
  async regenerate(
    answer: ChatMessage,
    settings: IChatSettings
  ): Promise<void> {
    if (this._streaming || !this._conversation) {
      return;
    }
    this._streaming = {
      pendingUser: null,
      regenerateOf: answer,
      text: '',
      deltas: 0
    };
    this._error = null;
    this._changed.emit();
    const id = await this._ensure(settings, '');
    if (id === null) {
      this._streaming = null;
      this._changed.emit();
      return;
    }
    await this._stream(id, { regenerate: answer.id });
  }

  /** Stop the answer streaming now (the server keeps what came as `stopped`). */
  stop(): void {
    if (this._abort) {
      this._abort.abort();
      this._abort = null;
    }
  }

  /** Thumbs up / down (null: none) and, when given, the corrected answer. */
  async feedback(
    message: ChatMessage,
    rating: ChatRating,
    edited?: string | null
  ): Promise<void> {
    const conversation = this._conversation;
    if (!conversation) {
      return;
    }
    try {
      const body: { rating: ChatRating; edited?: string | null } = { rating };
      if (edited !== undefined) {
        body.edited = edited;
      }
      const changed = await setMessageFeedback(
        conversation.id,
        message.id,
        body
      );
      this._replace(changed);
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
    }
    this._changed.emit();
  }

  /** Show another answer of its turn. */
  async activate(message: ChatMessage): Promise<void> {
    const conversation = this._conversation;
    if (!conversation || this._streaming) {
      return;
    }
    try {
      this._conversation = await activateMessage(conversation.id, message.id);
      this._error = null;
    } catch (err) {
      this._error = describeError(err);
    }
    this._changed.emit();
  }

  dispose(): void {
    this.stop();
    Signal.clearData(this);
  }

  /** The conversation's id, made or brought up to date with `settings`; null on an error. */
  private async _ensure(
    settings: IChatSettings,
    firstText: string
  ): Promise<number | null> {
    try {
      const current = this._conversation;
      if (!current) {
        const made = await createConversation({
          project: this.project,
          target: settings.target,
          system: settings.system,
          params: settings.params,
          title: titleFrom(firstText) || undefined
        });
        this._conversation = { ...made, messages: [] };
        this._saved.emit(made);
        return made.id;
      }
      const changes: Record<string, unknown> = {};
      if (!sameTarget(settings.target, current.target)) {
        changes.target = settings.target;
      }
      if (settings.system !== current.system) {
        changes.system = settings.system;
      }
      if (!sameParams(settings.params, current.params)) {
        changes.params = settings.params;
      }
      if (Object.keys(changes).length) {
        const changed = await updateConversation(current.id, changes);
        // the PATCH answer carries no messages (or `"messages": null`): keep ours
        this._conversation = {
          ...current,
          ...changed,
          messages: current.messages
        };
        this._saved.emit(changed);
      }
      return current.id;
    } catch (err) {
      this._error = describeError(err);
      return null;
    }
  }

  private async _stream(id: number, body: ChatSend): Promise<void> {
    const abort = new AbortController();
    this._abort = abort;
    let finished = false;
    try {
      for await (const event of streamChatMessage(id, body, abort.signal)) {
        const s = this._streaming;
        if (!s) {
          break;
        }
        if (event.type === 'user') {
          this._append(event.message);
          s.pendingUser = null;
        } else if (event.type === 'delta') {
          s.text += event.delta;
          s.deltas += 1;
        } else if (event.type === 'done') {
          this._answer(event.message);
          finished = true;
        } else if (event.type === 'error') {
          if (event.message) {
            this._answer(event.message);
          }
          this._error = { error: event.error, detail: event.detail };
          finished = true;
        }
        this._changed.emit();
      }
    } catch (err) {
      if (!abort.signal.aborted) {
        this._error = describeError(err);
      }
    } finally {
      if (this._abort === abort) {
        this._abort = null;
      }
      const stopped = abort.signal.aborted && !finished;
      const pendingUser = this._streaming?.pendingUser ?? null;
      this._streaming = null;
      this._changed.emit();
      if (stopped || (!finished && pendingUser === null)) {
        void this._readBack(id);
      }
    }
    const conversation = this._conversation;
    if (conversation && conversation.id === id) {
      this._saved.emit(conversation);
    }
  }

  /** After a Stop: read the conversation back until the stopped answer is in it. */
  private async _readBack(id: number): Promise<void> {
    const before = this._conversation?.messages.length ?? 0;
    for (const wait of RELOAD_AFTER_STOP_MS) {
      await new Promise(resolve => setTimeout(resolve, wait));
      if (this._conversation?.id !== id || this._streaming) {
        return;
      }
      try {
        const fresh = await getConversation(id);
        this._conversation = fresh;
        this._changed.emit();
        if (fresh.messages.length > before) {
          return;
        }
      } catch {
        return;
      }
    }
  }

  private _append(message: ChatMessage): void {
    const c = this._conversation;
    if (c) {
      this._conversation = {
        ...c,
        messages: [...c.messages, message],
        message_count: c.message_count + 1
      };
    }
  }

  /** A saved answer: the active one of its turn. */
  private _answer(message: ChatMessage): void {
    const c = this._conversation;
    if (!c) {
      return;
    }
    const messages = c.messages.map(m =>
      m.role === 'assistant' && m.turn === message.turn && message.active
        ? { ...m, active: false }
        : m
    );
    this._conversation = {
      ...c,
      messages: [...messages.filter(m => m.id !== message.id), message],
      message_count: c.message_count + 1
    };
  }

  private _replace(message: ChatMessage): void {
    const c = this._conversation;
    if (c) {
      this._conversation = {
        ...c,
        messages: c.messages.map(m => (m.id === message.id ? message : m))
      };
    }
  }

  private _conversation: ConversationWithMessages | null = null;
  private _streaming: IStreaming | null = null;
  private _error: ErrorText | null = null;
  private _abort: AbortController | null = null;
  private _changed = new Signal<ChatSession, void>(this);
  private _saved = new Signal<ChatSession, Conversation>(this);
}
