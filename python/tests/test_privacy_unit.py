"""Privacy units from Python: ``privacy_unit=`` and ``max_rows_per_unit=``
map to ``dplearn fit --privacy-unit COLUMN --max-rows-per-unit K``; the unit
column travels with the data but is not a feature.

Under --seed the core draws the row-selection key from the same insecure
seeded generator as the noise (cmd/dplearn/fit.go randomSource →
dataset.UnitOptions.Rand), so a seeded fit is deterministic and the Python
fit can be compared with the CLI's bit for bit."""

import json

import numpy as np
import pandas as pd
import pytest

import dplearn
from conftest import cli_fit


def bits(a):
    return [float(x).hex() for x in np.asarray(a, dtype=np.float64)]


SPEC = {"target": {"name": "y", "range": [-4.0, 4.0]},
        "features": [{"name": "x", "range": [-3.0, 3.0]}, {"name": "g", "categories": ["a", "b", "c"]}]}


@pytest.fixture(scope="module")
def panel():
    """A panel: 600 people with 1 to 7 rows each (most 7), person IDs
    not in order, one row per person-year."""
    rng = np.random.default_rng(11)
    n_rows = rng.choice([1, 3, 7, 7, 7], size=600)
    person = np.repeat(rng.permutation(100000)[:600] + 1000, n_rows)
    rng.shuffle(person)
    n = len(person)
    x = rng.normal(size=n)
    g = rng.choice(["a", "b", "c"], size=n)
    y = 0.6 * x - 0.4 * (g == "b") + 0.3 * (g == "c") + 0.5 * rng.normal(size=n)
    return pd.DataFrame({"person": person, "x": x, "g": g, "y": y})


def _cli(tmp_path, panel, mech, seed, k, delta):
    csv = tmp_path / "panel.csv"
    if not csv.exists():
        panel.to_csv(csv, index=False, float_format="%r")
        dplearn.Schema(SPEC).save(str(tmp_path / "s.json"))
    return cli_fit(tmp_path, csv, tmp_path / "s.json", "linear", mech, 0.8, delta, seed,
                   extra=["--privacy-unit", "person", "--max-rows-per-unit", str(k), "--ci-share", "0"])


@pytest.mark.parametrize("mech,delta", [("gaussian-fm", 1e-6), ("fm", None)])
def test_unit_fit_same_bits_as_cli(tmp_path, panel, mech, delta):
    X, y = panel.drop(columns=["y"]), panel["y"]
    refs = {}
    for seed, k in ((1, 3), (2, 3), (1, 7)):
        ref = _cli(tmp_path, panel, mech, seed, k, delta)
        refs[seed, k] = ref
        m = dplearn.LinearRegression(epsilon=0.8, delta=delta, mechanism=mech, schema=dplearn.Schema(SPEC),
                                     random_state=seed, privacy_unit="person", max_rows_per_unit=k, ci_share=0)
        m.fit(X, y)
        assert bits(m.coef_encoded_) == bits(ref["coefficients"]), (seed, k)
        assert m.model_["privacy"] == ref["privacy"]
        assert m.model_["training"] == ref["training"]
        # the unit is not a feature; N is the number of people
        assert "person" not in m.feature_names_out_ and list(m.feature_names_in_) == ["x", "g"]
        assert m.n_samples_ == panel["person"].nunique() == ref["training"]["rows"]
        assert m.privacy_.privacy_unit == "person" and m.privacy_.max_rows_per_unit == k
        assert m.privacy_.neighbouring.startswith("replace-one-unit")
        assert f"K = {k} " in m.privacy_.neighbouring
        # predict takes X with or without the unit column, same numbers
        np.testing.assert_array_equal(m.predict(X.head(50)), m.predict(X.head(50).drop(columns=["person"])))
    # the comparisons can fail: another seed, another K change the bits
    assert bits(refs[1, 3]["coefficients"]) != bits(refs[2, 3]["coefficients"])
    assert bits(refs[1, 3]["coefficients"]) != bits(refs[1, 7]["coefficients"])


def test_unit_string_ids_same_bits_as_cli(tmp_path, panel):
    """String person IDs (object dtype) key the units as the CSV's text does."""
    p = panel.assign(person="id" + panel["person"].astype(str))
    ref = _cli(tmp_path, p, "gaussian-fm", 4, 2, 1e-6)
    m = dplearn.LinearRegression(epsilon=0.8, delta=1e-6, mechanism="gaussian-fm", schema=dplearn.Schema(SPEC),
                                 random_state=4, privacy_unit="person", max_rows_per_unit=2, ci_share=0)
    m.fit(p.drop(columns=["y"]), p["y"])
    assert bits(m.coef_encoded_) == bits(ref["coefficients"])
    assert m.model_["privacy"] == ref["privacy"]


