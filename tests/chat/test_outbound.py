"""A URL a user gives for a chat is called by the server: under the hub that is the cube-lab
service, which refuses to call its own machine, private and link-local addresses (other users'
servers, cloud metadata) and the cluster's API server for a user; an admin can allow a host
or a network. Outside the hub the server is the user's own and calls what they ask."""

from __future__ import annotations

from typing import Any

import pytest

from cube_lab.chat.endpoint import check_outbound
from cube_lab.errors import Forbidden
from cube_lab.outbound import ENV_ALLOWED, ENV_ALLOWED_OLD


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8081/hub/api",
        "http://localhost:5432/v1",
        "http://[::1]:8000/v1",
        "http://[::ffff:127.0.0.1]/v1",
        "http://169.254.169.254/latest/meta-data",
        "https://kubernetes.default.svc/api",
        "http://0.0.0.0:8000/v1",
        "http://2130706433:8081/hub/api",  # 127.0.0.1 as one number
        "http://0x7f.1:8081/hub/api",
        "http://10.1.2.3:8000/v1",  # a private network: other users' servers, the hub's
        "http://192.168.1.20:8000/v1",
        "http://172.16.0.5/v1",
        "http://100.64.3.2/v1",  # shared address space, often a cluster's pods
        "http://[fd00::5]/v1",
    ],
)
def test_the_service_refuses_internal_addresses(under_the_hub: None, url: str) -> None:
    with pytest.raises(Forbidden) as caught:
        check_outbound(url)
    assert ENV_ALLOWED in str(caught.value.detail)


def test_what_is_allowed(under_the_hub: None, monkeypatch: pytest.MonkeyPatch) -> None:
    check_outbound("http://93.184.215.14/v1")  # a public address
    check_outbound("https://no-such-host.invalid/v1")  # fails by itself when called
    monkeypatch.setenv(ENV_ALLOWED, "localhost, ollama.internal, 10.1.0.0/16")
    check_outbound("http://localhost:11434/v1")  # an admin allowed it
    check_outbound("http://10.1.2.3:8000/v1")  # a team's own model server, allowed by network
    with pytest.raises(Forbidden):
        check_outbound("http://10.2.0.1:8000/v1")  # not that network
    monkeypatch.delenv(ENV_ALLOWED)
    monkeypatch.setenv(ENV_ALLOWED_OLD, "localhost")  # the older name is still read
    check_outbound("http://localhost:11434/v1")
    monkeypatch.setenv("CUBE_LAB_K8S_HOST", "https://10.0.0.1:6443")
    with pytest.raises(Forbidden):
        check_outbound("https://10.0.0.1:6443/api")  # the cluster's API server


def test_outside_the_hub_the_users_own_server_calls_what_they_ask() -> None:
    check_outbound("http://127.0.0.1:11434/v1")


async def test_a_conversation_with_an_internal_url_is_refused_under_the_hub(
    api: Any, under_the_hub: None
) -> None:
    target = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "k"}
    code, err = await api("alice", "POST", "chat/conversations", {"target": target})
    assert code == 403 and "127.0.0.1" in err["error"], err
    code, listed = await api("alice", "GET", "chat/conversations")
    assert code == 200 and listed["conversations"] == [], listed
