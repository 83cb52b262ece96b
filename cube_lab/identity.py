"""Who is calling: the one object every service takes to decide what a caller may see."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import InvalidInput
from .locale.messages import _t

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
NAME_RULE = (
    "use 1-128 characters: letters, digits, '.', '_' or '-', starting with a letter or digit"
)


@dataclass(frozen=True)
class Caller:
    username: str
    groups: tuple[str, ...] = field(default_factory=tuple)
    admin: bool = False

    def may_change(self, owner: str) -> bool:
        """Whether the caller may change what ``owner`` made read-only (course material): its
        owner and admins may."""
        return self.admin or self.username == owner


def check_name(value: object, what: str) -> str:
    """Validate a user-chosen name (model, project, alias) and say the rule when it fails."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(
            _t("{what} is required", what=what),
            _t("Give a {what}; {NAME_RULE}.", what=what, NAME_RULE=NAME_RULE),
        )
    if not NAME_RE.match(value):
        raise InvalidInput(
            _t("invalid {what} {value!r}", what=what, value=value),
            _t("A {what} must {NAME_RULE}.", what=what, NAME_RULE=NAME_RULE),
        )
    return value
