/**
 * Chat with language models (cube_lab/handlers/chat.py, docs/chat.md): the
 * project's chat targets, conversations, a message streamed back as
 * server-sent events, feedback on answers, and the export of that feedback as
 * preference data (a dataset version of prompt / chosen / rejected).
 */
import { ServerConnection } from '@jupyterlab/services';

import { postForEvents } from './eventstream';
import { encodePath, queryString, requestAPI } from './request';

/** A running LLM deployment of the project, as the chat targets list says. */
export interface ChatTargetInfo {
  deployment: string;
  /** The model name to ask (the deployment's model). */
  model: string;
  /** What its `/v1/models` lists, adapters included. */
  models: string[];
  runtime: string;
  status: string;
  endpoint: string | null;
}

/** Where a conversation's messages go. */
export type ChatTarget =
  | { deployment: string; model?: string }
  | { base_url: string; model: string; api_key?: string };

export interface ChatParams {
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  seed?: number;
  stop?: string | string[];
}

export interface Conversation {
  id: number;
  project: string;
  title: string;
  target: ChatTarget;
  system: string;
  params: ChatParams;
  owner?: string;
  created_at: string;
  updated_at: string;
  message_count: number;
}

export type ChatRating = 'up' | 'down' | null;

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatMessage {
  id: number;
  role: 'user' | 'assistant';
  content: string;
  turn: number;
  active: boolean;
  status: 'complete' | 'stopped' | 'error' | string;
  rating: ChatRating;
  edited: string | null;
  params: ChatParams | null;
  usage: ChatUsage | null;
  model: string | null;
  error?: string | null;
  created_at: string;
}

export interface ConversationWithMessages extends Conversation {
  messages: ChatMessage[];
}

export interface NewConversation {
  project: string;
  target: ChatTarget;
  title?: string;
  system?: string;
  params?: ChatParams;
}

export type ConversationChanges = Partial<
  Pick<Conversation, 'title' | 'target' | 'system' | 'params'>
>;

/** One event of a message's stream. */
export type ChatStreamEvent =
  | { type: 'user'; message: ChatMessage }
  | { type: 'delta'; delta: string }
  | {
      type: 'done';
      message: ChatMessage;
      usage: ChatUsage | null;
    }
  | {
      type: 'error';
      error: string;
      detail: string;
      message: ChatMessage | null;
    };

/** What a message send asks: a new user message, or a new answer for one. */
export type ChatSend =
  | { content: string; params?: ChatParams }
  | { regenerate: number; params?: ChatParams };

export interface PreferenceExport {
  /** The dataset's project. */
  project?: string;
  dataset: string;
  version: number;
  ref: string;
  pairs: number;
  conversations: number;
  skipped: Record<string, number>;
}

const CHAT = 'chat';

export function listChatTargets(
  project: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ targets: ChatTargetInfo[] }>(
    encodePath(CHAT, 'targets') + queryString({ project }),
    {},
    settings
  );
}

export function listConversations(
  project: string,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<{ conversations: Conversation[] }>(
    encodePath(CHAT, 'conversations') + queryString({ project }),
    {},
    settings
  );
}

export function createConversation(
  body: NewConversation,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<Conversation>(
    encodePath(CHAT, 'conversations'),
    { method: 'POST', body },
    settings
  );
}

export function getConversation(
  id: number,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<ConversationWithMessages>(
    encodePath(CHAT, 'conversations', id),
    {},
    settings
  );
}

export function updateConversation(
  id: number,
  body: ConversationChanges,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<Conversation>(
    encodePath(CHAT, 'conversations', id),
    { method: 'PATCH', body },
    settings
  );
}

export function deleteConversation(
  id: number,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<void>(
    encodePath(CHAT, 'conversations', id),
    { method: 'DELETE' },
    settings
  );
}

export function setMessageFeedback(
  conversation: number,
  message: number,
  body: { rating: ChatRating; edited?: string | null },
  settings?: ServerConnection.ISettings
) {
  return requestAPI<ChatMessage>(
    encodePath(
      CHAT,
      'conversations',
      conversation,
      'messages',
      message,
      'feedback'
    ),
    { method: 'PUT', body },
    settings
  );
}

/** Show another answer of its turn instead of the active one. */
export function activateMessage(
  conversation: number,
  message: number,
  settings?: ServerConnection.ISettings
) {
  return requestAPI<ConversationWithMessages>(
    encodePath(
      CHAT,
      'conversations',
      conversation,
      'messages',
      message,
      'activate'
    ),
    { method: 'POST' },
    settings
  );
}

export function exportPreferences(
  body: { project: string; dataset: string; conversation_ids?: number[] },
  settings?: ServerConnection.ISettings
) {
  return requestAPI<PreferenceExport>(
    encodePath(CHAT, 'exports'),
    { method: 'POST', body },
    settings
  );
}

/** Read one stream event's data (`null` for what is no chat event). */
export function parseChatEvent(data: string): ChatStreamEvent | null {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object') {
    return null;
  }
  const v = value as Record<string, unknown>;
  switch (v.type) {
    case 'user':
      return v.message
        ? { type: 'user', message: v.message as ChatMessage }
        : null;
    case 'delta':
      return typeof v.delta === 'string'
        ? { type: 'delta', delta: v.delta }
        : null;
    case 'done':
      return v.message
        ? {
            type: 'done',
            message: v.message as ChatMessage,
            usage: (v.usage as ChatUsage | null | undefined) ?? null
          }
        : null;
    case 'error':
      return {
        type: 'error',
        error: typeof v.error === 'string' ? v.error : String(v.error ?? ''),
        detail: typeof v.detail === 'string' ? v.detail : '',
        message: (v.message as ChatMessage | null | undefined) ?? null
      };
    default:
      return null;
  }
}

/**
 * Send a message (or ask a new answer) and read its stream: the events, in
 * order, as they arrive. Abort `signal` to stop the answer (the server keeps
 * what it had, as a `stopped` answer).
 *
 * @throws CubeApiError when the server refuses before streaming (400, 404,
 *   409, 424: the target failed).
 */
export async function* streamChatMessage(
  conversation: number,
  body: ChatSend,
  signal?: AbortSignal,
  settings?: ServerConnection.ISettings
): AsyncGenerator<ChatStreamEvent, void, undefined> {
  yield* postForEvents(
    encodePath(CHAT, 'conversations', conversation, 'messages'),
    body,
    parseChatEvent,
    signal,
    settings
  );
}
