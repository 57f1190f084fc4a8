"""scikit-learn estimators over the dplearn core.

Each ``fit`` writes the table to a temporary Parquet file (``_parquet``: the
DataFrame's float64 values bit for bit), the schema to a JSON file, and runs
``dplearn fit`` on them: the mechanisms, their noise, sensitivities and
privacy accounting are the Go code's, never Python's. ``predict`` runs
``dplearn predict --digits 0`` on the written model, so rows are encoded
exactly as in training and every prediction arrives as the very float64
the core computed. Nothing here computes or changes a privacy guarantee; the report
in ``privacy_`` is the core's, parsed.
"""

from __future__ import annotations

import io
import json
import math
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from . import _cli, _parquet
from .ledger import Ledger
from .schema import Schema, frame


class InsecureRandomnessWarning(UserWarning):
    """random_state was given: the noise comes from a deterministic, insecure
    generator and the fit has NO differential privacy guarantee."""


class PrivacyLeakWarning(UserWarning):
    """Something public was taken from the data (e.g. the class labels)."""


@dataclass(frozen=True)
class Release:
    """One noisy quantity the mechanism released."""
    name: str
    entries: int | None = None
    norm: str | None = None
    sensitivity: float | None = None
    noise: str | None = None
    scale: float | None = None


@dataclass(frozen=True)
class PrivacyReport:
    """The core's privacy report of a fit (model file "privacy")."""
    epsilon: float
    delta: float
    mechanism: str
    accountant: str
    private: bool
    neighbouring: str | None
    releases: tuple[Release, ...]
    post_processing: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    randomness: str | None = None
    insecure_randomness: bool = False
    # the privacy unit (a person ID column) and K, the most rows kept per
    # unit, when the fit bounded each person's rows (None: one row is the
    # unit); the core's ``neighbouring`` text states the same
    privacy_unit: str | None = None
    max_rows_per_unit: int | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any], privacy_unit: str | None = None,
                  max_rows_per_unit: int | None = None) -> "PrivacyReport":
        rel = tuple(Release(**{k: r.get(k) for k in Release.__dataclass_fields__}) for r in d.get("releases") or [])
        if privacy_unit is not None:
            # never claim a unit the core did not apply: its neighbouring
            # relation must be the unit one, naming this column and K
            nb = d.get("neighbouring") or ""
            if not (nb.startswith("replace-one-unit") and f'privacy unit "{privacy_unit}"' in nb
                    and f"K = {max_rows_per_unit} " in nb):
                raise _cli.DplearnError(f"the core's report does not state the privacy unit {privacy_unit!r} with "
                                        f"K = {max_rows_per_unit} (neighbouring: {nb!r})")
        return cls(privacy_unit=privacy_unit, max_rows_per_unit=max_rows_per_unit,
                   epsilon=float(d.get("epsilon", 0.0)), delta=float(d.get("delta", 0.0)),
                   mechanism=d.get("mechanism", ""), accountant=d.get("accountant", ""),
                   private=bool(d.get("private", False)), neighbouring=d.get("neighbouring"),
                   releases=rel, post_processing=tuple(d.get("post_processing") or ()),
                   notes=tuple(d.get("notes") or ()), randomness=d.get("randomness"),
                   insecure_randomness=bool(d.get("insecure_randomness", False)), raw=dict(d))




