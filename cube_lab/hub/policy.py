"""Which profiles a user may start and which project group pays for it.

Pure functions over the settings and the user's groups, shared by both spawners, the
cube-admin service and the tests.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import Forbidden, InvalidInput
from ..locale.messages import _t
from .quotas import GroupPolicy
from .settings import ADMIN_GROUP, HubSettings, Profile

log = logging.getLogger(__name__)


def policies(groups: Iterable[tuple[str, Mapping[str, Any] | None]]) -> dict[str, GroupPolicy]:
    """Project-group policies from (name, properties) pairs. A group whose properties do not
    parse is skipped with a warning: one bad edit must not lock every member out."""
    found: dict[str, GroupPolicy] = {}
    for name, properties in groups:
        if name == ADMIN_GROUP:
            continue
        try:
            found[name] = GroupPolicy.from_properties(name, properties)
        except InvalidInput as exc:
            log.warning("cube-lab: ignoring group %s: %s (%s)", name, exc.error, exc.detail)
    return dict(sorted(found.items()))


def offered(settings: HubSettings, groups: Mapping[str, GroupPolicy]) -> list[Profile]:
    """The profiles a user in ``groups`` may start, in settings order: the open ones plus every
    profile one of their groups allows. Others are never offered."""
    allowed = set(settings.open_profiles)
    for policy in groups.values():
        allowed.update(policy.profiles)
    return [p for name, p in settings.profiles.items() if name in allowed]


def choose(
    settings: HubSettings,
    groups: Mapping[str, GroupPolicy],
    profile_name: str | None,
    project: str | None,
) -> tuple[Profile, GroupPolicy | None]:
    """The profile to start and the group whose quota it takes (None: an open profile used
    outside any group). Raises Forbidden with the reason when the user may not."""
    offer = offered(settings, groups)
    if not offer:
        raise Forbidden(
            _t("no resource profile is available to you"),
            _t("Ask an admin to add you to a project group."),
        )
    if profile_name:
        profile = settings.profile(profile_name)
    else:
        profile = next((p for p in offer if p.default), offer[0])
    if project:
        policy = groups.get(project)
        if policy is None:
            raise Forbidden(
                _t("you are not a member of project group {project!r}", project=project),
                _t("Your project groups: {value}.", value=", ".join(groups) or "none"),
            )
        if profile.name not in policy.profiles and profile.name not in settings.open_profiles:
            raise Forbidden(
                _t(
                    "project {project} may not use profile {name!r}",
                    project=project,
                    name=profile.name,
                ),
                _t("It may use: {value}.", value=", ".join(policy.profiles) or "none"),
            )
        return profile, policy
    candidates = [g for g in groups.values() if profile.name in g.profiles]
    if candidates:
        return profile, candidates[0]
    if profile.name in settings.open_profiles:
        return profile, None
    raise Forbidden(
        _t("profile {name!r} is not available to you", name=profile.name),
        _t("You may start: {value}.", value=", ".join(p.name for p in offer)),
    )
