"""Bad input raises a Python exception naming the column, never a crash:
the Python-side checks, and the core's own refusals mapped to DataError."""


import numpy as np
import pandas as pd
import pytest

import dplearn
from dplearn import _cli, _parquet


@pytest.fixture()
def cps_small(cps):
    return cps.head(2000).copy()


def fit(df, schema, **kw):
    return dplearn.LinearRegression(epsilon=1, delta=1e-6, schema=schema, random_state=1, **kw).fit(
        df.drop(columns=["wage"]), df["wage"])


def test_nan_without_missing_policy(cps_small, cps_schema):
    cps_small.loc[17, "education"] = np.nan
    with pytest.raises(dplearn.DataError, match="education") as e:
        fit(cps_small, cps_schema)
    assert e.value.column == "education"


def test_nan_with_missing_policy_fits(cps_small, cps_schema):
    cps_small.loc[17, "education"] = np.nan
    spec = cps_schema.to_dict()
    spec["features"][0]["missing"] = "drop"
    m = fit(cps_small, dplearn.Schema(spec))
    assert m.n_samples_ == len(cps_small)  # dropped records count in N (zero rows)
    spec["features"][0]["missing"] = "impute"
    spec["features"][0]["impute"] = 12
    fit(cps_small, dplearn.Schema(spec))


def test_categorical_none_without_policy(cps_small, cps_schema):
    cps_small.loc[3, "region"] = None
    with pytest.raises(dplearn.DataError, match="region"):
        fit(cps_small, cps_schema)


def test_column_not_in_schema(cps_small, cps_schema):
    cps_small["shoe_size"] = 42.0
    with pytest.raises(dplearn.DataError, match="shoe_size") as e:
        fit(cps_small, cps_schema)
    assert e.value.column == "shoe_size"


def test_schema_column_missing_from_data(cps_small, cps_schema):
    with pytest.raises(dplearn.DataError, match="smsa"):
        fit(cps_small.drop(columns=["smsa"]), cps_schema)


def test_undeclared_level(cps_small, cps_schema):
    cps_small.loc[5, "region"] = "atlantis"
    with pytest.raises(dplearn.DataError, match="region.*atlantis"):
        fit(cps_small, cps_schema)


def test_undeclared_level_in_categorical_dtype(cps_small, cps_schema):
    cps_small["region"] = cps_small["region"].astype("category").cat.add_categories(["mars"])
    cps_small.loc[0, "region"] = "mars"
    with pytest.raises(dplearn.DataError, match="region.*mars"):
        fit(cps_small, cps_schema)


def test_wrong_dtype(cps_small, cps_schema):
    cps_small["education"] = cps_small["education"].astype(str)
    cps_small.loc[9, "education"] = "twelve"
    with pytest.raises(dplearn.DataError, match="education.*twelve"):
        fit(cps_small, cps_schema)


def test_datetime_column_refused(cps_small, cps_schema):
    cps_small["experience"] = pd.Timestamp("2020-01-01")
    with pytest.raises((dplearn.DataError, TypeError), match="experience"):
        fit(cps_small, cps_schema)


def test_missing_bounds_raise(cps_small):
    X = cps_small[["education", "experience"]]
    with pytest.raises(dplearn.MissingBoundsError, match="experience"):
        dplearn.LinearRegression(bounds={"education": (0, 20)}, target_bounds=(0, 1e4)).fit(X, cps_small["wage"])
    with pytest.raises(dplearn.MissingBoundsError, match="wage"):
        dplearn.LinearRegression(bounds={"education": (0, 20), "experience": (0, 60)}).fit(X, cps_small["wage"])
    with pytest.raises(dplearn.MissingBoundsError, match="region"):
        dplearn.LinearRegression(bounds={"education": (0, 20)}, target_bounds=(0, 1e4)).fit(
            cps_small[["education", "region"]], cps_small["wage"])