class _DPEstimator(BaseEstimator):
    _kind = "linear"
    _default_mechanism = "gaussian-fm"

    def __init__(self, epsilon: float | None = 1.0, delta: float | None = None, mechanism: str | None = None,
                 schema: Schema | Mapping | str | None = None, bounds: Mapping | None = None,
                 categories: Mapping | None = None, target_bounds=None, ledger: Ledger | str | None = None,
                 random_state: int | None = None, ci_share: float | None = None,
                 options: Mapping[str, Any] | None = None, workers: int = 0, privacy_unit: str | None = None,
                 max_rows_per_unit: int | None = None):
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.schema = schema
        self.bounds = bounds
        self.categories = categories
        self.target_bounds = target_bounds
        self.ledger = ledger
        self.random_state = random_state
        self.ci_share = ci_share
        self.options = options
        self.workers = workers
        self.privacy_unit = privacy_unit
        self.max_rows_per_unit = max_rows_per_unit

    # ---------------------------------------------------------------
    def _more_tags(self):
        return {"non_deterministic": self.random_state is None, "allow_nan": False, "requires_y": True,
                "poor_score": True}

    def _schema_for(self, X: pd.DataFrame, y: pd.Series) -> Schema:
        s = self.schema
        if isinstance(s, Schema):
            return s
        if isinstance(s, str):
            return Schema.load(s)
        if isinstance(s, Mapping):
            return Schema(s)
        if s is not None:
            raise TypeError(f"schema: expected a dplearn.Schema, a dict or a path, got {type(s).__name__}")
        bounds = self.bounds
        if bounds is not None and not isinstance(bounds, Mapping):
            # a sequence of (lo, hi) per column, or one (lo, hi) for all
            seq = list(bounds)
            if len(seq) == 2 and np.isscalar(seq[0]):
                bounds = {str(c): seq for c in X.columns}
            else:
                if len(seq) != X.shape[1]:
                    raise ValueError(f"bounds: {len(seq)} pairs for {X.shape[1]} columns")
                bounds = {str(c): b for c, b in zip(X.columns, seq)}
        elif bounds is not None:
            bounds = {(f"x{k}" if isinstance(k, (int, np.integer)) and f"x{k}" in X.columns else str(k)): v
                      for k, v in bounds.items()}
        return self._target_schema(X, y, bounds)

    def _target_schema(self, X, y, bounds) -> Schema:
        if self.target_bounds is None:
            from .schema import MissingBoundsError
            raise MissingBoundsError(str(y.name), "target range (target_bounds=(lo, hi))")
        return Schema.from_frame(X, str(y.name), bounds=bounds, categories=self.categories,
                                 target_bounds=self.target_bounds)

    def _prepare(self, X, y=None, *, fitting: bool):
        if fitting:
            if isinstance(X, pd.DataFrame):
                Xf = X
                self.feature_names_in_ = np.asarray([str(c) for c in X.columns], dtype=object)
            else:
                Xf = frame(_as_2d(X))
                if hasattr(self, "feature_names_in_"):
                    del self.feature_names_in_
            self.n_features_in_ = Xf.shape[1]
        else:
            if isinstance(X, pd.DataFrame):
                t = self.schema_.target_name
                Xf = X.drop(columns=[c for c in X.columns if str(c) == t])
            else:
                Xf = frame(_as_2d(X), self._train_columns_)
            if Xf.shape[1] != self.n_features_in_:
                raise ValueError(f"X has {Xf.shape[1]} features, but {type(self).__name__} is expecting "
                                 f"{self.n_features_in_} features as input")
        if len(Xf) == 0:
            raise ValueError(f"Found array with 0 sample(s) (shape={Xf.shape}) while a minimum of 1 is required.")
        if Xf.shape[1] == 0:
            raise ValueError(f"Found array with 0 feature(s) (shape={Xf.shape}) while a minimum of 1 is required.")
        for c in Xf.columns:
            if pd.api.types.is_complex_dtype(Xf[c].dtype):
                raise ValueError(f"column {str(c)!r}: Complex data not supported")
        if y is None:
            return Xf, None
        if isinstance(y, pd.DataFrame):
            if y.shape[1] != 1:
                raise ValueError("y should be a 1d array (one target column)")
            y = y.iloc[:, 0]
        if not isinstance(y, pd.Series):
            ya = np.asarray(y)
            if ya.ndim == 2 and ya.shape[1] == 1:
                warnings.warn("A column-vector y was passed when a 1d array was expected.", _DataConversionWarning, stacklevel=3)
                ya = ya.ravel()
            if ya.ndim != 1:
                raise ValueError(f"y should be a 1d array, got an array of shape {ya.shape} instead.")
            if np.iscomplexobj(ya):
                raise ValueError("Complex data not supported")
            y = pd.Series(ya)
        if len(y) != len(Xf):
            raise ValueError(f"Found input variables with inconsistent numbers of samples: [{len(Xf)}, {len(y)}]")
        return Xf, y.reset_index(drop=True)

    def _target_name(self, y: pd.Series) -> str:
        s = self.schema
        if isinstance(s, Schema):
            return s.target_name
        if isinstance(s, Mapping):
            return s["target"]["name"]
        if isinstance(s, str):
            return Schema.load(s).target_name
        return str(y.name) if y.name is not None else "y"

    def _seed(self):
        rs = self.random_state
        if rs is None:
            return None
        warnings.warn("random_state makes the noise deterministic (dplearn's INSECURE seeded generator): "
                      "the fit has NO differential privacy guarantee; use it for tests and experiments only",
                      InsecureRandomnessWarning, stacklevel=3)
        if isinstance(rs, np.random.RandomState):
            return int(rs.randint(0, 2**31 - 1))
        if isinstance(rs, np.random.Generator):
            return int(rs.integers(0, 2**63 - 1))
        if isinstance(rs, (int, np.integer)) and rs >= 0:
            return int(rs)
        raise ValueError(f"random_state: expected a non-negative int, got {rs!r}")

    def _encode_target(self, y: pd.Series, schema: Schema):
        return y, schema

    def _split_unit(self, X, *, fitting: bool):
        """Takes the privacy-unit column out of X (it identifies a person,
        it is not a feature). Fitting needs it; predicting drops it if
        present. Returns (X without it, its values as text or None): the
        core groups rows by the unit's text, as it reads a CSV field."""
        u = self.privacy_unit
        if u is None:
            return X, None
        if not isinstance(X, pd.DataFrame):
            if fitting:
                raise TypeError(f"privacy_unit={u!r}: X must be a pandas DataFrame holding that column")
            return X, None
        cols = [c for c in X.columns if str(c) == str(u)]
        if not cols:
            if fitting:
                raise _cli.DataError(f"column {str(u)!r}: the privacy unit is not a column of X", str(u))
            return X, None
        col = X[cols[0]]
        if fitting and col.isna().any():
            raise _cli.DataError(f"column {str(u)!r}: the privacy unit has a missing value in row "
                                 f"{int(np.flatnonzero(col.isna().to_numpy())[0]) + 1}; every row needs its person's ID",
                                 str(u))
        return X.drop(columns=cols), (_unit_text(col) if fitting else None)

    def fit(self, X, y, sample_weight=None):
        """Fits the model with the dplearn core (``dplearn fit``)."""
        if sample_weight is not None:
            raise TypeError("sample_weight is not supported: weights change the sensitivity the guarantee rests on")
        if self.epsilon is not None and not (isinstance(self.epsilon, (int, float, np.floating, np.integer))
                                             and self.epsilon > 0):
            raise ValueError(f"epsilon must be > 0 (or None for a non-private reference fit), got {self.epsilon!r}")
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        X, units = self._split_unit(X, fitting=True)
        X, y = self._prepare(X, y, fitting=True)
        if any(not isinstance(c, str) for c in X.columns):
            X = X.copy(deep=False)
            X.columns = [str(c) for c in X.columns]
        self._train_columns_ = [str(c) for c in X.columns]
        y = y.rename(self._target_name(y))
        schema = self._schema_for(X, y)
        if y.name != schema.target_name:
            y = y.rename(schema.target_name)
        if schema.target_name in X.columns:
            raise ValueError(f"column {schema.target_name!r} is both a feature column of X and the target")
        schema.check_frame(X, y)
        y, schema = self._encode_target(y, schema)
        self.schema_ = schema
        seed = self._seed()
        mechanism = self.mechanism or self._default_mechanism
        ledger = self.ledger.path if isinstance(self.ledger, Ledger) else self.ledger
        with tempfile.TemporaryDirectory(prefix="dplearn-") as tmp:
            data = os.path.join(tmp, "data.parquet")
            table = X.copy(deep=False)
            table.columns = [str(c) for c in table.columns]
            table[schema.target_name] = y.to_numpy() if not isinstance(y.dtype, pd.CategoricalDtype) else y
            if units is not None:
                if self.privacy_unit in table.columns:
                    raise ValueError(f"column {self.privacy_unit!r} is the privacy unit and also a feature or the target")
                table[self.privacy_unit] = units
            _parquet.write(table, data)
            sp = os.path.join(tmp, "schema.json")
            schema.save(sp)
            out = os.path.join(tmp, "model.json")
            args = ["fit", "--data", data, "--schema", sp, "--model", self._kind, "--mechanism", mechanism,
                    "--out", out]
            # ε and δ go to the core as given: it refuses δ for a pure-ε
            # mechanism, a missing δ for an (ε, δ) one, δ ≥ 1/N, and any
            # privacy parameter for a non-private one (ParameterError).
            if self.epsilon is not None:
                args += ["--epsilon", _cli._num(float(self.epsilon))]
            if self.delta is not None:
                args += ["--delta", _cli._num(float(self.delta))]
            if seed is not None:
                args += ["--seed", str(seed)]
            if ledger is not None:
                args += ["--ledger", os.fspath(ledger)]
            if self.ci_share is not None:
                args += ["--ci-share", _cli._num(float(self.ci_share))]
            if self.workers:
                args += ["--workers", str(int(self.workers))]
            if self.privacy_unit is not None:
                args += ["--privacy-unit", str(self.privacy_unit)]
            if self.max_rows_per_unit is not None:
                args += ["--max-rows-per-unit", str(int(self.max_rows_per_unit))]
            args += _cli.flags(**{k.rstrip("_"): v for k, v in (self.options or {}).items()})
            res = _cli.run_json(args)
            with open(out, encoding="utf-8") as f:
                self.model_ = json.load(f)
        self._set_results(res)
        return self

    def _set_results(self, res: Mapping[str, Any]) -> None:
        self.fit_result_ = res
        self.n_samples_ = int(res["rows"])
        self.feature_names_out_ = list(res["features"])
        enc = np.asarray(res["coefficients"], dtype=np.float64)
        self.coef_encoded_ = enc
        inf = res.get("inference") or {}
        rows = inf.get("coefficients") or []
        orig = np.asarray([r.get("fitted_original", r.get("original", np.nan)) for r in rows], dtype=np.float64) \
            if rows else np.full(len(enc), np.nan)
        names = self.feature_names_out_
        if names and names[0] == "(intercept)":
            self.intercept_ = float(orig[0])
            self.coef_ = orig[1:]
        else:
            self.intercept_ = 0.0
            self.coef_ = orig
        unit = None if self.privacy_unit is None else str(self.privacy_unit)
        self.privacy_ = PrivacyReport.from_json(res["privacy"], unit,
                                                None if unit is None else int(self.max_rows_per_unit))
        self.warnings_ = list(res.get("warnings") or [])

    # ---------------------------------------------------------------
    def _predict_frame(self, X) -> pd.DataFrame:
        check_is_fitted(self, "model_")
        X, _ = self._split_unit(X, fitting=False)
        X, _ = self._prepare(X, None, fitting=False)
        feats = self.schema_.feature_names
        X = X.copy(deep=False)
        X.columns = [str(c) for c in X.columns]
        extra = [c for c in X.columns if c not in feats]
        if extra:
            raise _cli.DataError(f"column {extra[0]!r}: not in the schema (declare it, or drop it from X)", extra[0])
        self.schema_.check_frame(X)
        with tempfile.TemporaryDirectory(prefix="dplearn-") as tmp:
            data = os.path.join(tmp, "data.parquet")
            _parquet.write(X[feats], data)
            mp = os.path.join(tmp, "model.json")
            with open(mp, "w", encoding="utf-8") as f:
                json.dump(self.model_, f)
            # --digits 0: each prediction as the shortest decimal of its
            # float64, parsed back exactly (round_trip: Python's strtod)
            p = _cli.run(["predict", "--model", mp, "--data", data, "--out", "-", "--digits", "0"])
        return pd.read_csv(io.BytesIO(p.stdout), keep_default_na=True, dtype={"predicted": str},
                           float_precision="round_trip")

    def summary(self) -> "Summary":
        """The coefficient table in original units (estimate, SE, z, p-value,
        interval) and the privacy report, like statsmodels' summary()."""
        check_is_fitted(self, "model_")
        return Summary(self)


