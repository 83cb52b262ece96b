"""The rules a result must follow, per task type, and label-set defaults."""

from __future__ import annotations

from typing import Any

import pytest

from cube_lab.errors import InvalidInput
from cube_lab.labeling.annotations import Target, check_result
from cube_lab.labeling.labelset import normalize_labels

IMAGE = Target("image-bbox", ("cat", "dog"), width=40, height=30)
SINGLE = Target("image-class", ("cat", "dog"))
MULTI = Target("text-class", ("a", "b"), multi_label=True)
NER = Target("text-ner", ("PER",), text="Alice met Bob")


def box(**kw: Any) -> dict[str, Any]:
    return {"boxes": [{"label": "cat", "x": 0, "y": 0, "w": 40, "h": 30, **kw}]}


@pytest.mark.parametrize(
    "target, result, submit, message",
    [
        (IMAGE, box(x=0.5), False, "lies outside the image"),
        (IMAGE, box(y=-1, h=5), False, "lies outside the image"),
        (IMAGE, box(w=0), False, "width and height must be positive"),
        (IMAGE, box(x="1"), False, "boxes[0].x must be a number"),
        (IMAGE, box(label="cow"), False, "label 'cow' is not in the label set"),
        (SINGLE, {"labels": ["cat", "dog"]}, False, "one label per item"),
        (SINGLE, {"labels": []}, True, "pick a label before submitting"),
        (SINGLE, {"labels": ["cat", "cat"]}, False, "appears twice"),
        (MULTI, {"labels": "a"}, False, "result.labels must be a list"),
        (NER, {"spans": [{"label": "PER", "start": 0, "end": 4, "text": "Alice"}]}, True, "match"),
        (NER, {"spans": [{"label": "PER", "start": 10, "end": 14}]}, False, "outside the text"),
        (NER, {"spans": [{"label": "PER", "start": True, "end": 2}]}, False, "must be integers"),
        (NER, {"labels": ["PER"]}, False, "unknown result fields ['labels']"),
        (NER, ["PER"], False, "result must be an object"),
    ],
)  # fmt: skip
def test_bad_results(target: Target, result: Any, submit: bool, message: str) -> None:
    with pytest.raises(InvalidInput, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_result(target, result, submit=submit)


def test_good_results_are_normalised() -> None:
    assert check_result(IMAGE, box(score=0.4, id="x")) == box()  # extra keys dropped
    assert check_result(SINGLE, {"labels": []}) == {"labels": []}  # a draft may be empty
    assert check_result(MULTI, {"labels": []}, submit=True) == {"labels": []}
    assert check_result(MULTI, {"labels": ["b", "a"]}, submit=True) == {"labels": ["b", "a"]}
    span = {"label": "PER", "start": 10, "end": 13}
    assert check_result(NER, {"spans": [span]}) == {"spans": [{**span, "text": "Bob"}]}
    prediction = {"labels": ["dog"], "scores": {"cat": 0.1, "dog": 0.9}}
    assert check_result(SINGLE, prediction, scored=True) == prediction
    with pytest.raises(InvalidInput, match="score must be between 0 and 1"):
        check_result(IMAGE, box(score=1.5), scored=True)


def test_label_set_defaults() -> None:
    labels = normalize_labels(["cat", {"name": "dog", "hotkey": "1", "color": "#ABCDEF"}])
    assert labels == [
        {"name": "cat", "color": "#e6194b", "hotkey": "2"},
        {"name": "dog", "color": "#abcdef", "hotkey": "1"},
    ]
    many = normalize_labels([f"l{i}" for i in range(11)])
    assert [x["hotkey"] for x in many] == [*"123456789", "", ""]
    assert normalize_labels("a, b") == normalize_labels(["a", "b"])
    for bad, message in (
        ([], "non-empty list"),
        (["a", "a"], "duplicate labels"),
        ([{"name": "a", "hotkey": [1]}], "invalid hotkey"),
        ([{"name": "a", "color": "red"}], "invalid color"),
        ([{"name": "a", "hotkey": "1"}, {"name": "b", "hotkey": "1"}], "used by more than one"),
        ([{"name": "a", "shortcut": "x"}], "unknown label fields"),
    ):
        with pytest.raises(InvalidInput, match=message):
            normalize_labels(bad)
