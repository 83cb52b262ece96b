"""A user's own courses, asked of the hub's cube-admin service: the JupyterLab Course panel's
list (``mine``) and its Submit button (``submit``), behind ``GET /courses/mine`` and
``POST /courses/{course}/handouts/{handout}/submit`` of the REST API.

Under the hub these run in the cube-lab service, which asks with its own token for the user a
request came from; cube-admin decides what that user may see and do. Outside a hub (the
embedded single-user shape) there are no courses: ``mine`` answers ``hub: false``.
Blocking (urllib): handlers run it in a worker thread.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from ..errors import InvalidInput
from ..locale.messages import _t
from . import client


def mine(user: str) -> dict[str, Any]:
    """``{"hub", "user", "courses": [{"name", "role", "page", "handouts"}]}``."""
    where = client._where(None, None)
    if where is None:
        return {"hub": False, "user": user, "courses": []}
    found = client._call("GET", "api/my/courses?" + urlencode({"user": user}),
                         base=where[0], token=where[1])  # fmt: skip
    return {"hub": True, "user": user, "courses": found.get("courses") or []}


def submit(user: str, course: str, handout: str) -> dict[str, Any]:
    """Hand in ``user``'s folder ``course/COURSE/HANDOUT`` now: the submission's entry
    (``student``, ``at``, ``late``, ``how``, ``files``)."""
    where = client._where(None, None)
    if where is None:
        raise InvalidInput(
            _t("there are no courses outside the multi-user hub"),
            _t("Courses are run on the hub (README: Multi-user hub)."),
        )
    path = f"api/courses/{quote(course, safe='')}/handouts/{quote(handout, safe='')}/submit"
    entry: dict[str, Any] = client._call(
        "POST", path, {"user": user}, base=where[0], token=where[1]
    )
    return entry
