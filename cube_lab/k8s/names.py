"""Kubernetes object names: DNS-1123 labels (RFC 1035 style: a letter first).

``k8s_name`` makes a readable name from free text (a job's display name) and may map two
texts to one name: objects named with it carry a unique id as well. Names that stand for a
*user or group* (their volumes, namespaces, labels) go through ``cube_lab.names`` instead,
which never does: ``user_label`` and ``identity_name`` here.
"""

from __future__ import annotations

import re

from ..names import label_value, object_name

__all__ = ["MAX_LABEL", "identity_name", "is_label", "k8s_name", "user_label"]

MAX_LABEL = 63
_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")


def k8s_name(text: str, max_len: int = 50) -> str:
    """``text`` made a valid object name: lower case, ``-`` for the rest, a letter first.

    50 characters by default, so operators can append ``-worker-12`` and stay within 63."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:max_len].strip("-")
    return name if name and name[0].isalpha() else f"job-{name}"[:max_len].strip("-")


def is_label(name: str) -> bool:
    return len(name) <= MAX_LABEL and bool(_LABEL.match(name))


def user_label(name: str) -> str:
    """A label value naming a user or group: distinct names, distinct values."""
    return label_value(name)


def identity_name(name: str, prefix: str, max_len: int = MAX_LABEL) -> str:
    """An object name for a user or group (``prefix`` + its slug, at most ``max_len``)."""
    return object_name(name, prefix, max_len)


def user_claim(username: str) -> str:
    """The volume claim of a user's home under the hub (KubeSpawner's ``claim-{user_server}``
    for the default server of a hub user name, which cube-lab keeps safe)."""
    return f"claim-{username}"


def project_claim(group: str) -> str:
    """The shared volume claim of a project group."""
    return identity_name(group, "cube-project-")
