"""Links that open a cube-lab view in JupyterLab: ``<lab>?cube-open=<kind>&...``.

The front end (src/links.ts) follows them: ``job``/``experiment`` by ``id``, ``run`` by ``id``
and ``path`` (the pipeline file), ``deployment``/``labeling`` by ``project`` and ``name``,
``model`` by ``project``, ``name`` and an optional ``version``, ``resources`` (the Resources
panel) by ``project``.

Where the lab is: the server extension puts its lab URL in ``$CUBE_LAB_LAB_URL`` when it
starts (cube_lab/app.py), so its kernels and terminals know it; under the hub that is a path
(``/user/alice/lab``: the browser reaches the server through the hub's address, which the
server does not know). With neither, there is no link (None).
"""

from __future__ import annotations

import os
from urllib.parse import urlencode

ENV_LAB_URL = "CUBE_LAB_LAB_URL"
KINDS = ("job", "experiment", "run", "deployment", "model", "labeling", "resources")


def lab_url(base_url: str, connection_url: str | None, under_hub: bool) -> str:
    """The lab's address for a server with this ``base_url`` (``/`` or ``/user/alice/``):
    a path under the hub, else the server's own ``connection_url`` (host and port)."""
    root = base_url if under_hub or not connection_url else connection_url
    return root.rstrip("/") + "/lab"


def link(kind: str, **params: str | int | None) -> str | None:
    """The link to ``kind``'s view (the params it needs, see the module's text), or None
    when this process does not know where the lab is."""
    if kind not in KINDS:
        raise ValueError(f"no cube-lab view of kind {kind!r}")
    base = os.environ.get(ENV_LAB_URL)
    if not base:
        return None
    query = {"cube-open": kind, **{k: str(v) for k, v in params.items() if v is not None}}
    return f"{base}?{urlencode(query)}"
