"""Where a lab page gets what it needs to call the cube-lab service straight from the browser.

Under the hub the panels' requests could all cross the user's own server, which forwards
them to the service (``cube_lab/handlers/forward.py``): one HTTP hop more than the service
needs. Instead the page loads ``/services/cube-lab/browser-session`` once in a hidden frame.
That is a page load, so the hub's OAuth redirects work as they do for any hub service: the
first time, the hub (which knows the browser by its own cookie) gives this service a token
for the user, kept in this service's cookie (path ``/services/cube-lab/``). The answer carries
the user's name and the XSRF token that cookie requests must send back (``X-XSRFToken``);
the frame's parent reads it from the page (same origin) and calls the API with it.

What this adds to the hub's own exposure: nothing. A page can read this answer only from the
hub's origin, where it could already read a lab server's XSRF token the same way; hub
deployments that must keep users' pages from each other use ``subdomain_host``, and the lab
then keeps to its forward (the service is then another origin).
"""

from __future__ import annotations

import json

from jupyterhub.services.auth import HubOAuthenticated
from tornado import web

ELEMENT_ID = "cube-lab-session"  # the front end reads this element (src/api/request.ts)


class BrowserSessionHandler(HubOAuthenticated, web.RequestHandler):
    """``GET``: the OAuth dance when the browser has no cookie of this service yet (a redirect
    to the hub's login or authorize page), then a page holding ``{"user", "xsrf"}``. Its
    ``hub_auth`` is ``HubOAuth.instance()``, the store service's own."""

    @web.authenticated
    def get(self) -> None:
        user = self.current_user
        session = {"user": user["name"], "xsrf": self.xsrf_token.decode("ascii")}
        # JSON in a data element, not a script: the page runs nothing; "<" escaped so the
        # value cannot close the element
        data = json.dumps(session).replace("<", "\\u003c")
        self.set_header("Cache-Control", "no-store")
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Content-Security-Policy", "default-src 'none'; frame-ancestors 'self'")
        self.write(
            "<!doctype html><title>cube-lab</title>"
            f'<script type="application/json" id="{ELEMENT_ID}">{data}</script>'
        )
