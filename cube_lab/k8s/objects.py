"""What every backend does with the objects it makes: remember them (``object_refs``),
create them in order or none (``create_all``), and hand a job's pods a token through a
Secret made with them (``token_secret``)."""

from __future__ import annotations

import contextlib
from typing import Any

from ..errors import CubeError
from .client import Kube, Resource


def object_refs(manifests: list[dict[str, Any]]) -> list[dict[str, str]]:
    """What to record (and later delete) of the submitted objects."""
    return [
        {
            "apiVersion": m["apiVersion"],
            "kind": m["kind"],
            "name": m["metadata"]["name"],
            "namespace": m["metadata"]["namespace"],
        }
        for m in manifests
    ]


async def create_all(kube: Kube, manifests: list[dict[str, Any]]) -> None:
    """Create every object in order; if one fails, those created before it are removed."""
    created: list[dict[str, Any]] = []
    try:
        for obj in manifests:
            await kube.create(obj)
            created.append(obj)
    except BaseException:
        for obj in reversed(created):
            with contextlib.suppress(CubeError):
                meta = obj["metadata"]
                await kube.delete(Resource.of(obj), meta["name"], meta.get("namespace"))
        raise


def token_secret(
    name: str, owner: dict[str, Any], values: dict[str, str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A Secret ``name`` beside ``owner`` (an object's metadata: namespace, labels) holding
    ``values``, and the container ``env`` entries that take them from it: the token stays out
    of the job's object, which more people may read than its pods' secrets."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": owner["namespace"],
            "labels": dict(owner.get("labels") or {}),
        },
        "type": "Opaque",
        "stringData": dict(values),
    }
    env = [{"name": k, "valueFrom": {"secretKeyRef": {"name": name, "key": k}}} for k in values]
    return secret, env