def _as_2d(X):
    if hasattr(X, "toarray") or type(X).__module__.startswith("scipy.sparse"):
        raise TypeError("A sparse matrix was passed, but dense data is required: use X.toarray()")
    arr = np.asarray(X)
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except TypeError as e:
            raise TypeError(f"X holds a value that is not a number: {e}; pass a DataFrame with categorical columns") from e
        except ValueError as e:
            raise ValueError(f"X holds a value that is not a number: {e}; pass a DataFrame with categorical columns") from e
    return arr


class _DataConversionWarning(UserWarning):
    pass


try:  # the warning class sklearn's checks expect
    from sklearn.exceptions import DataConversionWarning as _DataConversionWarning  # noqa: F811
except ImportError:  # pragma: no cover
    pass


class LinearRegression(RegressorMixin, _DPEstimator):
    """Differentially private least squares (``dplearn fit --model linear``).

    Parameters: epsilon, delta (for (ε, δ) mechanisms), mechanism (default
    gaussian-fm; any of ``dplearn fit --help``), schema (a Schema, its dict
    or a schema file path) or bounds/categories/target_bounds to build one
    from the DataFrame's columns and dtypes, ledger (a Ledger or path charged
    by the fit), random_state (INSECURE seeded noise, with a warning),
    ci_share (share of ε for confidence intervals), options (further
    mechanism flags, e.g. {"lambda": 0.01}), workers, privacy_unit (a
    column of X naming the person; not a feature) with max_rows_per_unit
    (K: the guarantee covers all rows of one person, at most K kept).
    """
    _kind = "linear"
    _default_mechanism = "gaussian-fm"

    def predict(self, X) -> np.ndarray:
        df = self._predict_frame(X)
        return df[f"{self.schema_.target_name}_predicted"].to_numpy(dtype=np.float64)


