/**
 * Under the hub, the panels call the cube-lab service straight, through the hub's proxy,
 * instead of through the user's own server (which would forward each request to it: one
 * HTTP hop more). The lab server says where the service is (page config `cubeLabService`,
 * a path on this origin; absent in the embedded shape and with hub subdomains).
 *
 * The service knows the browser by an OAuth cookie of its own. Getting it takes the hub's
 * OAuth redirects, which only page loads follow with the hub's login, so the page loads
 * the service's `browser-session` page once in a hidden frame (see
 * cube_lab/hub/browser_session.py) and reads the XSRF token the service's cookie requests
 * must carry. Whenever that fails, requests keep going through the lab server.
 */
import { PageConfig, URLExt } from '@jupyterlab/coreutils';

/** How to call the service from this page. */
export interface IServiceSession {
  /** The service's path on this origin, e.g. `/services/cube-lab/`. */
  base: string;
  /** Sent back as `X-XSRFToken` with every request. */
  xsrf: string;
  /** The hub user the service's cookie belongs to. */
  user: string;
}

/** The id of the element of the session page that holds `{user, xsrf}`. */
export const SESSION_ELEMENT = 'cube-lab-session';
const SESSION_TIMEOUT_MS = 15000;

let current: Promise<IServiceSession | null> | null = null;

/**
 * The session, opened on first use and then shared; `null` where the page has no service to
 * call straight or the session could not be opened.
 */
export function serviceSession(): Promise<IServiceSession | null> {
  if (current === null) {
    const base = PageConfig.getOption('cubeLabService');
    current = base ? openSession(base) : Promise.resolve(null);
  }
  return current;
}

let refusedInARow = 0;
const MAX_REFUSED = 3;

/**
 * Say how the service took a request made with the session. Refused (its cookie may have
 * expired): drop the session, so the next call opens a new one; after a few sessions in a
 * row that were all refused, stop calling the service straight from this page.
 */
export function noteServiceAnswer(taken: boolean): void {
  if (taken) {
    refusedInARow = 0;
    return;
  }
  refusedInARow += 1;
  current = refusedInARow < MAX_REFUSED ? null : Promise.resolve(null);
}

function openSession(base: string): Promise<IServiceSession | null> {
  return new Promise(resolve => {
    const frame = document.createElement('iframe');
    frame.style.display = 'none';
    frame.setAttribute('aria-hidden', 'true');
    frame.tabIndex = -1;
    let done = false;
    const finish = (session: IServiceSession | null): void => {
      if (done) {
        return;
      }
      done = true;
      window.clearTimeout(timer);
      frame.remove();
      if (!session) {
        console.warn(
          'cube-lab: no session with the cube-lab service; requests go through the lab server'
        );
      }
      resolve(session);
    };
    const timer = window.setTimeout(() => finish(null), SESSION_TIMEOUT_MS);
    // redirects fire no load event: this is the last page, the session's or the hub's login
    frame.addEventListener('load', () => finish(readSession(frame, base)));
    frame.src = URLExt.join(base, 'browser-session');
    document.body.appendChild(frame);
  });
}

function readSession(
  frame: HTMLIFrameElement,
  base: string
): IServiceSession | null {
  try {
    const element = frame.contentDocument?.getElementById(SESSION_ELEMENT);
    if (!element?.textContent) {
      return null;
    }
    const data = JSON.parse(element.textContent) as Record<string, unknown>;
    if (typeof data.xsrf !== 'string' || typeof data.user !== 'string') {
      return null;
    }
    if (data.user !== PageConfig.getOption('hubUser')) {
      // someone else's lab (an admin visiting): it acts as its owner, through its server
      return null;
    }
    return { base, xsrf: data.xsrf, user: data.user };
  } catch {
    return null; // another origin (a login page elsewhere), or not our page
  }
}
