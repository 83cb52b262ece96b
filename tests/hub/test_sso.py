"""SSO: identity-provider groups become project groups (GenericOAuthenticator, OIDC)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from oauthenticator.generic import GenericOAuthenticator
from traitlets.config import Config

from cube_lab.hub.auth import map_idp_groups, oidc_groups_key
from cube_lab.hub.config import configure
from cube_lab.hub.settings import ADMIN_GROUP, ENV_DATA_DIR, ENV_SETTINGS, load

GROUP_MAP = {"/cube/*": "*", "ml-course-2025": ["course", "students"], "staff": "teachers"}


def test_mapping_keeps_only_mapped_groups() -> None:
    found = map_idp_groups(
        ["/cube/vision", "/cube/nlp", "ml-course-2025", "/other/x", "everyone"], GROUP_MAP
    )
    assert found == {"vision", "nlp", "course", "students"}
    assert map_idp_groups([], GROUP_MAP) == set()
    assert map_idp_groups(["/platform-admins"], {}, admin_idp_groups=["/platform-*"]) == {
        ADMIN_GROUP
    }
    # an IdP group can never name the admin group through the map
    assert map_idp_groups(["/cube/cube-admins"], GROUP_MAP) == set()


def test_groups_key_reads_the_userinfo_claim() -> None:
    key = oidc_groups_key(GROUP_MAP, claim="roles", admin_idp_groups=["staff"])
    state = {"oauth_user": {"preferred_username": "ann", "roles": ["/cube/vision", "staff"]}}
    assert key(state) == sorted({"vision", "teachers", ADMIN_GROUP})
    assert key({"oauth_user": {"roles": "/cube/solo"}}) == ["solo"]  # a single string claim
    assert key({"oauth_user": {}}) == []


@pytest.fixture
def sso_settings(tmp_path: Path) -> Path:
    raw = {
        "admin_users": ["root-admin"],
        "data_dir": str(tmp_path / "data"),
        "sso": {
            "issuer": "https://idp.example.edu/realms/school",
            "client_id": "cube-lab",
            "callback_url": "https://hub.example.edu/hub/oauth_callback",
            "group_map": GROUP_MAP,
            "admin_groups": ["/platform-admins"],
        },
    }
    path = tmp_path / "cube_hub.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_settings_file_configures_generic_oauthenticator(
    sso_settings: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cube_lab.hub.config.proxy_command", lambda: ["configurable-http-proxy"])
    for var in (ENV_SETTINGS, ENV_DATA_DIR):  # configure() exports these; restore them after
        monkeypatch.setenv(var, "")
    c = Config()
    configure(c, load(sso_settings))
    assert c.JupyterHub.authenticator_class == "generic-oauth"
    auth = GenericOAuthenticator(config=c)
    assert auth.manage_groups and auth.admin_groups == {ADMIN_GROUP}
    assert (
        auth.authorize_url == "https://idp.example.edu/realms/school/protocol/openid-connect/auth"
    )
    model = {
        "name": "ann",
        "admin": False,
        "auth_state": {"oauth_user": {"groups": ["/cube/vision", "/platform-admins", "misc"]}},
    }
    applied = asyncio.run(auth._apply_managed_groups(model))
    assert applied["groups"] == sorted(["vision", ADMIN_GROUP])
    assert applied["admin"] is True
