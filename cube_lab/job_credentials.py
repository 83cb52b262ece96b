"""The credential of a job the cube-lab service started on a user's behalf.

Under the hub a job (a pipeline run's nodes, a training job's ranks, a tuning experiment's
trials) runs as its owner's OS account with no key to the store. What it needs from the store
(a dataset version, registering a model, listing models) it asks the cube-lab service for, with
a token the service put into its environment (``$CUBE_LAB_TOKEN``, beside
``$CUBE_LAB_SERVICE_URL``):

``cjt1.<payload>.<mac>``: ``payload`` is base64url JSON ``{"k": kind, "i": id, "o": owner,
"t": issued at}``, ``mac`` base64url HMAC-SHA256 of ``cjt1.<payload>`` under the service's
secret (made once in its data dir, ``0600``). The token is stateless, so it survives a restart
of the service; the service takes it only while the job it names is still active (queued or
running) and still the owner's (``JobClaims.active``), so it ends with the job. Its bearer acts
as the job's owner, never as an admin.

Only the service (which holds the secret) issues and checks tokens: :func:`configure` is called
once at its start; where it is not (the embedded shape, tests without the hub) no job gets a
token and ``accounts.job_env`` keeps telling jobs they have no store.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import CubeError
from .locale.messages import _t

PREFIX = "cjt1"
ENV_TOKEN = "CUBE_LAB_TOKEN"  # the job's token, in the job's environment
ENV_JOB_DIR = "CUBE_LAB_JOB_DIR"  # the job's own folder (under the service's data dir)
SECRET_FILE = "job-token.secret"
KINDS = ("run", "training", "tuning")  # a pipeline run, a training job, a tuning experiment
ACTIVE = ("queued", "running")


class InvalidJobToken(CubeError):
    status = 401


@dataclass(frozen=True)
class JobRef:
    """A job started by the service: what its token names. ``folder`` (not in the token) is
    the job's own folder, where its files are."""

    kind: str
    id: str
    owner: str
    folder: str | None = None


@dataclass(frozen=True)
class JobClaims:
    kind: str
    id: str
    owner: str
    issued_at: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def is_job_token(token: str) -> bool:
    return token.startswith(PREFIX + ".")


def load_secret(folder: Path) -> bytes:
    """The service's secret in ``folder`` (made once, ``0600``, never rewritten)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as src:
        if os.fstat(src.fileno()).st_mode & 0o077:
            os.fchmod(src.fileno(), 0o600)
        text = src.read().strip()
    if len(text) < 32:
        raise CubeError(
            _t("the job token secret {path} is too short", path=path),
            _t("Delete it and restart the cube-lab service (running jobs' tokens end)."),
        )
    return text.encode("ascii")


class Issuer:
    """Issues and checks job tokens with one secret; ``service_url`` is where jobs reach the
    service, ``home(owner)`` the folder a job's user-given paths resolve in."""

    def __init__(
        self,
        secret: bytes,
        service_url: str,
        home: Callable[[str], Path] | None = None,
    ) -> None:
        if len(secret) < 16:
            raise ValueError("a job token secret needs at least 16 bytes")
        self._secret = secret
        self.service_url = service_url
        self.home = home

    def _mac(self, signed: str) -> str:
        return _b64(hmac.new(self._secret, signed.encode("ascii"), hashlib.sha256).digest())

    def issue(self, job: JobRef) -> str:
        if job.kind not in KINDS:
            raise ValueError(f"unknown job kind {job.kind!r}")
        payload = {"k": job.kind, "i": job.id, "o": job.owner, "t": int(time.time())}
        body = _b64(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())
        signed = f"{PREFIX}.{body}"
        return f"{signed}.{self._mac(signed)}"

    def verify(self, token: str) -> JobClaims:
        """The claims of a token this issuer made, unchanged; else ``InvalidJobToken``."""
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != PREFIX:
            raise _refused(_t("it is not a cube-lab job token"))
        signed = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(self._mac(signed).encode(), parts[2].encode("ascii", "replace")):
            raise _refused(_t("its signature does not match"))
        try:
            payload: Any = json.loads(_unb64(parts[1]))
            claims = JobClaims(
                str(payload["k"]), str(payload["i"]), str(payload["o"]), float(payload["t"])
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise _refused(
                _t("its payload cannot be read ({error})", error=type(exc).__name__)
            ) from None
        if claims.kind not in KINDS:
            raise _refused(_t("it names an unknown kind of job {kind!r}", kind=claims.kind))
        return claims


def _refused(why: str) -> InvalidJobToken:
    return InvalidJobToken(
        _t("the cube-lab service refused the job token: {why}", why=why),
        _t(
            "A job's token ($CUBE_LAB_TOKEN) works only inside the job the service "
            "started, while that job runs. Outside a job, use your own hub token."
        ),
    )


def ended(claims: JobClaims) -> InvalidJobToken:
    what = {
        "run": _t("the pipeline run {id} is no longer active", id=claims.id),
        "training": _t("the training job {id} is no longer active", id=claims.id),
        "tuning": _t("the tuning experiment {id} is no longer active", id=claims.id),
    }
    return _refused(
        what.get(claims.kind)
        or _t("the {kind} {id} is no longer active", kind=claims.kind, id=claims.id)
    )


def active(store: Any, claims: JobClaims) -> bool:
    """Whether the job ``claims`` names is still active (queued or running) and its owner's:
    looked up in ``store`` (a ``cube_lab.store.db.Store``)."""
    from sqlalchemy import select

    from .store.models import PipelineRun, TrainingJob, TuningExperiment

    model = {"run": PipelineRun, "training": TrainingJob, "tuning": TuningExperiment}[claims.kind]
    with store.read() as s:
        row = s.execute(select(model.owner, model.status).where(model.id == claims.id)).first()
    return row is not None and row[0] == claims.owner and row[1] in ACTIVE


# -- the service's issuer, configured at its start -----------------------------------------

_issuer: Issuer | None = None


def configure(issuer: Issuer | None) -> None:
    """Set (or, with None, clear) the issuer jobs started by this process get tokens from."""
    global _issuer
    _issuer = issuer


def issuer() -> Issuer | None:
    return _issuer


def service_vars(job: JobRef) -> dict[str, str] | None:
    """The service's URL and the job's token: what a job anywhere (a pod on the cluster
    too) needs to reach the service as its owner. None when no issuer is configured."""
    from .config import ENV_SERVICE_URL

    current = _issuer
    if current is None:
        return None
    return {ENV_SERVICE_URL: current.service_url, ENV_TOKEN: current.issue(job)}


def job_vars(job: JobRef) -> dict[str, str] | None:
    """What a job's environment gets to reach the service as its owner: the service's URL,
    the job's token, the owner's home (where paths resolve) and the job's folder. None when
    no issuer is configured in this process."""
    from .config import ENV_ROOT_DIR

    current = _issuer
    out = service_vars(job)
    if current is None or out is None:
        return None
    if current.home is not None:
        out[ENV_ROOT_DIR] = str(current.home(job.owner))
    if job.folder:
        out[ENV_JOB_DIR] = str(job.folder)
    return out
