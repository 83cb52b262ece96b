/**
 * The Access section's logic (no DOM): the settings form -> the PUT
 * .../access changes, the new-key form -> the POST .../keys request, address
 * lists parsed from text, and the summary line. Messages are English message
 * ids the view passes through `trans.__`.
 */
import type {
  AccessChanges,
  Deployment,
  DeploymentAccess,
  DeploymentKey,
  NewKeyRequest
} from '../../api';

/** What a deployment answered before access settings existed: open. */
export const OPEN_ACCESS: DeploymentAccess = {
  auth: 'none',
  rate_limit: null,
  allow: [],
  deny: []
};

/** The server's name rule (cube_lab/identity.py NAME_RE). */
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const IPV4 =
  /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9A-Fa-f:.]+$/;
const MAX_LIST = 256;
const MAX_RPS = 1_000_000;

export function accessOf(d: Pick<Deployment, 'access'>): DeploymentAccess {
  return d.access ?? OPEN_ACCESS;
}

/** The settings as the form edits them (text fields as typed). */
export interface IAccessForm {
  auth: 'required' | 'none';
  limit: boolean;
  rps: string;
  burst: string;
  perKey: boolean;
  allow: string;
  deny: string;
}

export type AccessField = 'rps' | 'burst' | 'allow' | 'deny';

export function accessForm(access: DeploymentAccess): IAccessForm {
  const limit = access.rate_limit;
  return {
    auth: access.auth,
    limit: limit !== null,
    rps: limit ? String(limit.rps) : '',
    burst: limit ? String(limit.burst) : '',
    perKey: limit ? limit.per_key : false,
    allow: access.allow.join('\n'),
    deny: access.deny.join('\n')
  };
}

/** True when `text` looks like an IPv4/IPv6 address or CIDR network. */
export function isAddress(text: string): boolean {
  const [addr, bits, ...rest] = text.split('/');
  if (rest.length || !addr) {
    return false;
  }
  const v4 = IPV4.test(addr);
  const v6 = !v4 && addr.includes(':') && IPV6.test(addr);
  if (!v4 && !v6) {
    return false;
  }
  if (bits === undefined) {
    return true;
  }
  if (!/^\d{1,3}$/.test(bits)) {
    return false;
  }
  return Number(bits) <= (v4 ? 32 : 128);
}

/** Addresses and networks, one per line or separated by commas/spaces. */
export function parseAddressList(
  text: string
): { ok: true; list: string[] } | { ok: false; bad: string } {
  const list: string[] = [];
  for (const item of text.split(/[\s,]+/)) {
    if (!item) {
      continue;
    }
    if (!isAddress(item)) {
      return { ok: false, bad: item };
    }
    if (!list.includes(item)) {
      list.push(item);
    }
  }
  if (list.length > MAX_LIST) {
    return { ok: false, bad: list[MAX_LIST] };
  }
  return { ok: true, list };
}

function sameList(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export type AccessPlan =
  | { ok: true; changes: AccessChanges }
  | {
      ok: false;
      /** Field -> [message id, argument]. */
      errors: Partial<Record<AccessField, [string, string]>>;
    };

/** The form -> only what changed (an empty object: nothing to save). */
export function planAccess(
  form: IAccessForm,
  current: DeploymentAccess
): AccessPlan {
  const errors: Partial<Record<AccessField, [string, string]>> = {};
  const changes: AccessChanges = {};
  if (form.auth !== current.auth) {
    changes.auth = form.auth;
  }
  if (form.limit) {
    const rps = Number(form.rps.trim());
    if (
      !form.rps.trim() ||
      !Number.isFinite(rps) ||
      rps <= 0 ||
      rps > MAX_RPS
    ) {
      errors.rps = ['Requests a second must be a number above 0.', form.rps];
    }
    const burstText = form.burst.trim();
    const burst = burstText ? Number(burstText) : Math.max(1, Math.ceil(rps));
    if (!Number.isInteger(burst) || burst < 1 || burst > MAX_RPS) {
      errors.burst = [
        'The burst must be a whole number of requests, 1 or more.',
        form.burst
      ];
    }
    const was = current.rate_limit;
    if (
      !errors.rps &&
      !errors.burst &&
      (!was ||
        was.rps !== rps ||
        was.burst !== burst ||
        was.per_key !== form.perKey)
    ) {
      changes.rate_limit = { rps, burst, per_key: form.perKey };
    }
  } else if (current.rate_limit !== null) {
    changes.rate_limit = null;
  }
  for (const field of ['allow', 'deny'] as const) {
    const parsed = parseAddressList(form[field]);
    if (!parsed.ok) {
      errors[field] = ['%1 is not an IP address or CIDR network.', parsed.bad];
    } else if (!sameList(parsed.list, current[field])) {
      changes[field] = parsed.list;
    }
  }
  return Object.keys(errors).length
    ? { ok: false, errors }
    : { ok: true, changes };
}

/** The new-key form. */
export interface IKeyForm {
  name: string;
  /** Days until it expires; empty: never. */
  days: string;
}

export function planNewKey(
  form: IKeyForm
): { ok: true; request: NewKeyRequest } | { ok: false; error: string } {
  const name = form.name.trim();
  if (!name) {
    return { ok: false, error: 'Give the key a name, e.g. what it is for.' };
  }
  if (!NAME_RE.test(name)) {
    return {
      ok: false,
      error:
        'A key name starts with a letter or digit and holds only letters, digits, ".", "_" and "-".'
    };
  }
  const days = form.days.trim();
  if (!days) {
    return { ok: true, request: { name } };
  }
  const n = Number(days);
  if (!Number.isFinite(n) || n <= 0 || n > 3650) {
    return {
      ok: false,
      error:
        'Days until it expires: a number from 1 to 3650, or empty for never.'
    };
  }
  return { ok: true, request: { name, expires_in_days: n } };
}

/** Keys in force first (newest first), then expired, then revoked. */
export function sortKeys(keys: DeploymentKey[]): DeploymentKey[] {
  const rank = (k: DeploymentKey) =>
    k.state === 'active' ? 0 : k.state === 'expired' ? 1 : 2;
  return keys
    .slice()
    .sort(
      (a, b) => rank(a) - rank(b) || b.created_at.localeCompare(a.created_at)
    );
}

/** The parts of the summary line: [message id, ...arguments] each. */
export function accessSummary(
  access: DeploymentAccess,
  activeKeys: number
): [string, ...(string | number)[]][] {
  const parts: [string, ...(string | number)[]][] = [];
  if (access.auth === 'required') {
    parts.push(['API key required (%1 in force)', activeKeys]);
  } else {
    parts.push(['open: no key asked']);
  }
  const limit = access.rate_limit;
  if (limit) {
    parts.push(
      limit.per_key
        ? ['%1 requests/s per key, bursts of %2', limit.rps, limit.burst]
        : ['%1 requests/s, bursts of %2', limit.rps, limit.burst]
    );
  }
  if (access.allow.length) {
    parts.push(['only %1 address range(s)', access.allow.length]);
  }
  if (access.deny.length) {
    parts.push(['%1 denied', access.deny.length]);
  }
  return parts;
}

/** A curl line that calls the deployment with a key. */
export function curlExample(
  endpoint: string,
  model: string,
  key = '$CUBE_KEY'
): string {
  return (
    `curl -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" ` +
    `${endpoint}/v2/models/${model}/infer -d @request.json`
  );
}