class RobustRegression(LinearRegression):
    """Differentially private robust (L1 / Huber-type) regression
    (``dplearn fit --model robust``, default mechanism irls)."""
    _kind = "robust"
    _default_mechanism = "irls"


class LogisticRegression(ClassifierMixin, _DPEstimator):
    """Differentially private logistic regression (``dplearn fit --model
    logistic``, default mechanism objpert: the maximum-likelihood log-odds
    with intervals; ``mechanism="auto"`` or ``"noisygd"`` for the lowest
    log-loss, a bounded-influence fit with each row's gradient clipped).

    The two class labels come from the schema's target ("positive" and
    "negative"), else from ``classes``, else (with a PrivacyLeakWarning, as
    diffprivlib does) from the distinct values of y.
    """
    _kind = "logistic"
    _default_mechanism = "objpert"

    def __init__(self, epsilon: float | None = 1.0, delta: float | None = None, mechanism: str | None = None,
                 schema=None, bounds=None, categories=None, classes=None, ledger=None, random_state=None,
                 ci_share=None, options=None, workers: int = 0, privacy_unit=None, max_rows_per_unit=None):
        super().__init__(epsilon=epsilon, delta=delta, mechanism=mechanism, schema=schema, bounds=bounds,
                         categories=categories, target_bounds=None, ledger=ledger, random_state=random_state,
                         ci_share=ci_share, options=options, workers=workers, privacy_unit=privacy_unit,
                         max_rows_per_unit=max_rows_per_unit)
        self.classes = classes

    def _more_tags(self):
        t = super()._more_tags()
        t["binary_only"] = True
        return t

    def _target_schema(self, X, y, bounds) -> Schema:
        return Schema.from_frame(X, str(y.name), bounds=bounds, categories=self.categories)

    def _encode_target(self, y: pd.Series, schema: Schema):
        t = schema.target
        if "positive" in t:
            neg = t.get("negative")
            self.classes_ = np.asarray([neg if neg is not None else f"not {t['positive']}", t["positive"]], dtype=object)
            return y.map(lambda v: v if v is None or (isinstance(v, float) and v != v) else _label(v)), schema
        if self.classes is not None:
            classes = list(self.classes)
        else:
            yy = y.dropna()
            classes = sorted(pd.unique(yy).tolist()) if len(yy) else []
            if set(classes) <= {0, 1} and len(classes) >= 1:
                classes = [0, 1]
            elif len(classes) > 2:
                raise ValueError(f"Unknown label type: column {str(y.name)!r} holds more than 2 values; "
                                 "LogisticRegression is binary: declare classes=[negative, positive]")
            else:
                warnings.warn("the class labels were read off y (its distinct values), which leaks them; "
                              "declare classes=[negative, positive] or the schema target's labels",
                              PrivacyLeakWarning, stacklevel=3)
        if len(classes) != 2:
            raise ValueError(f"column {str(y.name)!r}: LogisticRegression is binary and needs exactly 2 classes, "
                             f"got {len(classes)}: {classes[:5]}")
        self.classes_ = np.asarray(classes)
        lab = {v: float(i) for i, v in enumerate(classes)}
        mapped = y.map(lambda v: lab.get(v, np.nan) if not (v is None or (isinstance(v, float) and v != v)) else np.nan)
        unknown = mapped.isna() & y.notna()
        if unknown.any():
            raise _cli.DataError(f"column {str(y.name)!r}: label {y[unknown].iloc[0]!r} is not one of the classes {classes}",
                                 str(y.name))
        return mapped.astype(np.float64), schema

    def predict_proba(self, X) -> np.ndarray:
        p = self._predict_frame(X)["probability"].to_numpy(dtype=np.float64)
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def decision_function(self, X) -> np.ndarray:
        p = np.clip(self.predict_proba(X)[:, 1], 1e-300, 1 - 1e-16)
        return np.log(p) - np.log1p(-p)

    def predict(self, X) -> np.ndarray:
        p = self.predict_proba(X)[:, 1]
        return self.classes_[(p > 0.5).astype(int)]


