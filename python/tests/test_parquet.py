"""The Parquet writer hands the core the same table as a CSV file does: for
every dtype the binding sends (float, int, nullable Int64/Float64, bool,
object strings, pandas string and categorical, with nulls), with several row
groups, the core's non-private fit on the Parquet file equals its fit on the
DataFrame's CSV to the last bit."""

import json
import subprocess

import numpy as np
import pandas as pd
import pytest

import dplearn
from dplearn import _parquet


def core_fit(tmp_path, data, schema, tag):
    out = tmp_path / f"m-{tag}.json"
    sp = tmp_path / "s.json"
    schema.save(str(sp))
    subprocess.run([dplearn.binary(), "fit", "--data", str(data), "--schema", str(sp), "--model", "linear",
                    "--mechanism", "nonprivate", "--out", str(out)], check=True, capture_output=True)
    return json.loads(out.read_text())


def mixed_frame(n, rng):
    levels = ["a", "b,c", 'q"uote', "ünï", "new\nline"]
    df = pd.DataFrame({
        "f": rng.normal(size=n) * 3,
        "i": rng.integers(-5, 6, size=n),
        "ni": pd.array(rng.integers(0, 10, size=n), dtype="Int64"),
        "nf": pd.array(rng.uniform(0, 1, size=n), dtype="Float64"),
        "b": rng.random(n) < 0.3,
        "s": pd.Series(rng.choice(levels, size=n), dtype=object),
        "st": pd.Series(rng.choice(["x", "y", "z"], size=n)).astype("string"),
        "c": pd.Categorical(rng.choice(["lo", "mid", "hi"], size=n), categories=["lo", "mid", "hi"]),
    })
    df.loc[::7, "f"] = np.nan
    df.loc[::11, "ni"] = pd.NA
    df.loc[::13, "nf"] = pd.NA
    df.loc[::17, "s"] = None
    df.loc[::19, "c"] = np.nan
    df["y"] = rng.normal(size=n) + df["i"]
    return df, levels


@pytest.mark.parametrize("row_group", [_parquet.ROW_GROUP, 1000])
def test_parquet_equals_csv(tmp_path, monkeypatch, row_group):
    monkeypatch.setattr(_parquet, "ROW_GROUP", row_group)
    rng = np.random.default_rng(11)
    df, levels = mixed_frame(5000, rng)
    schema = dplearn.Schema({
        "target": {"name": "y", "range": [-20, 20]},
        "features": [
            {"name": "f", "range": [-9, 9], "missing": "impute", "impute": 0.5},
            {"name": "i", "range": [-5, 5]},
            {"name": "ni", "range": [0, 9], "missing": "drop"},
            {"name": "nf", "range": [0, 1], "missing": "impute", "impute": 0.25},
            {"name": "b", "range": [0, 1]},
            {"name": "s", "categories": levels, "missing": "impute", "impute": "b,c"},
            {"name": "st", "categories": ["x", "y", "z"]},
            {"name": "c", "categories": ["lo", "mid", "hi"], "missing": "drop"},
        ]})
    pq = tmp_path / "d.parquet"
    _parquet.write(df, str(pq))
    csv = tmp_path / "d.csv"
    df.assign(b=df["b"].astype(int)).to_csv(csv, index=False)  # the core reads 0/1, not False/True, in CSV
    a = core_fit(tmp_path, pq, schema, "pq")
    b = core_fit(tmp_path, csv, schema, "csv")
    assert a["coefficients"] == b["coefficients"]
    assert a["training"] == b["training"]
    # and the estimator (which writes this Parquet) gives the same bits
    m = dplearn.LinearRegression(epsilon=None, mechanism="nonprivate", schema=schema).fit(df.drop(columns=["y"]), df["y"])
    assert m.model_["coefficients"] == b["coefficients"]


def test_refused_columns_name_themselves(tmp_path):
    with pytest.raises(TypeError, match="'big'"):
        _parquet.write(pd.DataFrame({"big": np.array([2**60, 1], dtype=np.int64)}), str(tmp_path / "x.parquet"))
    with pytest.raises(TypeError, match="'z'"):
        _parquet.write(pd.DataFrame({"z": np.array([1 + 2j])}), str(tmp_path / "x.parquet"))
    with pytest.raises(TypeError, match="'obj'"):
        _parquet.write(pd.DataFrame({"obj": [object()]}), str(tmp_path / "x.parquet"))
