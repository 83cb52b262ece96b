"""A faster way to call a fitted scikit-learn random forest (or extra-trees) on a few rows.

A forest's ``predict`` runs each tree through joblib, and scikit-learn wraps every one of
those calls in a config context and a fresh warnings filter: on a 20-tree forest and two rows
that wrapping is ~2.5 ms of the ~3 ms a call takes (measured here), more than the trees
themselves. A model server calls the same model thousands of times a second, so for forests
with one output it checks the input once and calls each tree's own ``predict_proba`` /
``predict`` in order, summing exactly as scikit-learn does (same order, same float64
accumulator), so the answers are identical (``tests/serving/test_forest.py`` checks that).
Rows scikit-learn must look at itself (missing values, non-numbers) take its own path.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class ForestRunner:
    """``predict`` / ``predict_proba`` of a single-output forest without the joblib layer."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.trees = list(model.estimators_)
        self.is_classifier = hasattr(model, "classes_")

    @staticmethod
    def supports(model: Any) -> bool:
        try:
            from sklearn.ensemble._forest import BaseForest
        except ImportError:
            return False
        return (
            isinstance(model, BaseForest)
            and getattr(model, "n_outputs_", None) == 1
            and bool(getattr(model, "estimators_", None))
            and hasattr(model, "predict")  # not RandomTreesEmbedding
            and type(model).__module__.startswith("sklearn.")  # a subclass may predict otherwise
        )

    @staticmethod
    def _rows(x: np.ndarray) -> np.ndarray | None:
        """float32 C-ordered rows (what the trees take), or None when scikit-learn itself must
        look at them (missing values: some forests route NaN; infinities get its error)."""
        if x.dtype.kind not in "biuf":
            return None
        rows = np.ascontiguousarray(x, dtype=np.float32)
        return rows if np.isfinite(rows).all() else None

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        rows = self._rows(x)
        if rows is None:
            return self.model.predict_proba(x)
        proba = np.zeros((rows.shape[0], len(self.model.classes_)), dtype=np.float64)
        for tree in self.trees:
            proba += tree.predict_proba(rows, check_input=False)
        proba /= len(self.trees)
        return proba

    def predict(self, x: np.ndarray) -> np.ndarray:
        if self.is_classifier:
            return self.model.classes_.take(np.argmax(self.predict_proba(x), axis=1), axis=0)
        rows = self._rows(x)
        if rows is None:
            return self.model.predict(x)
        total = np.zeros(rows.shape[0], dtype=np.float64)
        for tree in self.trees:
            total += tree.predict(rows, check_input=False)
        total /= len(self.trees)
        return total