def _unit_text(col: pd.Series) -> np.ndarray:
    """The unit IDs as the text a CSV file of the table would hold (the
    core keys each unit by its text): integers without a decimal point,
    integral floats likewise, strings as they are."""
    if pd.api.types.is_integer_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
        return np.asarray([str(int(v)) for v in col.to_numpy()], dtype=object)
    if pd.api.types.is_float_dtype(col.dtype):
        v = col.to_numpy(dtype=np.float64)
        return np.asarray([str(int(x)) if x.is_integer() else repr(float(x)) for x in v], dtype=object)
    return np.asarray([str(v) for v in col.to_numpy()], dtype=object)


def _label(v):
    from .schema import _label as lab
    return lab(v)


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


class Summary:
    """A fitted model's coefficient table (``frame``) and report; its text is
    laid out like statsmodels' summary."""

    def __init__(self, model: _DPEstimator):
        res = model.fit_result_
        inf = res.get("inference") or {}
        rows = []
        self.p_source = None
        for r in inf.get("coefficients") or []:
            est = r.get("original", np.nan)
            se = r.get("original_se")
            z = est / se if se else np.nan
            if r.get("p_value") is not None:
                # the core's p-value, calibrated as its interval is (the
                # bootstrap's own law for the fm family: it rejects at α
                # exactly when the 1 − α interval excludes 0)
                p = float(r["p_value"])
                self.p_source = self.p_source or "core"
            elif se:
                p = 2 * _normal_sf(abs(z))  # the core gave none: normal approximation
                self.p_source = "normal"
            else:
                p = np.nan
            rows.append({"coef": est, "std err": se if se is not None else np.nan, "z": z, "P>|z|": p,
                         "lower": r.get("original_lower", np.nan), "upper": r.get("original_upper", np.nan),
                         "fitted": r.get("fitted_original", est)})
        self.frame = pd.DataFrame(rows, index=res["features"][:len(rows)])
        self.level = inf.get("level", 0.95)
        self.method = inf.get("method", "")
        self.unavailable = inf.get("unavailable", "")
        self.estimand = inf.get("estimand", "")
        self.model = model
        self.privacy = model.privacy_

    def __str__(self) -> str:
        m, pr = self.model, self.privacy
        w = 78
        lo = f"[{(1 - self.level) / 2:.3f}"
        hi = f"{1 - (1 - self.level) / 2:.3f}]"
        head = [
            f"{'dplearn ' + type(m).__name__ + ' Results':^{w}}",
            "=" * w,
            f"Dep. Variable: {m.schema_.target_name:<22} No. Observations: {m.n_samples_:>12}",
            f"Model:         {m.fit_result_.get('model', ''):<22} Mechanism: {m.fit_result_.get('mechanism', ''):>19}",
            f"Privacy:       ε = {pr.epsilon:<18.6g} δ = {pr.delta:<.6g}",
            "=" * w,
            f"{'':<24}{'coef':>10}{'std err':>10}{'z':>8}{'P>|z|':>8}{lo:>9}{hi:>9}",
            "-" * w,
        ]
        body = []
        for name, r in self.frame.iterrows():
            def g(v, fmt):
                return format(v, fmt) if v is not None and v == v else "—"
            body.append(f"{str(name)[:23]:<24}{g(r['coef'], '10.4f')}{g(r['std err'], '10.4f')}{g(r['z'], '8.3f')}"
                        f"{g(r['P>|z|'], '8.3f')}{g(r['lower'], '9.3f')}{g(r['upper'], '9.3f')}")
        foot = ["=" * w,
                "Coefficients per unit of each feature, on the target's scale after its transform (e.g. log wage).",
                "z = coef / std err. " + {
                    "core": "P>|z|: the core's p-value of coef = 0, calibrated as its interval is (see Intervals).",
                    "normal": "P>|z|: normal approximation from the SE (the core gave no p-value).",
                    None: "P>|z|: none (no interval was released)."}[self.p_source],
                f"Intervals: {self.method}" if self.method else
                ("No intervals: " + (self.unavailable or "this mechanism releases none.")),
                f"Accountant: {pr.accountant}"]
        if pr.privacy_unit is not None:
            foot.append(f"Privacy unit: {pr.privacy_unit!r}, at most {pr.max_rows_per_unit} rows per unit "
                        "(No. Observations counts units).")
        if pr.insecure_randomness:
            foot.append("WARNING: " + (pr.randomness or "insecure seeded randomness: no privacy guarantee"))
        return "\n".join(head + body + foot)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return "<pre>" + str(self).replace("&", "&amp;").replace("<", "&lt;") + "</pre>"
