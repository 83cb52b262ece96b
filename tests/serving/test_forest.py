"""The model server's direct forest path gives exactly scikit-learn's answers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
    RandomTreesEmbedding,
)

from cube_lab.serving.forest import ForestRunner
from cube_lab.serving.loaders import SklearnPredictor

RNG = np.random.default_rng(7)


def rows(x: np.ndarray, n: int) -> np.ndarray:
    """Rows around and outside the training data, as float64 like OIP FP64 tensors."""
    lo, hi = x.min(axis=0) - 1, x.max(axis=0) + 1
    return RNG.uniform(lo, hi, size=(n, x.shape[1]))


@pytest.mark.parametrize("cls", [RandomForestClassifier, ExtraTreesClassifier])
def test_classifiers_match_scikit_learn(cls: Any) -> None:
    x, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]  # string classes too
    for target in (y, names, y == 2):
        model = cls(n_estimators=17, random_state=0).fit(x, target)
        runner = ForestRunner(model)
        for n in (1, 2, 250):
            batch = rows(x, n)
            assert np.array_equal(runner.predict_proba(batch), model.predict_proba(batch))
            assert np.array_equal(runner.predict(batch), model.predict(batch))


@pytest.mark.parametrize("cls", [RandomForestRegressor, ExtraTreesRegressor])
def test_regressors_match_scikit_learn(cls: Any) -> None:
    x, y = load_diabetes(return_X_y=True)
    model = cls(n_estimators=9, random_state=0).fit(x, y)
    batch = rows(x, 64)
    assert np.array_equal(ForestRunner(model).predict(batch), model.predict(batch))


def test_rows_scikit_learn_must_see_take_its_path() -> None:
    x, y = load_iris(return_X_y=True)
    model = RandomForestClassifier(n_estimators=5, random_state=0).fit(x, y)
    runner = ForestRunner(model)
    bad = np.array([[np.inf, 1.0, 1.0, 1.0]])
    with pytest.raises(ValueError) as ours:
        runner.predict(bad)
    with pytest.raises(ValueError) as theirs:
        model.predict(bad)
    assert str(ours.value) == str(theirs.value)
    with_nan = np.array([[np.nan, 3.0, 1.4, 0.2]])  # forests route missing values since 1.4
    assert np.array_equal(runner.predict(with_nan), model.predict(with_nan))


def test_only_single_output_scikit_learn_forests_take_the_direct_path() -> None:
    x, y = load_iris(return_X_y=True)
    two_outputs = RandomForestClassifier(n_estimators=3).fit(x, np.c_[y, y == 1])
    assert not ForestRunner.supports(two_outputs)
    assert not ForestRunner.supports(GradientBoostingClassifier(n_estimators=3).fit(x, y))
    assert not ForestRunner.supports(RandomTreesEmbedding(n_estimators=3).fit(x))
    assert not ForestRunner.supports(RandomForestClassifier())  # not fitted

    class Calibrated(RandomForestClassifier):  # a user's subclass may predict differently
        pass

    Calibrated.__module__ = "my_models"
    assert not ForestRunner.supports(Calibrated(n_estimators=3).fit(x, y))
    forest = RandomForestClassifier(n_estimators=3).fit(x, y)
    assert isinstance(SklearnPredictor(forest).fast, ForestRunner)
