/**
 * Client-side validation rules shared with the server.
 */

/** Translates a message (a `TranslationBundle.__` or the identity). */
export interface ITrans {
  __(msgid: string, ...args: any[]): string;
}

/**
 * The English text with `%1`, `%2`... filled in: what a check returns when no
 * translator is given (tests, code paths without a bundle).
 */
export const identity: ITrans = {
  __: (msgid: string, ...args: any[]) =>
    msgid.replace(/%(\d+)/g, (m, i) => String(args[Number(i) - 1] ?? m))
};

/** Model names: the same rule the server applies. */
export const MODEL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Alias names: the same rule the server applies. */
export const ALIAS_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/** Aliases the server keeps for itself. */
export const RESERVED_ALIASES = ['latest'];

/**
 * Check a model name.
 *
 * @returns null when valid, otherwise why not (translated with `trans`).
 */
export function validateModelName(
  name: string,
  trans: ITrans = identity
): string | null {
  if (!name) {
    return trans.__('A model name is required.');
  }
  if (name.length > 128) {
    return trans.__('A model name has at most 128 characters.');
  }
  if (!/^[A-Za-z0-9]/.test(name)) {
    return trans.__('A model name starts with a letter or a digit.');
  }
  if (!MODEL_NAME_PATTERN.test(name)) {
    return trans.__(
      'A model name may only contain letters, digits, ".", "_" and "-".'
    );
  }
  return null;
}

export function isValidModelName(name: string): boolean {
  return MODEL_NAME_PATTERN.test(name);
}

/**
 * Check an alias (e.g. "production", "staging").
 *
 * @returns null when valid, otherwise why not (translated with `trans`).
 */
export function validateAlias(
  alias: string,
  trans: ITrans = identity
): string | null {
  if (!alias) {
    return trans.__('An alias is required.');
  }
  if (RESERVED_ALIASES.includes(alias)) {
    return trans.__(
      '"%1" is reserved: it always means the newest version.',
      alias
    );
  }
  if (!/^[A-Za-z]/.test(alias)) {
    return trans.__('An alias starts with a letter (numbers name versions).');
  }
  if (!ALIAS_PATTERN.test(alias)) {
    return trans.__(
      'An alias may only contain letters, digits, "_" and "-" (at most 64 characters), e.g. production.'
    );
  }
  return null;
}

/**
 * A name the server's rule allows (models, schedules, ...) made from any
 * text: characters the rule does not allow become "-", e.g. "Two notebooks"
 * -> "Two-notebooks"; `fallback` when nothing is left.
 */
export function suggestName(text: string, fallback = 'model'): string {
  const name = text
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .replace(/-{2,}/g, '-')
    .slice(0, 128)
    .replace(/[-.]+$/, '');
  return name || fallback;
}

/**
 * A model name suggested from a file or folder path: the base name without
 * its (last) extension, with characters the rule does not allow replaced.
 */
export function suggestModelName(path: string): string {
  const base = path.replace(/\/+$/, '').split('/').pop() ?? '';
  const dot = base.lastIndexOf('.');
  return suggestName(dot > 0 ? base.slice(0, dot) : base);
}
