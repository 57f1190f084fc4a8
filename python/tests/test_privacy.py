"""dplearn.privacy and PrivacyReport against the CLI's own JSON."""

import json
import subprocess

import pytest

import dplearn


def cli_json(*args):
    p = subprocess.run([dplearn.binary(), *args, "--format", "json"], check=True, capture_output=True)
    return json.loads(p.stdout)


def test_calibrate_matches_cli():
    got = dplearn.privacy.calibrate(mechanism="gaussian", epsilon=0.3, delta=1e-7, sensitivity=2.5)
    assert got == cli_json("privacy", "calibrate", "--mechanism", "gaussian", "--epsilon", "0.3", "--delta", "1e-07",
                           "--sensitivity", "2.5")
    lap = dplearn.privacy.calibrate(mechanism="laplace", epsilon=0.5, sensitivity=1)
    assert lap["scale"] >= 2.0  # b = Δ/ε, plus the sampler's grid slack (never less)


def test_gaussian_steps_and_subsampled_match_cli():
    got = dplearn.privacy.gaussian_steps(sigma=8, sensitivity=1, steps=50, delta=1e-6)
    assert got == cli_json("privacy", "gaussian-steps", "--sigma", "8", "--sensitivity", "1", "--steps", "50",
                           "--delta", "1e-06")
    sub = dplearn.privacy.subsampled(q=0.01, steps=100, delta=1e-5, sigma=1.2)
    assert sub == cli_json("privacy", "subsampled", "--q", "0.01", "--steps", "100", "--delta", "1e-05", "--sigma", "1.2")


def test_bad_calculator_input_raises():
    with pytest.raises(dplearn.DplearnError):
        dplearn.privacy.calibrate(mechanism="gaussian", epsilon=-1, delta=1e-5, sensitivity=1)


def test_privacy_report_is_the_model_files(cps, cps_schema):
    m = dplearn.LinearRegression(epsilon=0.5, delta=1e-7, schema=cps_schema, random_state=3)
    m.fit(cps.drop(columns=["wage"]), cps["wage"])
    p, raw = m.privacy_, m.model_["privacy"]
    assert (p.epsilon, p.delta, p.accountant, p.mechanism) == (raw["epsilon"], raw["delta"], raw["accountant"], raw["mechanism"])
    assert [r.scale for r in p.releases] == [r["scale"] for r in raw["releases"]]
    assert [r.sensitivity for r in p.releases] == [r["sensitivity"] for r in raw["releases"]]
    assert p.insecure_randomness and "INSECURE" in p.randomness
    assert p.epsilon == 0.5 and p.delta == 1e-7
    s = m.summary()
    text = str(s)
    assert "P>|z|" in text and "education" in text and "INSECURE" in text
    # the table is the core's inference in original units
    rows = {r["name"]: r for r in m.fit_result_["inference"]["coefficients"]}
    assert s.frame.loc["education", "coef"] == rows["education"]["original"]
    assert s.frame.loc["education", "std err"] == rows["education"]["original_se"]
    assert s.frame.loc["education", "lower"] == rows["education"]["original_lower"]