def test_unit_fit_spends_nothing_on_intervals(panel):
    """Without ci_share a unit-level fit releases no interval statistic (the
    core's default share is not spent under a unit: intervals there need an
    explicit share) and the summary has no intervals."""
    X, y = panel.drop(columns=["y"]), panel["y"]
    m = dplearn.LinearRegression(epsilon=0.8, delta=1e-6, schema=dplearn.Schema(SPEC), random_state=1,
                                 privacy_unit="person", max_rows_per_unit=3).fit(X, y)
    assert not any(r.name.startswith("Λ0") for r in m.privacy_.releases)
    assert "confidence intervals" not in m.privacy_.accountant
    s = m.summary()
    assert s.frame["P>|z|"].isna().all() and s.p_source is None
    assert "Privacy unit: 'person', at most 3 rows per unit" in str(s)


def test_unit_row_level_report_differs(panel):
    """Without a unit the report is the row-level one (the guarantee is per
    row; N counts rows)."""
    X, y = panel.drop(columns=["y", "person"]), panel["y"]
    m = dplearn.LinearRegression(epsilon=0.8, delta=1e-6, schema=dplearn.Schema(SPEC), random_state=1, ci_share=0)
    m.fit(X, y)
    assert m.privacy_.privacy_unit is None and m.privacy_.max_rows_per_unit is None
    assert not (m.privacy_.neighbouring or "").startswith("replace-one-unit")
    assert m.n_samples_ == len(panel)


@pytest.mark.parametrize("kw,err,words", [
    ({"mechanism": "noisygd", "delta": 1e-6, "options": {"batch_rate": 0.5}}, dplearn.DplearnError, "privacy unit: Poisson batches"),
    ({"mechanism": "dpme", "delta": None}, dplearn.ParameterError, "--privacy-unit"),
    ({"max_rows_per_unit": 0}, dplearn.ParameterError, "--max-rows-per-unit"),
    ({"privacy_unit": None}, dplearn.ParameterError, "--max-rows-per-unit needs --privacy-unit"),
    ({"privacy_unit": "patient"}, dplearn.DataError, "patient"),
])
def test_unit_refusals(panel, kw, err, words):
    """What the core refuses under a unit is refused from Python too, with
    the core's message (the CLI's rules, not a copy of them)."""
    X, y = panel.drop(columns=["y"]), panel["y"]
    args = dict(epsilon=0.8, delta=1e-6, schema=dplearn.Schema(SPEC), random_state=1, privacy_unit="person",
                max_rows_per_unit=3, ci_share=0)
    args.update(kw)
    if kw.get("privacy_unit", "person") is None:
        X = X.drop(columns=["person"])
    with pytest.raises(err) as e:
        dplearn.LinearRegression(**args).fit(X, y)
    assert words in str(e.value)


def test_unit_missing_id_names_column(panel):
    X, y = panel.drop(columns=["y"]), panel["y"]
    X = X.astype({"person": float})
    X.loc[5, "person"] = np.nan
    with pytest.raises(dplearn.DataError) as e:
        dplearn.LinearRegression(epsilon=0.8, delta=1e-6, schema=dplearn.Schema(SPEC), privacy_unit="person",
                                 max_rows_per_unit=3, ci_share=0).fit(X, y)
    assert e.value.column == "person" and "row 6" in str(e.value)


def test_unit_params_clone():
    from sklearn.base import clone
    m = dplearn.LinearRegression(privacy_unit="person", max_rows_per_unit=3)
    c = clone(m)
    assert c.get_params()["privacy_unit"] == "person" and c.get_params()["max_rows_per_unit"] == 3
    assert dplearn.LogisticRegression(privacy_unit="p", max_rows_per_unit=2).get_params()["max_rows_per_unit"] == 2


def test_unit_noisygd_and_intervals(panel):
    """Mechanisms that read rows run under a unit too (noisygd, full batch),
    and a linear FM fit with ci_share > 0 gets intervals whose method names
    the public design-effect inflation (K + 1)²/4 for K rows per person."""
    X, y = panel.drop(columns=["y"]), panel["y"]
    m = dplearn.LinearRegression(epsilon=0.8, delta=1e-6, mechanism="noisygd", schema=dplearn.Schema(SPEC),
                                 random_state=1, privacy_unit="person", max_rows_per_unit=3, ci_share=0).fit(X, y)
    assert m.privacy_.privacy_unit == "person" and m.privacy_.neighbouring.startswith("replace-one-unit")
    assert m.n_samples_ == panel["person"].nunique()
    m = dplearn.LinearRegression(epsilon=0.8, delta=1e-6, schema=dplearn.Schema(SPEC), random_state=1,
                                 privacy_unit="person", max_rows_per_unit=3, ci_share=0.1).fit(X, y)
    inf = m.model_["inference"]
    assert "(K + 1)²/4 = 4" in inf["method"] and "(K + 1)²/4 = 4" in inf["estimand"]
    assert any(r.name.startswith("Λ0") for r in m.privacy_.releases)
