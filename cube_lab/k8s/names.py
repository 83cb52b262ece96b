"""Kubernetes object names: DNS-1123 labels (RFC 1035 style: a letter first)."""

from __future__ import annotations

import re

MAX_LABEL = 63
_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def k8s_name(text: str, max_len: int = 50) -> str:
    """``text`` made a valid object name: lower case, ``-`` for the rest, a letter first.

    50 characters by default, so operators can append ``-worker-12`` and stay within 63."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:max_len].strip("-")
    return name if name and name[0].isalpha() else f"job-{name}"[:max_len].strip("-")


def is_label(name: str) -> bool:
    return len(name) <= MAX_LABEL and bool(_LABEL.match(name))
