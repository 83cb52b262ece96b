"""Shared fixtures: an isolated environment, a workspace, and a server with two users."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import isolation
import pytest
from jupyter_server.auth.identity import IdentityProvider, User

from cube_lab import job_credentials
from cube_lab.config import ENV_DATA_DIR, ENV_DB_URL, ENV_ROOT_DIR, ENV_USER, Settings
from cube_lab.identity import Caller
from cube_lab.workspace import Workspace

pytest_plugins = ["pytest_jupyter.jupyter_server", "tiers", "property"]

TOKENS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Nothing a test does may touch $HOME or a real Jupyter/MLflow folder."""
    for var, value in isolation.environment(tmp_path).items():
        monkeypatch.setenv(var, value)
    # a serving warm host a test started leaves soon after its last deployment
    monkeypatch.setenv("CUBE_LAB_SERVING_WARM_IDLE_S", "15")
    monkeypatch.setenv(ENV_DATA_DIR, str(tmp_path / "cube-data"))
    # tests run as root (CI) make no system accounts unless they ask (tests/hub/test_os_accounts.py)
    monkeypatch.setenv("CUBE_LAB_OS_ACCOUNTS", "0")
    leaky = (ENV_DB_URL, ENV_ROOT_DIR, ENV_USER, "JUPYTERHUB_USER")
    for var in leaky:
        monkeypatch.delenv(var, raising=False)
    yield tmp_path
    # An in-process server exports these for its kernels (app.py); a later test must not
    # inherit this test's database.
    for var in leaky:
        os.environ.pop(var, None)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.resolve(tmp_path / "cube-data")


@pytest.fixture
def ws(settings: Settings) -> Any:
    workspace = Workspace.open(settings)
    yield workspace
    workspace.close()


@pytest.fixture
def alice() -> Caller:
    return Caller("alice")


@pytest.fixture
def bob() -> Caller:
    return Caller("bob")


class TokenUsers(IdentityProvider):
    """Test identity provider: one fixed token per user, like JupyterHub gives each user."""

    def get_user(self, handler: Any) -> User | None:
        header = handler.request.headers.get("Authorization", "")
        for name, token in TOKENS.items():
            if header == f"token {token}":
                handler._token_authenticated = True  # token requests skip the XSRF check
                return User(username=name)
        return None


@pytest.fixture
def jp_server_config(tmp_path: Path) -> dict[str, Any]:
    return {
        "ServerApp": {
            "jpserver_extensions": {"cube_lab": True},
            "identity_provider_class": TokenUsers,
        },
        "CubeLab": {"data_dir": str(tmp_path / "server-data")},
    }


@pytest.fixture
def api(jp_fetch: Any) -> Any:
    """``await api("alice", "GET", "models")`` -> (status, parsed JSON or bytes)."""

    async def call(
        user: str | None,
        method: str,
        path: str,
        body: Any = None,
        params: dict[str, Any] | None = None,
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"token {TOKENS[user]}" if user else ""}
        kwargs: dict[str, Any] = {"method": method, "headers": headers, "raise_error": False}
        if body is not None:
            kwargs["body"] = body if isinstance(body, str | bytes) else json.dumps(body)
        elif method in ("POST", "PUT", "PATCH"):
            kwargs["body"] = "{}"
        resp = await jp_fetch("cube", "api", "v1", *path.split("/"), params=params, **kwargs)
        if resp.headers.get("Content-Type", "").startswith("application/json"):
            return resp.code, json.loads(resp.body) if resp.body else None
        return resp.code, resp.body

    return call


@pytest.fixture
def under_the_hub() -> Iterator[None]:
    """This process is the cube-lab service under a hub (it issues job tokens)."""
    job_credentials.configure(job_credentials.Issuer(b"k" * 32, "http://hub:8020"))
    try:
        yield
    finally:
        job_credentials.configure(None)
