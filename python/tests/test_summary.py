"""summary() shows the core's p-values (the bootstrap p-value of each
coefficient in the model file's inference rows), the very numbers the
CLI's coefficient table prints, and says why when there are none."""

import math
import os
import subprocess

import numpy as np

import dplearn
from conftest import EXAMPLE


def _cli_table_p(args):
    """The P>|z| column of the CLI's printed coefficient table."""
    p = subprocess.run([dplearn.binary(), *args], check=True, capture_output=True, text=True)
    lines = p.stdout.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("coefficient") and "P>|z|" in l)
    out = {}
    for l in lines[head + 1:]:
        parts = l.split()
        if len(parts) < 4 or not parts[1].lstrip("+-").replace(".", "", 1).replace("e-", "").isdigit():
            break
        out[parts[0]] = float(parts[3])
    return out


def test_summary_p_values_are_the_cores(tmp_path, cps, cps_schema):
    m = dplearn.LinearRegression(epsilon=0.5, delta=1e-7, schema=cps_schema, random_state=3)
    m.fit(cps.drop(columns=["wage"]), cps["wage"])
    s = m.summary()
    rows = {r["name"]: r for r in m.fit_result_["inference"]["coefficients"]}
    assert all("p_value" in r for r in rows.values())
    for name, r in rows.items():
        assert s.frame.loc[name, "P>|z|"] == r["p_value"]
    assert s.p_source == "core" and "the core's p-value" in str(s)
    # not the normal approximation the package used to print: the core's
    # Monte Carlo p-value differs from 2Φ(−|z|) on some coefficient
    normal = [math.erfc(abs(r["original"] / r["original_se"]) / math.sqrt(2)) for r in rows.values()]
    assert any(abs(a - b) > 1e-3 for a, b in zip(normal, [r["p_value"] for r in rows.values()]))
    # and the CLI's own table prints the same p-values
    cli = _cli_table_p(["fit", "--data", os.path.join(EXAMPLE, "CPS1988.csv"), "--schema",
                        os.path.join(EXAMPLE, "schemas", "cps1988.json"), "--model", "linear", "--mechanism",
                        "gaussian-fm", "--epsilon", "0.5", "--delta", "1e-07", "--seed", "3", "--out",
                        str(tmp_path / "m.json")])
    assert set(cli) == set(rows)
    for name in rows:
        assert f"{s.frame.loc[name, 'P>|z|']:.3f}" == f"{cli[name]:.3f}", name


def test_objpert_logistic_summary(smokeban, smokeban_schema):
    """The logistic default (objpert) releases a Hessian for intervals: the
    summary shows the core's SEs and p-values; with ci_share=0 there are
    none, and the summary gives the core's reason."""
    X, y = smokeban.drop(columns=["smoker"]), smokeban["smoker"]
    m = dplearn.LogisticRegression(epsilon=1.0, delta=1e-6, schema=smokeban_schema, random_state=4).fit(X, y)
    assert m.fit_result_["mechanism"] == "objpert"
    s = m.summary()
    rows = m.fit_result_["inference"]["coefficients"]
    assert s.p_source == "core"
    np.testing.assert_array_equal(s.frame["P>|z|"].to_numpy(), [r["p_value"] for r in rows])
    np.testing.assert_array_equal(s.frame["std err"].to_numpy(), [r["original_se"] for r in rows])
    assert ((s.frame["P>|z|"] > 0) & (s.frame["P>|z|"] <= 1)).all()
    assert "Intervals: parametric bootstrap" in str(s)
    m0 = dplearn.LogisticRegression(epsilon=1.0, delta=1e-6, schema=smokeban_schema, random_state=4,
                                    ci_share=0).fit(X, y)
    s0 = m0.summary()
    assert s0.frame["P>|z|"].isna().all() and s0.frame["std err"].isna().all()
    assert s0.p_source is None
    text = str(s0)
    assert "No intervals: no confidence intervals: --ci-share 0 released no Hessian" in text
    assert "P>|z|: none" in text
