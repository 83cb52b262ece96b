/**
 * JupyterLab's current language, for what a panel's own translator does not cover: dates
 * and numbers formatted by `Intl`, the REST client's fallback messages, and the
 * `Accept-Language` it sends, so the server's error messages come back in the same language
 * (cube_lab/locale/messages.py).
 */

import {
  ITranslator,
  nullTranslator,
  TranslationBundle
} from '@jupyterlab/translation';

let current: string | null = null;
let bundle: TranslationBundle = nullTranslator.load('cube_lab');

/** Follow JupyterLab's translator: its language (e.g. "zh-CN") and cube-lab's bundle. */
export function setUiTranslator(translator: ITranslator): void {
  const code = translator.languageCode;
  current = code && code !== 'default' ? code.replace('_', '-') : null;
  bundle = translator.load('cube_lab');
}

/** The UI's language: JupyterLab's, else the page's `<html lang>`, else "en". */
export function uiLanguage(): string {
  if (current) {
    return current;
  }
  if (typeof document !== 'undefined' && document.documentElement.lang) {
    return document.documentElement.lang;
  }
  return 'en';
}

/** cube-lab's translation bundle in JupyterLab's language (English before the app starts). */
export function uiTrans(): TranslationBundle {
  return bundle;
}
