"""A spawn refused for the project's quota reads in the language of the browser that asked for
it (the hub's spawn page sends its Accept-Language), the quota's words included; English
otherwise, and in the hub's log."""

# ruff: noqa: RUF001  (the Chinese texts asserted here use full-width punctuation)

from __future__ import annotations

from types import SimpleNamespace

from cube_lab.hub.ledger import QuotaExceeded
from cube_lab.hub.quotas import Quota, refusal
from cube_lab.hub.spawner import refused, spawn_locale
from cube_lab.locale.messages import _t


def _spawner(accept_language: str | None) -> SimpleNamespace:
    headers = {} if accept_language is None else {"Accept-Language": accept_language}
    return SimpleNamespace(handler=SimpleNamespace(request=SimpleNamespace(headers=headers)))


def _over_quota() -> QuotaExceeded:
    q = Quota.parse({"accelerators": {"nvidia.com/gpu": 4}})
    why = refusal("vision", q, {"nvidia.com/gpu": 3}, {"nvidia.com/gpu": 2})
    assert why == "project vision uses 3 of 4 GPUs (nvidia.com/gpu); this needs 2"
    return QuotaExceeded(why, _t("Stop a server or job of the project, or ask an admin for more."))


def test_the_spawn_pages_language_is_the_requests() -> None:
    assert spawn_locale(_spawner("zh-CN,zh;q=0.9,en;q=0.8")) == "zh_CN"
    assert spawn_locale(_spawner("en-US,en;q=0.9")) == "en"
    assert spawn_locale(_spawner(None)) == "en"
    assert spawn_locale(SimpleNamespace()) == "en"  # no handler (the API, a restart)


def test_a_quota_refusal_reads_in_chinese_for_a_chinese_browser() -> None:
    chinese = refused(_over_quota(), spawn_locale(_spawner("zh-CN, en;q=0.5")))
    text = chinese.jupyterhub_message  # type: ignore[attr-defined]
    assert chinese.status_code == 403
    assert text == (
        "项目组 vision 已使用 3 / 4 GPU 数（nvidia.com/gpu）；此次需要 2。"
        "请停止项目组的一个服务器或任务，或向管理员申请更多配额。"
    )
    assert "GPUs" not in text and "uses" not in text and "Stop a server" not in text
    assert chinese.log_message.startswith("project vision uses 3 of 4 GPUs")  # the log: English

    english = refused(_over_quota(), spawn_locale(_spawner("en-US")))
    assert english.jupyterhub_message == (  # type: ignore[attr-defined]
        "project vision uses 3 of 4 GPUs (nvidia.com/gpu); this needs 2. "
        "Stop a server or job of the project, or ask an admin for more."
    )
