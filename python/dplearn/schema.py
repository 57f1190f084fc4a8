"""dplearn.Schema: the public bounds a fit's guarantee rests on.

A schema is the CLI's schema file (see the Go package ``schema``): a target
with a range (linear, robust) or labels (logistic), and per feature a range
(numeric) or a category list (categorical). Every bound is *declared*; the
helpers here build a schema from a DataFrame's column names and dtypes
(a pandas ``CategoricalDtype`` carries its categories in the dtype, not in
the values) plus the bounds you give, and never look at the values. A
numeric column without bounds raises :class:`MissingBoundsError`, as the CLI
refuses a schema without them.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd


class MissingBoundsError(ValueError):
    """A column has no declared public bounds (range or categories)."""

    def __init__(self, column: str, what: str = "bounds"):
        super().__init__(
            f"column {column!r}: no public {what} declared; give them in the schema "
            f"(e.g. bounds={{{column!r}: (lo, hi)}} or categories={{{column!r}: [...]}}): "
            "dplearn never reads bounds off the data, since that would leak it")
        self.column = column


class Schema:
    """The CLI's schema, as a Python object. ``spec`` is the JSON dict of a
    schema file ({"target": {...}, "features": [...]})."""

    def __init__(self, spec: Mapping[str, Any]):
        if "target" not in spec or "features" not in spec:
            raise ValueError('a schema needs "target" and "features"')
        self.spec = copy.deepcopy(dict(spec))
        names = [f["name"] for f in self.spec["features"]]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"schema: duplicate feature names {dup}")

    # --- construction -------------------------------------------------
    @classmethod
    def load(cls, path: str) -> "Schema":
        with open(path, encoding="utf-8") as f:
            return cls(json.load(f))

    @classmethod
    def from_json(cls, text: str) -> "Schema":
        return cls(json.loads(text))

    @classmethod
    def from_frame(cls, X: pd.DataFrame, target: str = "y", *, bounds: Mapping[str, Sequence[float]] | None = None,
                   categories: Mapping[str, Sequence[Any]] | None = None,
                   target_bounds: Sequence[float] | None = None, positive: Any = None, negative: Any = None,
                   missing: Mapping[str, str] | None = None, impute: Mapping[str, Any] | None = None,
                   transform: Mapping[str, str] | None = None, intercept: bool = True) -> "Schema":
        """Builds a schema from X's column names and dtypes and the declared
        bounds. Categorical dtypes give their categories (declared in the
        dtype); bool columns are numeric in [0, 1]; other columns need an
        entry in ``bounds`` (numeric) or ``categories``. Without
        ``target_bounds`` the target is binary (``positive``/``negative``
        labels, or 0/1 values)."""
        bounds, categories = dict(bounds or {}), dict(categories or {})
        missing, impute, transform = dict(missing or {}), dict(impute or {}), dict(transform or {})
        known = set(map(str, X.columns)) | {target}
        for d, what in ((bounds, "bounds"), (categories, "categories"), (missing, "missing"),
                        (impute, "impute"), (transform, "transform")):
            extra = sorted(set(map(str, d)) - known)
            if extra:
                raise ValueError(f"{what} given for column(s) not in the data: {extra}")
        feats = []
        for col in X.columns:
            name, dt = str(col), X[col].dtype
            f: dict[str, Any] = {"name": name}
            if name in categories:
                f["categories"] = [_label(c) for c in categories[name]]
            elif name in bounds:
                lo, hi = bounds[name]
                f["range"] = [float(lo), float(hi)]
            elif isinstance(dt, pd.CategoricalDtype):
                f["categories"] = [_label(c) for c in dt.categories]
            elif pd.api.types.is_bool_dtype(dt):
                f["range"] = [0.0, 1.0]
            else:
                raise MissingBoundsError(name, "range" if pd.api.types.is_numeric_dtype(dt) else "categories")
            if name in transform:
                f["transform"] = transform[name]
            if name in missing:
                f["missing"] = missing[name]
            if name in impute:
                f["impute"] = impute[name]
                f.setdefault("missing", "impute")
            feats.append(f)
        t: dict[str, Any] = {"name": target}
        if target_bounds is not None:
            t["range"] = [float(target_bounds[0]), float(target_bounds[1])]
        else:
            if positive is not None:
                t["positive"] = _label(positive)
            if negative is not None:
                t["negative"] = _label(negative)
        if target in transform:
            t["transform"] = transform[target]
        if target in missing:
            t["missing"] = missing[target]
        spec: dict[str, Any] = {"target": t, "features": feats}
        if not intercept:
            spec["intercept"] = False
        return cls(spec)

    # --- views --------------------------------------------------------
    @property
    def target(self) -> dict:
        return self.spec["target"]

    @property
    def target_name(self) -> str:
        return self.spec["target"]["name"]

    @property
    def features(self) -> list[dict]:
        return self.spec["features"]

    @property
    def feature_names(self) -> list[str]:
        return [f["name"] for f in self.spec["features"]]

    def feature(self, name: str) -> dict:
        for f in self.spec["features"]:
            if f["name"] == name:
                return f
        raise KeyError(name)

    def binary_target(self) -> bool:
        return "range" not in self.spec["target"]

    def to_dict(self) -> dict:
        return copy.deepcopy(self.spec)

    def to_json(self) -> str:
        return json.dumps(self.spec, indent=2)

    def save(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())

    def with_target(self, **target: Any) -> "Schema":
        spec = self.to_dict()
        spec["target"] = target
        return Schema(spec)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and other.spec == self.spec

    def __repr__(self) -> str:
        return f"Schema({json.dumps(self.spec)})"

    # --- checks on a table (local; nothing leaves the machine) ---------
    def check_frame(self, X: pd.DataFrame, y: pd.Series | None = None) -> None:
        """Raises DataError naming the column for what the core would refuse:
        a column the schema needs that X lacks, a column X has that the schema
        does not declare, a value that is missing without a missing policy,
        an undeclared category level, a non-numeric value in a numeric
        column. These checks read X locally (like the Go encoder does) and
        release nothing."""
        from ._cli import DataError

        cols = [str(c) for c in X.columns]
        need = self.feature_names
        lacking = [n for n in need if n not in cols]
        if lacking:
            raise DataError(f"column {lacking[0]!r}: declared in the schema but not in the data", lacking[0])
        extra = [c for c in cols if c not in need and c != self.target_name]
        if extra:
            raise DataError(f"column {extra[0]!r}: not in the schema (declare it, or drop it from X)", extra[0])
        for f in self.features:
            _check_column(f, X[f["name"]], DataError)
        if y is not None:
            t = dict(self.target)
            if self.binary_target():
                t.setdefault("categories", None)
            _check_column(t, y, DataError, target=True)


def _label(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


_MISSING_TOKENS = {"", "NA", "na", "N/A", "n/a", "NaN", "nan", "NULL", "null"}


def _check_column(f: Mapping[str, Any], s: pd.Series, DataError, target: bool = False) -> None:
    name = f["name"]
    policy = f.get("missing", "error")
    cats = f.get("categories")
    isna = s.isna()
    if cats is not None:
        declared = set(cats)
        if isinstance(s.dtype, pd.CategoricalDtype):
            used = s.cat.categories[np.unique(s.cat.codes[s.cat.codes >= 0])] if len(s) else []
            labels = [_label(c) for c in used]
        else:
            labels = [_label(v) for v in pd.unique(s[~isna])]
        missing_tokens = [l for l in labels if l.strip(" \t") in _MISSING_TOKENS and l not in declared]
        bad = [l for l in labels if l not in declared and l not in missing_tokens]
        if bad and f.get("unknown") != "reference":
            raise DataError(f"column {name!r}: level {bad[0]!r} is not among the declared categories {cats}", name)
        if (isna.any() or missing_tokens) and policy == "error":
            raise DataError(f"column {name!r}: missing value without a missing policy "
                            "(declare \"missing\": \"drop\" or \"impute\" for it)", name)
        return
    if target and f.get("categories", 0) is None and "range" not in f:
        # binary target: labels or 0/1 (checked by the core)
        if isna.any() and policy == "error":
            raise DataError(f"column {name!r}: missing target value without a missing policy", name)
        return
    dt = s.dtype
    if isinstance(dt, pd.CategoricalDtype) or not (pd.api.types.is_numeric_dtype(dt) or pd.api.types.is_bool_dtype(dt)):
        conv = pd.to_numeric(s.astype(object).where(~isna, None), errors="coerce")
        badmask = conv.isna() & ~isna
        if badmask.any():
            v = s[badmask].iloc[0]
            raise DataError(f"column {name!r}: value {v!r} is not a number (dtype {dt}); the schema declares a range", name)
        isna = conv.isna()
    elif pd.api.types.is_complex_dtype(dt):
        raise DataError(f"column {name!r}: complex dtype {dt}", name)
    else:
        vals = s.to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isinf(vals).any():
            raise DataError(f"column {name!r}: infinite value (±Inf is never a valid value)", name)
    if isna.any() and policy == "error":
        raise DataError(f"column {name!r}: missing value (NaN) without a missing policy "
                        "(declare \"missing\": \"drop\" or \"impute\" for it)", name)


def frame(X: Any, names: Iterable[str] | None = None) -> pd.DataFrame:
    """X as a DataFrame: a DataFrame keeps its columns; an array gets columns
    x0, x1, ... (or names)."""
    if isinstance(X, pd.DataFrame):
        return X
    if isinstance(X, pd.Series):
        return X.to_frame()
    arr = np.asarray(X)
    if arr.ndim == 1:
        raise ValueError("Expected 2D array, got 1D array instead: Reshape your data with "
                         "array.reshape(-1, 1) for a single feature or array.reshape(1, -1) for a single sample")
    if arr.ndim != 2:
        raise ValueError(f"Expected 2D array, got an array with {arr.ndim} dimensions")
    cols = list(names) if names is not None else [f"x{j}" for j in range(arr.shape[1])]
    return pd.DataFrame(arr, columns=cols)
