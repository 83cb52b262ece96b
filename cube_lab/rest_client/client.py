"""A small blocking client of cube-lab's REST API, as one user (their hub token).

Under the hub a lab server, its kernels and terminals hold no store: the CLI, the magics and
the Python SDK reach it through the cube-lab service with the server's token
(``$JUPYTERHUB_API_TOKEN``), at ``$CUBE_LAB_SERVICE_URL``; a job the service started (a pipeline
node, a training rank, a tuning trial) uses the token the service gave it
(``$CUBE_LAB_TOKEN``, its owner's while the job runs). Errors come back as the same
``cube_lab.errors`` classes a local service raises, with the service's ``error`` and
``detail``, so every caller handles both shapes alike::

    client = ServiceClient.from_env()          # None outside the hub
    client.get("models", q="iris")             # parsed JSON
    client.post("pipelines/runs", {"path": "flow.pipeline"})
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from email.message import Message
from pathlib import Path
from typing import IO, Any

from ..config import ENV_SERVICE_URL
from ..errors import Conflict, CubeError, Forbidden, InvalidInput, NotFound, StoreUnavailable
from ..locale.messages import _t, accept_language, env_locale

API = "cube/api/v1/"
ENV_TOKEN = "JUPYTERHUB_API_TOKEN"
ENV_JOB_TOKEN = "CUBE_LAB_TOKEN"  # a job's own token (``cube_lab.job_credentials``)
TIMEOUT_S = 120.0
CHUNK = 1 << 20


class Unauthorized(CubeError):
    status = 401


class TooManyRequests(CubeError):
    status = 429


class ServiceError(CubeError):
    """A 5xx from the service (or an answer it should not have given)."""

    status = 500


_BY_STATUS: dict[int, type[CubeError]] = {
    400: InvalidInput,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: InvalidInput,
    429: TooManyRequests,
    503: StoreUnavailable,
}


def error_for(status: int, body: bytes, url: str) -> CubeError:
    """The ``cube_lab.errors`` exception for an error answer of the service."""
    error, detail = f"the cube-lab service answered HTTP {status}", None
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("error"):
        error, detail = str(parsed["error"]), parsed.get("detail")
    elif body:
        detail = body.decode(errors="replace")[:500]
    cls = _BY_STATUS.get(status) or (ServiceError if status >= 500 else InvalidInput)
    exc = cls(error, detail)
    exc.status = status  # the service's own code, whatever the class says
    if status in (401, 403) and detail is None:
        exc.detail = (
            f"{url} refused the token: it must be a hub token of yours that grants "
            "access:services!service=cube-lab ($JUPYTERHUB_API_TOKEN in your server)."
        )
    return exc


class Response:
    """A streamed answer: ``headers``, ``iter_bytes()``, ``save(path)``; close it (or use
    ``with``)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self.status: int = raw.status
        self.headers: Message = raw.headers

    @property
    def filename(self) -> str | None:
        """The file name the answer's Content-Disposition gives, if any."""
        value = self.headers.get("Content-Disposition")
        if not value:
            return None
        msg = Message()
        msg["content-disposition"] = value
        name = msg.get_filename()
        return Path(name).name if name else None

    def iter_bytes(self, size: int = CHUNK) -> Iterator[bytes]:
        while chunk := self._raw.read(size):
            yield chunk

    def save(self, target: Path | IO[bytes]) -> None:
        if isinstance(target, Path):
            with target.open("wb") as out:
                shutil.copyfileobj(self._raw, out, CHUNK)
        else:
            shutil.copyfileobj(self._raw, target, CHUNK)

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


class ServiceClient:
    """Blocking calls to ``<base_url>cube/api/v1/<path>`` with ``Authorization: token``."""

    def __init__(self, base_url: str, token: str, *, timeout: float = TIMEOUT_S) -> None:
        self.base_url = base_url.rstrip("/") + "/"
        self.api_url = self.base_url + API
        self.token = token
        self.timeout = timeout
        # the reader's locale, asked for at each request: $LANG's for the CLI; a kernel's
        # transport sets JupyterLab's language (cube_lab/sdk/view_locale.py)
        self.locale: Callable[[], str] = env_locale

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServiceClient | None:
        """The client of this server's user under the hub; None outside it."""
        env = os.environ if environ is None else environ
        url = env.get(ENV_SERVICE_URL)
        if not url:
            return None
        # inside a job the service started: the job's own token (its owner's, while it runs)
        token = env.get(ENV_JOB_TOKEN) or env.get(ENV_TOKEN)
        if not token:
            raise Unauthorized(
                _t("${url} is set but ${token} is not", url=ENV_SERVICE_URL, token=ENV_TOKEN),
                _t(
                    "Run cube-lab inside your JupyterHub server (a terminal or a notebook), "
                    "or export the token of a hub API token of yours."
                ),
            )
        return cls(url, token)

    def url(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        url = self.api_url + path.lstrip("/")
        query = {k: _query_value(v) for k, v in (params or {}).items() if v is not None}
        return f"{url}?{urllib.parse.urlencode(query)}" if query else url

    def _open(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        url = self.url(path, params)
        headers = {
            "Authorization": f"token {self.token}",
            "Accept": "application/json",
            "Accept-Language": accept_language(self.locale()),  # the service's errors in it
        }
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            return urllib.request.urlopen(request, timeout=timeout or self.timeout)
        except urllib.error.HTTPError as exc:
            with exc:
                raise error_for(exc.code, exc.read(), self.base_url) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise StoreUnavailable(
                _t(
                    "cannot reach the cube-lab service at {base_url}: {reason}",
                    base_url=self.base_url,
                    reason=reason,
                ),
                _t("Is the hub running? Its cube-lab service owns the store under the hub."),
            ) from None

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """The parsed JSON of the answer (None when it has no body)."""
        with self._open(method, path, body, params, timeout) as raw:
            payload = raw.read()
        if not payload:
            return None
        try:
            return json.loads(payload)
        except ValueError:
            raise ServiceError(
                _t(
                    "the cube-lab service answered {method} {path} with no JSON",
                    method=method,
                    path=path,
                ),
                payload.decode(errors="replace")[:300],
            ) from None

    def get(self, path: str, /, **params: Any) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any = None, /, **params: Any) -> Any:
        return self.request("POST", path, {} if body is None else body, params)

    def patch(self, path: str, body: Any, /, **params: Any) -> Any:
        return self.request("PATCH", path, body, params)

    def put(self, path: str, body: Any, /, **params: Any) -> Any:
        return self.request("PUT", path, body, params)

    def delete(self, path: str, /, **params: Any) -> Any:
        return self.request("DELETE", path, params=params)

    def stream(self, path: str, /, **params: Any) -> Response:
        """A GET whose body is read as it comes (a download, a log)."""
        return Response(self._open("GET", path, None, params))


def segment(value: Any) -> str:
    """One URL path segment (a project, model or run name), quoted."""
    return urllib.parse.quote(str(value), safe="")


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
