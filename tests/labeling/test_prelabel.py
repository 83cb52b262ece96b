"""Pre-labels from registered models (scikit-learn on texts and on pixels, a Python
predictor for boxes): kept in `prediction`, never in `result`, cut at the threshold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pytest
from labeling_util import make_csv
from PIL import Image

from cube_lab.errors import InvalidInput, NotFound
from cube_lab.identity import Caller

ALICE = Caller("alice")
GOOD = ["great movie", "loved it, great", "wonderful and great", "great fun"]
BAD = ["awful film", "boring and awful", "terrible, awful", "awful acting"]


def _text_model(tmp_path: Path) -> Path:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(TfidfVectorizer(), LogisticRegression(C=10))
    model.fit(GOOD + BAD, ["pos"] * 4 + ["neg"] * 4)
    path = tmp_path / "sentiment.joblib"
    joblib.dump(model, path)
    return path


def test_text_classifier_prelabels_apart_from_results(ws: Any, tmp_path: Path) -> None:
    ws.registry.register(ALICE, name="sentiment", path=_text_model(tmp_path))
    texts = ["a great great film", "so awful", "great", "awful awful"]
    ws.datasets.create(ALICE, "reviews", make_csv(tmp_path / "r.csv", texts))
    ws.labeling.create(
        ALICE, "mood", dataset="reviews", type="text-class", labels=["pos", "neg", "meh"]
    )
    mine = ws.labeling.next(ALICE, "alice", "mood")  # an assigned task gets one too
    ws.labeling.save(ALICE, "alice", "mood", mine.id, {"labels": ["meh"]})
    assert ws.labeling.prelabel(ALICE, "alice", "mood", "sentiment", threshold=0.5) == 4
    tasks = ws.labeling.list_tasks(ALICE, "alice", "mood")["tasks"]
    assert [t.prediction["labels"] for t in tasks] == [["pos"], ["neg"], ["pos"], ["neg"]]
    for task in tasks:
        scores = task.prediction["scores"]
        assert set(scores) == {"pos", "neg"} and abs(sum(scores.values()) - 1) < 1e-4
        assert scores[task.prediction["labels"][0]] >= 0.5
        assert task.prediction_model == "sentiment:1"
    assert tasks[0].result == {"labels": ["meh"]}  # the human's answer is untouched
    assert all(t.result is None for t in tasks[1:])
    assert ws.labeling.get(ALICE, "alice", "mood").progress.prelabeled == 4
    # a high threshold leaves tasks without a proposal; limit counts tasks
    assert ws.labeling.prelabel(ALICE, "alice", "mood", "sentiment", threshold=0.999) == 0
    assert ws.labeling.prelabel(ALICE, "alice", "mood", "sentiment", limit=1) == 1


def test_image_classifier_on_grayscale_pixels(ws: Any, tmp_path: Path) -> None:
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    # 16 features = 4x4 grayscale pixels in 0..1; classes are indexes into the label set
    x = np.vstack([rng.uniform(0.0, 0.3, (20, 16)), rng.uniform(0.7, 1.0, (20, 16))])
    model = LogisticRegression().fit(x, [0] * 20 + [1] * 20)
    joblib.dump(model, tmp_path / "light.joblib")
    ws.registry.register(ALICE, name="light", path=tmp_path / "light.joblib")
    folder = tmp_path / "pics"
    folder.mkdir()
    shades = [20, 240, 30, 220]
    for i, shade in enumerate(shades):
        Image.new("RGB", (40, 24), (shade, shade, shade)).save(folder / f"p{i}.png")
    ws.datasets.create(ALICE, "pics", folder)
    ws.labeling.create(ALICE, "shade", dataset="pics", type="image-class", labels=["dark", "light"])
    assert ws.labeling.prelabel(ALICE, "alice", "shade", "light", version=1) == 4
    tasks = ws.labeling.list_tasks(ALICE, "alice", "shade")["tasks"]
    assert [t.prediction["labels"] for t in tasks] == [["dark"], ["light"], ["dark"], ["light"]]
    with pytest.raises(InvalidInput, match="cannot pre-label image-bbox tasks"):
        ws.labeling.create(
            ALICE, "boxes", dataset="pics", type="image-bbox", labels=["dark", "light"]
        )
        ws.labeling.prelabel(ALICE, "alice", "boxes", "light")
    with pytest.raises(NotFound):
        ws.labeling.prelabel(ALICE, "alice", "shade", "missing-model")


PREDICTOR = """
class Predictor:
    def __init__(self, path):
        self.path = path

    def prelabel(self, item):
        w, h = item["width"], item["height"]
        if item["name"].startswith("far"):
            return {"boxes": [{"label": "cat", "x": w - 2, "y": 0, "w": 10, "h": 10,
                               "score": 0.9}]}
        return {"boxes": [
            {"label": "cat", "x": 1, "y": 2, "w": w // 2, "h": h // 2, "score": 0.91},
            {"label": "dog", "x": 0, "y": 0, "w": 3, "h": 3, "score": 0.2},
        ]}
"""


def test_python_predictor_proposes_boxes(ws: Any, tmp_path: Path) -> None:
    model = tmp_path / "detector"
    model.mkdir()
    (model / "predictor.py").write_text(PREDICTOR)
    ws.registry.register(ALICE, name="detector", path=model)
    folder = tmp_path / "pics"
    folder.mkdir()
    for i in range(3):
        Image.new("RGB", (40, 30)).save(folder / f"img{i}.png")
    ws.datasets.create(ALICE, "pics", folder)
    ws.labeling.create(ALICE, "pets", dataset="pics", type="image-bbox", labels=["cat", "dog"])
    assert ws.labeling.prelabel(ALICE, "alice", "pets", "detector", threshold=0.5) == 3
    task = ws.labeling.next(ALICE, "alice", "pets")
    assert task.prediction == {
        "boxes": [{"label": "cat", "x": 1, "y": 2, "w": 20, "h": 15, "score": 0.91}]
    }
    assert task.result is None and task.prediction_model == "detector:1"
    # the annotator accepts the proposal: it becomes a result, the prediction stays as it was
    accepted = {"boxes": [{k: v for k, v in task.prediction["boxes"][0].items() if k != "score"}]}
    saved = ws.labeling.save(ALICE, "alice", "pets", task.id, accepted, submit=True)
    assert saved.result == accepted and saved.prediction == task.prediction

    Image.new("RGB", (40, 30)).save(folder / "far.png")
    ws.datasets.create(ALICE, "far", folder)
    ws.labeling.create(ALICE, "far", dataset="far", type="image-bbox", labels=["cat", "dog"])
    with pytest.raises(InvalidInput) as err:
        ws.labeling.prelabel(ALICE, "alice", "far", "detector")
    assert "far.png" in err.value.error and "outside the image" in err.value.error


async def test_prelabel_over_rest(api: Any, jp_root_dir: Path, tmp_path: Path) -> None:
    model = _text_model(tmp_path)
    (jp_root_dir / "sentiment.joblib").write_bytes(model.read_bytes())
    status, _ = await api(
        "alice", "POST", "models", {"name": "sentiment", "path": "sentiment.joblib"}
    )
    assert status == 201
    make_csv(jp_root_dir / "r.csv", ["great", "awful"])
    assert (await api("alice", "POST", "datasets", {"name": "r", "path": "r.csv"}))[0] == 201
    body = {"name": "m", "dataset": "r", "type": "text-class", "labels": ["pos", "neg"]}
    assert (await api("alice", "POST", "labeling", body))[0] == 201
    status, answer = await api(
        "alice", "POST", "projects/alice/labeling/m/prelabel", {"model": "sentiment"}
    )
    assert (status, answer) == (200, {"prelabeled": 2})
    status, task = await api("alice", "POST", "projects/alice/labeling/m/next")
    assert task["prediction"]["labels"] == ["pos"] and task["result"] is None
    status, body = await api(
        "alice",
        "POST",
        "projects/alice/labeling/m/prelabel",
        {"model": "sentiment", "threshold": 2},
    )
    assert status == 400 and "threshold" in body["error"]
