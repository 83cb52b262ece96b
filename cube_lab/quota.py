"""Quota reservations at the hub's admission service, for anything that starts work.

A lab server spawned by the cube-lab hub has ``$CUBE_HUB_ADMIN_URL`` and a hub token:
training jobs, tuning experiments and deployments reserve what they take for their project
before they start anything and give it back when they end. Outside a hub (the embedded
single-user shape) there are no quotas and nothing is asked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

ENV_ADMIN_URL = "CUBE_HUB_ADMIN_URL"


def reserve(
    project: str,
    holder: str,
    *,
    cpu: Any = None,
    memory: Any = None,
    accelerators: Mapping[str, Any] | None = None,
) -> Any:
    """The reservation (release it later), or None outside a hub. Raises ``QuotaExceeded``
    (whose ``error`` is the sentence to show) when the project's quota is used up."""
    if not os.environ.get(ENV_ADMIN_URL):
        return None
    from .hub import client

    return client.admit(
        project=project, holder=holder, cpu=cpu, memory=memory, accelerators=accelerators
    )


def release(reservation: Any) -> None:
    if reservation is None:
        return
    from .hub import client

    client.release(reservation)
