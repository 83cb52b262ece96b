"""The accelerator table: lookups, container limits, and reading limits back for quotas."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from cube_lab import accelerators
from cube_lab.accelerators import AcceleratorRequest, get, requests_in, resources_for
from cube_lab.errors import InvalidInput

# Kubernetes extended resources: a DNS subdomain prefix, "/", then a name.
RESOURCE_NAME = re.compile(
    r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?/[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"
)


def test_table_keys_are_unique_and_resource_names_are_valid() -> None:
    table = accelerators.all_accelerators()
    keys = [a.key for a in table]
    assert len(keys) == len(set(keys))
    for acc in table:
        for name in (acc.resource, *acc.companions):
            assert RESOURCE_NAME.match(name), name
        json.dumps(acc.to_json())  # settings and the REST API serve it as JSON


def test_the_table_covers_each_kind_of_device() -> None:
    resources = {a.resource for a in accelerators.all_accelerators()}
    assert {
        "nvidia.com/gpu",
        "nvidia.com/mig-1g.10gb",
        "nvidia.com/mig-2g.20gb",
        "nvidia.com/mig-3g.40gb",
        "nvidia.com/mig-7g.80gb",
        "huawei.com/Ascend910",
        "huawei.com/Ascend910B",
        "huawei.com/Ascend310P",
        "volcano.sh/vgpu-number",
        "amd.com/gpu",
    } <= resources
    assert get("hami-vgpu").companions == ("nvidia.com/gpumem", "nvidia.com/gpucores")
    assert get("volcano-vgpu").memory_resource == "volcano.sh/vgpu-memory"


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("nvidia-gpu", "nvidia-gpu"),
        ("NVIDIA-GPU", "nvidia-gpu"),
        ("gpu", "nvidia-gpu"),
        # HAMi also counts nvidia.com/gpu: the resource name means a whole GPU.
        ("nvidia.com/gpu", "nvidia-gpu"),
        ("nvidia.com/mig-1g.10gb", "nvidia-mig-1g.10gb"),
        ("huawei.com/Ascend910B", "ascend-910b"),
        ("ascend", "ascend-910"),
        ("amd.com/gpu", "amd-gpu"),
        (" volcano-vgpu ", "volcano-vgpu"),
    ],
)
def test_get_by_key_alias_or_resource(name: str, key: str) -> None:
    assert get(name).key == key


def test_unknown_type_says_what_is_known_and_suggests() -> None:
    with pytest.raises(InvalidInput) as info:
        get("ascend-91b")
    assert "unknown accelerator type 'ascend-91b'" in info.value.error
    assert "Did you mean 'ascend-910b'?" in info.value.detail
    assert "nvidia-gpu" in info.value.detail


def test_resource_names_are_case_sensitive_like_kubernetes() -> None:
    with pytest.raises(InvalidInput):
        get("huawei.com/ascend910")


@pytest.mark.parametrize(
    ("key", "args", "limits"),
    [
        ("nvidia-gpu", (2,), {"nvidia.com/gpu": "2"}),
        ("nvidia-mig-1g.10gb", (1,), {"nvidia.com/mig-1g.10gb": "1"}),
        ("ascend-910", ("8",), {"huawei.com/Ascend910": "8"}),
        ("amd-gpu", (1.0,), {"amd.com/gpu": "1"}),
        (
            "hami-vgpu",
            (1, 4096, 50),
            {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "4096", "nvidia.com/gpucores": "50"},
        ),
        ("hami-vgpu", (2, 8000), {"nvidia.com/gpu": "2", "nvidia.com/gpumem": "8000"}),
        (
            "volcano-vgpu",
            (1, 3000, 30),
            {
                "volcano.sh/vgpu-number": "1",
                "volcano.sh/vgpu-memory": "3000",
                "volcano.sh/vgpu-cores": "30",
            },
        ),
        (
            "ascend-910b",
            (1, 4096),
            {"huawei.com/Ascend910B": "1", "huawei.com/Ascend910B-memory": "4096"},
        ),
    ],
)
def test_resources_for_builds_container_limits(
    key: str, args: tuple[Any, ...], limits: dict[str, str]
) -> None:
    assert resources_for(key, *args) == limits


@pytest.mark.parametrize("count", [0, -1, 1.5, True, "two", None, [1]])
def test_bad_counts_are_refused(count: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        resources_for("nvidia-gpu", count)
    assert "NVIDIA GPU count must be a whole number of at least 1" in info.value.error


def test_shares_of_a_whole_device_are_refused_with_the_alternatives() -> None:
    with pytest.raises(InvalidInput) as info:
        resources_for("nvidia-gpu", 1, memory_mib=4096)
    assert "cannot be given a memory share" in info.value.error
    assert "hami-vgpu" in info.value.detail and "volcano-vgpu" in info.value.detail
    with pytest.raises(InvalidInput, match="cannot be given a cores share"):
        resources_for("ascend-910b", 1, cores_percent=50)


@pytest.mark.parametrize(("memory", "cores"), [(0, None), (None, 0), (None, 101), ("lots", None)])
def test_bad_shares_are_refused(memory: Any, cores: Any) -> None:
    with pytest.raises(InvalidInput):
        resources_for("hami-vgpu", 1, memory_mib=memory, cores_percent=cores)


def test_unknown_type_in_resources_for() -> None:
    with pytest.raises(InvalidInput, match="unknown accelerator type 'tpu'"):
        resources_for("tpu", 1)


def test_quota_accounting_reads_back_what_resources_for_wrote() -> None:
    for acc in accelerators.all_accelerators():
        memory = 2048 if acc.memory_resource else None
        cores = 25 if acc.cores_resource else None
        limits: dict[str, Any] = {"cpu": "2", "memory": "4G"}
        limits.update(resources_for(acc.key, 3, memory_mib=memory, cores_percent=cores))
        assert requests_in(limits) == [AcceleratorRequest(acc, 3, memory, cores)], acc.key


def test_plain_gpu_limits_count_as_whole_gpus() -> None:
    assert requests_in({"nvidia.com/gpu": 1}) == [AcceleratorRequest(get("nvidia-gpu"), 1)]
    assert requests_in({"cpu": "1", "example.com/fpga": "1"}) == []
