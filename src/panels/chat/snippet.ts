/**
 * "Copy as code": the Python `openai` snippet that sends the current
 * conversation to the current target, with the same parameters.
 */
import type { ChatParams } from '../../api';

export interface ISnippetOptions {
  /** OpenAI's base URL (ends before `/chat/completions`), e.g. `http://host:port/v1`. */
  baseUrl: string;
  model: string;
  /** The environment variable holding the API key (the key itself is never written). */
  keyVariable: string;
  messages: { role: string; content: string }[];
  params: ChatParams;
}

/** A Python string literal (JSON's escapes are Python's too). */
export function pyString(text: string): string {
  return JSON.stringify(text);
}

/** A Python literal of a JSON-like value (strings, numbers, booleans, lists). */
export function pyValue(value: unknown): string {
  if (value === null || value === undefined) {
    return 'None';
  }
  if (typeof value === 'boolean') {
    return value ? 'True' : 'False';
  }
  if (typeof value === 'string') {
    return pyString(value);
  }
  if (Array.isArray(value)) {
    return `[${value.map(pyValue).join(', ')}]`;
  }
  return String(value);
}

const PARAM_ORDER: (keyof ChatParams)[] = [
  'temperature',
  'top_p',
  'max_tokens',
  'seed',
  'stop'
];

/** The snippet: a client, the messages, and a streamed completion printed as it comes. */
export function openaiSnippet(options: ISnippetOptions): string {
  const lines: string[] = [
    'import os',
    '',
    'from openai import OpenAI',
    '',
    'client = OpenAI(',
    `    base_url=${pyString(options.baseUrl)},`,
    `    api_key=os.environ.get(${pyString(options.keyVariable)}, "none"),`,
    ')',
    'messages = ['
  ];
  for (const m of options.messages) {
    lines.push(
      `    {"role": ${pyString(m.role)}, "content": ${pyString(m.content)}},`
    );
  }
  lines.push(']');
  lines.push('stream = client.chat.completions.create(');
  lines.push(`    model=${pyString(options.model)},`);
  lines.push('    messages=messages,');
  for (const key of PARAM_ORDER) {
    const value = options.params[key];
    if (value !== undefined) {
      lines.push(`    ${key}=${pyValue(value)},`);
    }
  }
  lines.push('    stream=True,');
  lines.push(')');
  lines.push('for chunk in stream:');
  lines.push('    if chunk.choices:');
  lines.push(
    '        print(chunk.choices[0].delta.content or "", end="", flush=True)'
  );
  lines.push('print()');
  return lines.join('\n') + '\n';
}

/** OpenAI's base URL of a deployment's endpoint. */
export function deploymentBaseUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1`;
}