def test_schema_from_dtypes_not_values(cps_small):
    """Categories come from a CategoricalDtype's declared categories, even
    ones no row holds; nothing is read off the values."""
    X = cps_small[["education", "region"]].copy()
    X["region"] = pd.Categorical(X["region"], categories=["northeast", "midwest", "south", "west", "pacific"])
    s = dplearn.Schema.from_frame(X, "wage", bounds={"education": (0, 20)}, target_bounds=(50, 5000))
    assert s.feature("region")["categories"] == ["northeast", "midwest", "south", "west", "pacific"]
    assert s.feature("education")["range"] == [0.0, 20.0]


def test_core_refusals_name_the_column(tmp_path, cps_schema, cps_small):
    """Bypassing the Python checks, the core's own error is mapped to a
    DataError with the column (the Python checks are convenience, the Go
    encoder is the guard)."""
    cps_small.loc[11, "experience"] = np.nan
    data = tmp_path / "d.parquet"
    _parquet.write(cps_small, str(data))
    sp = tmp_path / "s.json"
    cps_schema.save(str(sp))
    with pytest.raises(dplearn.DataError) as e:
        _cli.run(["fit", "--data", data, "--schema", sp, "--model", "linear", "--mechanism", "gaussian-fm",
                  "--epsilon", "1", "--delta", "1e-6", "--out", tmp_path / "m.json", "--seed", "1"])
    assert e.value.column == "experience"
    assert not (tmp_path / "m.json").exists()


def test_predict_bad_input(cps_small, cps_schema):
    m = fit(cps_small, cps_schema)
    X = cps_small.drop(columns=["wage"]).head(20).copy()
    X.loc[X.index[2], "parttime"] = "sometimes"
    with pytest.raises(dplearn.DataError, match="parttime"):
        m.predict(X)


def test_budget_refusal(tmp_path, cps_small, cps_schema):
    led = dplearn.Ledger.create(tmp_path / "l.json", name="site", epsilon=1.0, delta=1e-5)
    X, y = cps_small.drop(columns=["wage"]), cps_small["wage"]
    m = dplearn.LinearRegression(epsilon=0.75, delta=1e-6, schema=cps_schema, ledger=led).fit(X, y)
    assert led.spent == (0.75, 1e-6)
    assert m.privacy_.epsilon == 0.75 and not m.privacy_.insecure_randomness
    with pytest.raises(dplearn.BudgetExceededError):
        dplearn.LinearRegression(epsilon=0.5, delta=1e-6, schema=cps_schema, ledger=led).fit(X, y)
    assert led.spent == (0.75, 1e-6)  # refused: nothing charged
    # seeded noise has no guarantee to charge: the core refuses
    with pytest.raises(dplearn.DplearnError, match="seed"):
        dplearn.LinearRegression(epsilon=0.1, delta=1e-6, schema=cps_schema, ledger=led, random_state=1).fit(X, y)


def test_privacy_parameters_are_the_cores_rules(cps_small, cps_schema):
    """ε and δ reach the core as given; its refusals become ParameterError
    (a ValueError) naming the flag."""
    X, y = cps_small.drop(columns=["wage"]), cps_small["wage"]
    with pytest.raises(dplearn.ParameterError, match="delta"):
        dplearn.LinearRegression(epsilon=1, schema=cps_schema).fit(X, y)  # gaussian-fm needs δ
    with pytest.raises(dplearn.ParameterError, match="pure"):
        dplearn.LinearRegression(epsilon=1, delta=1e-6, mechanism="fm", schema=cps_schema).fit(X, y)
    with pytest.raises(ValueError, match="delta"):
        dplearn.LinearRegression(epsilon=1, delta=0.01, schema=cps_schema).fit(X, y)  # δ ≥ 1/N
    m = dplearn.LinearRegression(epsilon=None, mechanism="nonprivate", schema=cps_schema).fit(X, y)
    assert not m.privacy_.private
    with pytest.raises(ValueError, match="epsilon"):
        dplearn.LinearRegression(epsilon=0, schema=cps_schema).fit(X, y)
