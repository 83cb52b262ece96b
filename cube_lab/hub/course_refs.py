"""References to a teacher's registered models and dataset versions in a hand-out:
``[PROJECT/]NAME[:VERSION]`` (the project defaults to the teacher's personal one, the version
to the newest), checked by cube-admin before the cube-lab service looks them up."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t

REF_RE = re.compile(
    r"^(?:(?P<project>[A-Za-z0-9][A-Za-z0-9._-]{0,127})/)?"
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,127})(?::(?P<version>[A-Za-z0-9._-]{1,64}))?$"
)
MAX_REFS = 20  # models or datasets in one hand-out


@dataclass(frozen=True)
class Ref:
    given: str
    project: str | None
    name: str
    version: str | None


def parse_refs(values: Any, what: str) -> list[Ref]:
    """A list of references, or one string of them separated by commas, spaces or newlines."""
    if values is None or values == "":
        return []
    if isinstance(values, str):
        values = [v for v in re.split(r"[\s,]+", values) if v]
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InvalidInput(
            _t("{what} must be a list of references", what=what),
            _t('e.g. ["resnet:3", "ai101/pets:v2"]'),
        )
    if len(values) > MAX_REFS:
        raise InvalidInput(
            _t("at most {n} {what} in one hand-out", n=MAX_REFS, what=what),
            _t("Hand out the rest under another name."),
        )
    refs = []
    for value in values:
        found = REF_RE.match(value.strip())
        if found is None:
            raise InvalidInput(
                _t("{value!r} is not a reference to one of your {what}", value=value, what=what),
                _t("Write [PROJECT/]NAME[:VERSION], e.g. resnet:3 or ai101/pets:v2."),
            )
        refs.append(Ref(value.strip(), found["project"], found["name"], found["version"]))
    return refs
