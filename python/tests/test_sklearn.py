"""scikit-learn integration: params, clone, Pipeline, pickling, and the
estimator checks that make sense for a DP estimator (the others are listed
in SKIPPED with the reason)."""

import pickle
from unittest import SkipTest
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import check_estimator

import dplearn


def test_get_set_params_and_clone(cps_schema):
    m = dplearn.LinearRegression(epsilon=0.5, delta=1e-7, schema=cps_schema, random_state=4)
    p = m.get_params()
    assert p["epsilon"] == 0.5 and p["delta"] == 1e-7 and p["schema"] is cps_schema and p["random_state"] == 4
    c = clone(m)
    assert c.get_params()["epsilon"] == 0.5 and c is not m
    c.set_params(epsilon=2.0, mechanism="fm")
    assert c.epsilon == 2.0 and c.mechanism == "fm" and m.epsilon == 0.5
    lg = dplearn.LogisticRegression(classes=["no", "yes"])
    assert clone(lg).get_params()["classes"] == ["no", "yes"]


def test_pipeline_and_cross_val(cps, cps_schema):
    cols = cps_schema.feature_names
    pipe = Pipeline([("select", FunctionTransformer(lambda d: d[cols])),
                     ("dp", dplearn.LinearRegression(epsilon=1, delta=1e-6, schema=cps_schema, random_state=2))])
    X, y = cps.drop(columns=["wage"]), cps["wage"]
    pipe.fit(X, y)
    pred = pipe.predict(X.head(50))
    assert pred.shape == (50,) and np.isfinite(pred).all()
    # predictions are clipped to the declared target range, in original units
    assert (pred >= np.exp(4) - 1e-6).all() and (pred <= np.exp(9) + 1e-6).all()
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.shape == (3,) and np.isfinite(scores).all()


def test_pickle_round_trip(smokeban, smokeban_schema):
    m = dplearn.LogisticRegression(epsilon=1, delta=1e-6, schema=smokeban_schema, random_state=5)
    X, y = smokeban.drop(columns=["smoker"]), smokeban["smoker"]
    m.fit(X, y)
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m.predict_proba(X.head(100)), m2.predict_proba(X.head(100)))
    assert list(m.classes_) == ["no", "yes"]
    assert set(m.predict(X.head(100))) <= {"no", "yes"}
    acc = m.score(X, y)
    assert 0.5 < acc <= 1


def test_logistic_numeric_labels_and_decision_function():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(4000, 3))
    y = (X @ [2.0, -1.0, 0.5] + rng.logistic(size=4000) > 0).astype(int)
    m = dplearn.LogisticRegression(epsilon=2, delta=1e-6, bounds=(-1, 1), random_state=1).fit(X, y)
    assert list(m.classes_) == [0, 1]
    p = m.predict_proba(X[:200])
    np.testing.assert_allclose(p.sum(axis=1), 1)
    d = m.decision_function(X[:200])
    assert ((d > 0) == (m.predict(X[:200]) == 1)).all()
    assert m.score(X, y) > 0.7  # a learnable signal is learnt


# Checks that cannot hold for a DP estimator over public bounds, and why.
SKIPPED = {
    # sample weights would change the sensitivity the guarantee rests on:
    # fit refuses them (TypeError)
    "check_sample_weights_pandas_series": "sample weights refused (they change the sensitivity)",
    "check_sample_weights_not_an_array": "sample weights refused (they change the sensitivity)",
    "check_sample_weights_list": "sample weights refused (they change the sensitivity)",
    "check_sample_weights_shape": "sample weights refused (they change the sensitivity)",
    "check_sample_weights_not_overwritten": "sample weights refused (they change the sensitivity)",
    "check_sample_weights_invariance": "sample weights refused (they change the sensitivity)",
    "check_classifiers_one_label_sample_weights": "sample weights refused (they change the sensitivity)",
}


def _run_checks(est):
    ran, failed = [], []
    for e, check in check_estimator(est, generate_only=True):
        name = getattr(check, "func", check).__name__
        if name in SKIPPED:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                check(e)
            except SkipTest:
                continue
            except Exception as exc:  # collected to report them all at once
                failed.append(f"{name}: {type(exc).__name__}: {str(exc)[:300]}")
        ran.append(name)
    return ran, failed


@pytest.mark.parametrize("est", [
    dplearn.LinearRegression(epsilon=1.0, delta=1e-6, bounds=(-10, 10), target_bounds=(-100, 100), random_state=0),
    dplearn.RobustRegression(epsilon=1.0, delta=1e-6, bounds=(-10, 10), target_bounds=(-100, 100), random_state=0),
    dplearn.LogisticRegression(epsilon=1.0, delta=1e-6, bounds=(-10, 10), random_state=0),
], ids=["linear", "robust", "logistic"])
def test_sklearn_estimator_checks(est):
    ran, failed = _run_checks(est)
    assert len(ran) >= 40, ran  # 40 (regressors) or 42 (classifier) checks in scikit-learn 1.2
    assert not failed, "\n".join(failed)
