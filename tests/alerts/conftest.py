"""What the alert tests share: a local webhook receiver that records what reaches it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alert_util import Hooks


@pytest.fixture
def hooks() -> Iterator[Hooks]:
    h = Hooks()
    yield h
    h.close()
