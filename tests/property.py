"""Hypothesis profiles: the same examples on every run by default, more of them on demand.

- ``ci`` (the default): ``derandomize=True``, so a run draws the same examples every time
  and a failure on one machine is the same failure on every other; no example database.
- ``long``: ``HYPOTHESIS_PROFILE=long make pytest`` draws fresh random examples, ``LONG_FACTOR``
  times as many, for the nightly-style hunt (a failure it finds prints its seed and
  ``@reproduce_failure`` blob; add the example with ``@example`` so CI keeps it).

A test sets its own count with ``@settings(max_examples=examples(400))``: 400 in CI.
"""

from __future__ import annotations

import os

from hypothesis import settings

LONG_FACTOR = 10

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("long", derandomize=False, print_blob=True)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


def examples(count: int) -> int:
    """How many examples a property test with ``count`` in CI draws in this profile."""
    return count * LONG_FACTOR if PROFILE == "long" else count
