"""Kubernetes plumbing shared by every capability: names, the API client, its errors.

Importing this package does not import ``kubernetes_asyncio``; ``Kube`` does, on entry.
"""

from __future__ import annotations

from .client import ClusterConfig, Kube, Resource, require
from .errors import ClientMissing, ClusterUnavailable
from .names import is_label, k8s_name

__all__ = [
    "ClientMissing",
    "ClusterConfig",
    "ClusterUnavailable",
    "Kube",
    "Resource",
    "is_label",
    "k8s_name",
    "require",
]
