/**
 * A pane's settings: the target (a deployment of the project, or any
 * OpenAI-compatible URL with its model and key), and, for the main pane, the
 * system prompt and the sampling parameters. They apply from the next message.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { ChatTargetInfo } from '../../api';
import { Field } from '../field';
import { kbFromValue, kbTargetValue } from './kbchat';
import { IParamError, IParamsForm, targetOptions, URL_TARGET } from './logic';

/** The target as the picker edits it. */
export interface ITargetForm {
  /** A deployment's picker value, `URL_TARGET`, or a knowledge base's (`kb:NAME`). */
  choice: string;
  /** For a knowledge base: who answers (a deployment's picker value or `URL_TARGET`). */
  answerer: string;
  baseUrl: string;
  model: string;
  apiKey: string;
}

export function TargetPicker(props: {
  form: ITargetForm;
  targets: ChatTargetInfo[];
  /** The project's knowledge bases (none: not offered). */
  kbs?: string[];
  trans: TranslationBundle;
  name: string;
  label: string;
  disabled: boolean;
  onChange: (changes: Partial<ITargetForm>) => void;
}): JSX.Element {
  const { form, trans } = props;
  const options = targetOptions(props.targets);
  const kbs = props.kbs ?? [];
  const kb = kbFromValue(form.choice);
  const url =
    form.choice === URL_TARGET || (kb !== null && form.answerer === URL_TARGET);
  return (
    <div className="cube-ChatTarget">
      <Field label={props.label} name={props.name}>
        <select
          className="cube-TField-input"
          name={props.name}
          value={form.choice}
          disabled={props.disabled}
          onChange={e => props.onChange({ choice: e.target.value })}
        >
          {form.choice === '' ? (
            <option value="">{trans.__('Choose a target…')}</option>
          ) : null}
          {options.map(o => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
          <option value={URL_TARGET}>
            {trans.__('OpenAI-compatible URL…')}
          </option>
          {kbs.length ? (
            <optgroup label={trans.__('Knowledge bases')}>
              {kbs.map(k => (
                <option key={k} value={kbTargetValue(k)}>
                  {trans.__('Knowledge base %1', k)}
                </option>
              ))}
            </optgroup>
          ) : null}
        </select>
      </Field>
      {kb !== null ? (
        <Field
          label={trans.__('Answered by')}
          name={`${props.name}-answerer`}
          hint={trans.__(
            'The language model that answers from the passages it finds.'
          )}
        >
          <select
            className="cube-TField-input"
            name={`${props.name}-answerer`}
            value={form.answerer}
            disabled={props.disabled}
            onChange={e => props.onChange({ answerer: e.target.value })}
          >
            {form.answerer === '' ? (
              <option value="">{trans.__('Choose a model…')}</option>
            ) : null}
            {options.map(o => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ))}
            <option value={URL_TARGET}>
              {trans.__('OpenAI-compatible URL…')}
            </option>
          </select>
        </Field>
      ) : null}
      {url ? (
        <>
          <Field label={trans.__('Base URL')} name={`${props.name}-url`}>
            <input
              className="cube-TField-input"
              name={`${props.name}-url`}
              type="url"
              placeholder="https://host/v1"
              value={form.baseUrl}
              disabled={props.disabled}
              onChange={e => props.onChange({ baseUrl: e.target.value })}
            />
          </Field>
          <Field label={trans.__('Model')} name={`${props.name}-model`}>
            <input
              className="cube-TField-input"
              name={`${props.name}-model`}
              value={form.model}
              disabled={props.disabled}
              onChange={e => props.onChange({ model: e.target.value })}
            />
          </Field>
          <Field
            label={trans.__('API key')}
            name={`${props.name}-key`}
            hint={
              form.apiKey === '***'
                ? trans.__('A key is stored; type another to replace it.')
                : undefined
            }
          >
            <input
              className="cube-TField-input"
              name={`${props.name}-key`}
              type="password"
              autoComplete="off"
              value={form.apiKey}
              disabled={props.disabled}
              onChange={e => props.onChange({ apiKey: e.target.value })}
            />
          </Field>
        </>
      ) : null}
    </div>
  );
}

export function ParamsFields(props: {
  system: string;
  params: IParamsForm;
  errors: Partial<Record<keyof IParamsForm, IParamError>>;
  trans: TranslationBundle;
  disabled: boolean;
  onSystem: (system: string) => void;
  onParams: (changes: Partial<IParamsForm>) => void;
}): JSX.Element {
  const { trans, params, errors } = props;
  const error = (key: keyof IParamsForm) => {
    const e = errors[key];
    if (!e) {
      return undefined;
    }
    return e.integer
      ? trans.__('A whole number from %1 to %2', e.min, e.max)
      : key === 'top_p'
        ? trans.__('More than %1, at most %2', e.min, e.max)
        : trans.__('A number from %1 to %2', e.min, e.max);
  };
  const number = (
    key: keyof IParamsForm,
    label: string,
    step: string,
    placeholder: string
  ) => (
    <Field label={label} name={key} error={error(key)}>
      <input
        className="cube-TField-input"
        name={key}
        type="number"
        step={step}
        placeholder={placeholder}
        value={params[key]}
        disabled={props.disabled}
        onChange={e => props.onParams({ [key]: e.target.value })}
      />
    </Field>
  );
  return (
    <div className="cube-ChatParams">
      <Field label={trans.__('System prompt')} name="system">
        <textarea
          className="cube-TField-input"
          name="system"
          rows={2}
          placeholder={trans.__('e.g. You are a concise assistant.')}
          value={props.system}
          disabled={props.disabled}
          onChange={e => props.onSystem(e.target.value)}
        />
      </Field>
      <div className="cube-ChatParams-numbers">
        {number('temperature', trans.__('Temperature'), '0.1', '1.0')}
        {number('top_p', trans.__('Top p'), '0.05', '1.0')}
        {number('max_tokens', trans.__('Max tokens'), '1', '256')}
      </div>
    </div>
  );
}
