"""Model-assisted pre-labels: run a registered model over a project's open tasks and keep
what it proposes in ``prediction`` (never in ``result``), for the annotator to accept or fix.

Two kinds of model load in this process:

- a scikit-learn classifier (``predict_proba``, else ``predict`` with score 1) for
  classification projects: text projects hand it the raw texts (register a Pipeline that
  vectorizes them); image projects hand it each image as grayscale pixels scaled to 0..1,
  resized to a square whose side is the square root of the model's ``n_features_in_``
  (64 features: 8x8). Its ``classes_`` are label names, or indexes into the label set.
- a Python predictor: a registered folder with ``predictor.py`` defining
  ``class Predictor(path)`` with ``prelabel(item: dict) -> dict``. ``item`` has ``kind``,
  ``name``, and ``path``/``width``/``height`` (images) or ``text``/``meta`` (texts); the
  answer is the task type's result shape with a ``score`` per box or span (or ``scores``
  per label). Detection and NER pre-labels come this way.

Proposals under ``threshold`` are dropped; a task left with nothing gets no prediction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update

from ..errors import InvalidInput
from ..identity import Caller
from ..locale.messages import _t
from ..store.models import DatasetItem, LabelingTask
from .annotations import Target, check_result

if TYPE_CHECKING:
    from .service import LabelingService

BATCH = 256
OPEN = ("new", "assigned")


@dataclass
class Pending:
    task_id: int
    item: dict[str, Any]
    target: Target


def _check_args(
    model: object, version: object, threshold: object, limit: object
) -> tuple[str, str, float, int | None]:
    if not isinstance(model, str) or not model:
        raise InvalidInput(_t("model is required"), _t("Give the name of a registered model."))
    if version is not None and (isinstance(version, bool) or not isinstance(version, int | str)):
        raise InvalidInput(
            _t("version must be a version number"), _t("got {version!r}", version=version)
        )
    if threshold is None:
        threshold = 0.5
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise InvalidInput(
            _t("threshold must be a number between 0 and 1"),
            _t("got {threshold!r}", threshold=threshold),
        )
    if not 0 <= threshold <= 1:
        raise InvalidInput(
            _t("threshold must be between 0 and 1"), _t("got {threshold}", threshold=threshold)
        )
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidInput(_t("limit must be a positive integer"), _t("got {limit!r}", limit=limit))
    return model, str(version) if version is not None else "latest", float(threshold), limit


class SklearnLabeler:
    def __init__(self, model: Any, task_type: str, labels: tuple[str, ...]) -> None:
        if not task_type.endswith("-class"):
            raise InvalidInput(
                _t(
                    "a scikit-learn classifier cannot pre-label {task_type} tasks",
                    task_type=task_type,
                ),
                _t(
                    "Register a folder with predictor.py (class Predictor with "
                    "prelabel(item)) for boxes or spans."
                ),
            )
        self.model = model
        self.task_type = task_type
        # numpy scalars as plain Python values (np.int64 is no int)
        classes = [c.item() if hasattr(c, "item") else c for c in getattr(model, "classes_", [])]
        self.names = [self._name(c, labels) for c in classes]
        if not any(n in labels for n in self.names):
            raise InvalidInput(
                _t("the model's classes {value} match no label of the project", value=classes[:10]),
                _t(
                    "Labels: {value}. Train it on these names (or on their indexes).",
                    value=", ".join(labels),
                ),
            )
        features = getattr(model, "n_features_in_", None)
        self.side = 0
        if task_type == "image-class":
            side = math.isqrt(features or 0)
            if not features or side * side != features:
                raise InvalidInput(
                    _t(
                        "the model takes {features} features, not a square image", features=features
                    ),
                    _t("Train it on flattened grayscale images of side x side pixels (0..1)."),
                )
            self.side = side
        elif features is not None and not hasattr(model, "steps"):
            raise InvalidInput(
                _t("the model takes {features} numeric features, not texts", features=features),
                _t(
                    "Register a Pipeline that vectorizes raw text (e.g. TfidfVectorizer +"
                    " LogisticRegression)."
                ),
            )

    @staticmethod
    def _name(cls: Any, labels: tuple[str, ...]) -> str:
        if isinstance(cls, str):
            return cls
        if isinstance(cls, int | float) and float(cls).is_integer() and 0 <= cls < len(labels):
            return labels[int(cls)]
        return str(cls)

    def _features(self, items: list[dict[str, Any]]) -> Any:
        if self.task_type == "text-class":
            return [item["text"] for item in items]
        import numpy as np
        from PIL import Image

        rows = []
        for item in items:
            with Image.open(item["path"]) as image:
                small = image.convert("L").resize((self.side, self.side), Image.BILINEAR)
                rows.append(np.asarray(small, dtype=np.float64).reshape(-1) / 255.0)
        return np.stack(rows)

    def predict(self, items: list[dict[str, Any]], targets: list[Target]) -> list[dict[str, Any]]:
        x = self._features(items)
        if hasattr(self.model, "predict_proba"):
            probabilities = self.model.predict_proba(x)
        else:  # no probabilities: the predicted class with score 1
            predicted = list(self.model.predict(x))
            probabilities = [
                [1.0 if c == p else 0.0 for c in self.model.classes_] for p in predicted
            ]
        out = []
        for row, target in zip(probabilities, targets, strict=True):
            scores: dict[str, float] = {}
            for name, p in zip(self.names, row, strict=True):
                if name in target.labels:
                    scores[name] = round(float(p), 6)
            ranked = sorted(scores, key=lambda n: -scores[n])
            out.append({"labels": ranked, "scores": scores})
        return out


class PythonLabeler:
    def __init__(self, obj: Any) -> None:
        if not callable(getattr(obj, "prelabel", None)):
            raise InvalidInput(
                _t("the model's Predictor class has no prelabel(item) method"),
                _t("Add prelabel(item: dict) -> dict returning the result shape with scores."),
            )
        self.obj = obj

    def predict(self, items: list[dict[str, Any]], targets: list[Target]) -> list[dict[str, Any]]:
        return [self.obj.prelabel(dict(item)) for item in items]


def load_labeler(path: Path, flavor: str, task_type: str, labels: tuple[str, ...]) -> Any:
    from ..serving import loaders

    try:
        if flavor == "sklearn":
            return SklearnLabeler(loaders.load_sklearn(path).model, task_type, labels)  # type: ignore[attr-defined]
        if (path.is_dir() and (path / "predictor.py").is_file()) or path.name == "predictor.py":
            return PythonLabeler(loaders.load_custom(path).obj)  # type: ignore[attr-defined]
    except loaders.LoadError as exc:
        raise InvalidInput(_t("cannot load the model: {exc}", exc=exc)) from None
    raise InvalidInput(
        _t("cannot pre-label with a {flavor} model", flavor=flavor),
        _t(
            "Use a scikit-learn classifier (classification) or a folder with predictor.py"
            " defining class Predictor(path) with prelabel(item)."
        ),
    )


def _keep(prediction: dict[str, Any], threshold: float, multi: bool) -> dict[str, Any] | None:
    """Drop what scores under ``threshold``; None when nothing is left."""
    if "labels" in prediction:
        scores = prediction.get("scores", {})
        ranked = [n for n in prediction["labels"] if scores.get(n, 1.0) >= threshold]
        labels = ranked if multi else ranked[:1]
        return {"labels": labels, "scores": scores} if labels else None
    key = "boxes" if "boxes" in prediction else "spans"
    kept = [e for e in prediction[key] if e["score"] >= threshold]
    return {key: kept} if kept else None


def run(
    service: LabelingService,
    caller: Caller,
    project: str,
    name: str,
    model: object,
    version: object,
    threshold: object,
    limit: object,
) -> int:
    model_name, ref, cut, most = _check_args(model, version, threshold, limit)
    store = service.store
    with store.read() as s:
        ctx = service._context(s, caller, project, name)
        query = (
            select(LabelingTask.id, DatasetItem)
            .join(DatasetItem, DatasetItem.id == LabelingTask.item_id)
            .where(LabelingTask.labeling_id == ctx.labeling_id, LabelingTask.status.in_(OPEN))
            .order_by(LabelingTask.id)
        )
        rows = s.execute(query.limit(most) if most else query).all()
        source = Path(ctx.source)
        pending = [
            Pending(task_id, _item_input(item, ctx.kind, source), ctx.target(item))
            for task_id, item in rows
        ]
    registry = service._registry()
    found = registry.get_version(caller, ctx.project, model_name, ref)
    artifact = registry.download(caller, ctx.project, model_name, found.version)
    labeler = load_labeler(artifact.path, found.flavor, ctx.type, ctx.labels)
    tag = f"{model_name}:{found.version}"
    predictions: dict[int, dict[str, Any]] = {}
    for start in range(0, len(pending), BATCH):
        batch = pending[start : start + BATCH]
        try:
            answers = labeler.predict([p.item for p in batch], [p.target for p in batch])
        except (ValueError, TypeError, OSError) as exc:
            raise InvalidInput(
                _t("the model failed on this project's items: {exc}", exc=exc)
            ) from None
        for p, answer in zip(batch, answers, strict=True):
            try:
                # any number of labels here: a single-label project keeps the best below
                checked = check_result(replace(p.target, multi_label=True), answer, scored=True)
            except InvalidInput as exc:
                raise InvalidInput(
                    _t(
                        "the model's answer for {name} is not a valid prediction: {error}",
                        name=p.item["name"],
                        error=exc.error,
                    ),
                    exc.detail,
                ) from None
            kept = _keep(checked, cut, ctx.multi_label)
            if kept is not None:
                predictions[p.task_id] = kept
    with store.write() as s:
        count = 0
        for task_id, prediction in predictions.items():
            done = s.execute(
                update(LabelingTask)
                .where(LabelingTask.id == task_id, LabelingTask.status.in_(OPEN))
                .values(prediction=prediction, prediction_model=tag)
                .execution_options(synchronize_session=False)
            )
            count += done.rowcount
    return count


def _item_input(item: DatasetItem, kind: str, source: Path) -> dict[str, Any]:
    if kind == "images":
        return {
            "kind": "image",
            "name": item.name,
            "path": str(source / item.name),
            "width": item.width,
            "height": item.height,
        }
    return {"kind": "text", "name": item.name, "text": item.text, "meta": item.meta or {}}
