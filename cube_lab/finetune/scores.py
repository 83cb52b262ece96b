"""How a generated answer is scored against the expected one: exact match, ROUGE-L, or the
user's Python scorer (``def score(prediction, expected, **row) -> float``).

ROUGE-L is the F-measure of the longest common subsequence of tokens (Lin, 2004), as
Google's ``rouge-score`` computes it without stemming: text lowercased, runs of ``a-z0-9``
as words. Unlike ``rouge-score``, which drops every other character, each CJK character is a
token of its own, so Chinese answers are scored too (as ``rouge-chinese`` does by character).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from .user_code import load_function

_TOKEN = re.compile(
    r"[a-z0-9]+|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]"
)

Scorer = Callable[..., float]


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def exact_match(prediction: str, expected: str) -> float:
    """1.0 when the two are the same text up to case and spacing, else 0.0."""
    return float(" ".join(prediction.lower().split()) == " ".join(expected.lower().split()))


def _lcs(a: list[str], b: list[str]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal = 0
        for j, y in enumerate(b, 1):
            above = row[j]
            row[j] = diagonal + 1 if x == y else max(row[j], row[j - 1])
            diagonal = above
    return row[-1]


def rouge_l(prediction: str, expected: str) -> float:
    """ROUGE-L F1 of the prediction against the expected text (0 when either is empty)."""
    ours, theirs = tokens(prediction), tokens(expected)
    if not ours or not theirs:
        return 0.0
    common = _lcs(ours, theirs)
    if not common:
        return 0.0
    precision, recall = common / len(ours), common / len(theirs)
    return 2 * precision * recall / (precision + recall)


def load_scorer(path: str) -> Scorer:
    """``score(prediction, expected, **row) -> float`` from the user's Python file; a result
    that is not a finite number fails with the row it came from."""
    func = load_function(
        path, "scorer_file", "score", "score(prediction, expected, **row) -> float"
    )

    def score(prediction: str, expected: str, **row: Any) -> float:
        value = func(prediction, expected, **row)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise InvalidInput(
                _t("score in {path} must return a finite number", path=path),
                _t("got {value!r}", value=value),
            )
        return float(value)

    return score
