"""dplearn against diffprivlib (reimplemented faithfully in
diffprivlib_ref.py) on the embedded CPS1988 (linear, log wage) and SmokeBan
(logistic) tables at ε ∈ {0.1, 0.5, 1, 2}: test RMSE / accuracy on a fixed
80/20 split, mean over REPS noise draws. Both get the same public bounds
(the schemas in exampledata/schemas). Run as a script to print the README's
table:  python tests/test_compare_diffprivlib.py
"""

import os
import sys

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(__file__))
import dplearn  # noqa: E402
from diffprivlib_ref import DiffprivlibLinearRegression, DiffprivlibLogisticRegression  # noqa: E402
from conftest import EXAMPLE  # noqa: E402

EPSILONS = (0.1, 0.5, 1.0, 2.0)
REPS = 5


def split(df, seed=0):
    idx = np.random.default_rng(seed).permutation(len(df))
    cut = int(0.8 * len(df))
    return df.iloc[idx[:cut]].reset_index(drop=True), df.iloc[idx[cut:]].reset_index(drop=True)


def design(df, schema):
    """The schema's public encoding for diffprivlib: numeric features min-max
    scaled by their declared range (so its bounds are [0, 1], the fairest
    reading of its API), categorical ones one-hot without the reference."""
    cols = []
    for f in schema.features:
        v = df[f["name"]]
        if "range" in f:
            lo, hi = f["range"]
            cols.append(((v.astype(float) - lo) / (hi - lo)).clip(0, 1).rename(f["name"]))
        else:
            for c in f["categories"][1:]:
                cols.append((v.astype(str) == c).astype(float).rename(f"{f['name']}={c}"))
    return pd.concat(cols, axis=1).to_numpy()


def design_raw(df, schema):
    """The same design with numeric features in their own units, bounded by
    the declared ranges: what a diffprivlib user passes as bounds_X."""
    cols, lo, hi = [], [], []
    for f in schema.features:
        v = df[f["name"]]
        if "range" in f:
            cols.append(v.astype(float).clip(*f["range"]).rename(f["name"]))
            lo.append(f["range"][0])
            hi.append(f["range"][1])
        else:
            for c in f["categories"][1:]:
                cols.append((v.astype(str) == c).astype(float).rename(f"{f['name']}={c}"))
                lo.append(0.0)
                hi.append(1.0)
    return pd.concat(cols, axis=1).to_numpy(), (np.array(lo), np.array(hi))


def cps_results():
    df = pd.read_csv(os.path.join(EXAMPLE, "CPS1988.csv"))
    schema = dplearn.Schema.load(os.path.join(EXAMPLE, "schemas", "cps1988.json"))
    train, test = split(df)
    lo, hi = schema.target["range"]
    ylog_test = np.clip(np.log(test["wage"]), lo, hi)
    Xtr, Xte = design(train, schema), design(test, schema)
    ytr = np.log(train["wage"].to_numpy())
    rmse = lambda p: float(np.sqrt(np.mean((p - ylog_test) ** 2)))  # noqa: E731
    ols = np.linalg.lstsq(np.c_[np.ones(len(Xtr)), Xtr], np.clip(ytr, lo, hi), rcond=None)[0]
    out = {"nonprivate OLS": {e: rmse(np.c_[np.ones(len(Xte)), Xte] @ ols) for e in EPSILONS}}
    for name, mech, delta in (("dplearn gaussian-fm (δ=1e-6)", "gaussian-fm", 1e-6), ("dplearn fm (pure ε)", "fm", None)):
        out[name] = {}
        for e in EPSILONS:
            r = []
            for s in range(REPS):
                m = dplearn.LinearRegression(epsilon=e, delta=delta, mechanism=mech, schema=schema, ci_share=0,
                                             random_state=100 + s)
                m.fit(train.drop(columns=["wage"]), train["wage"])
                r.append(rmse(np.log(m.predict(test.drop(columns=["wage"])))))
            out[name][e] = float(np.mean(r))
    out["diffprivlib LinearRegression"] = {}
    for e in EPSILONS:
        r = []
        for s in range(REPS):
            rng = np.random.default_rng(200 + s)
            m = DiffprivlibLinearRegression(e, (np.zeros(Xtr.shape[1]), np.ones(Xtr.shape[1])), (lo, hi), rng)
            r.append(rmse(np.clip(m.fit(Xtr, ytr).predict(Xte), lo, hi)))  # clipped to the range, as dplearn's
        out["diffprivlib LinearRegression"][e] = float(np.mean(r))
    Rtr, bounds = design_raw(train, schema)
    Rte, _ = design_raw(test, schema)
    out["diffprivlib LinearRegression, raw ranges"] = {}
    for e in EPSILONS:
        r = []
        for s in range(REPS):
            m = DiffprivlibLinearRegression(e, bounds, (lo, hi), np.random.default_rng(200 + s))
            r.append(rmse(np.clip(m.fit(Rtr, ytr).predict(Rte), lo, hi)))
        out["diffprivlib LinearRegression, raw ranges"][e] = float(np.mean(r))
    return out


def smokeban_results():
    df = pd.read_csv(os.path.join(EXAMPLE, "SmokeBan.csv"))
    schema = dplearn.Schema.load(os.path.join(EXAMPLE, "schemas", "smokeban.json"))
    train, test = split(df)
    Xtr, Xte = design(train, schema), design(test, schema)
    ytr = (train["smoker"] == "yes").astype(int).to_numpy()
    yte = (test["smoker"] == "yes").astype(int).to_numpy()
    acc = lambda p: float(np.mean(p == yte))  # noqa: E731
    out = {"majority class": {e: acc(np.zeros_like(yte) + int(ytr.mean() > 0.5)) for e in EPSILONS}}
    for name, mech in (("dplearn objpert (δ=1e-6)", "objpert"), ("dplearn gaussian-fm (δ=1e-6)", "gaussian-fm")):
        out[name] = {}
        for e in EPSILONS:
            r = []
            for s in range(REPS):
                m = dplearn.LogisticRegression(epsilon=e, delta=1e-6, mechanism=mech, schema=schema, random_state=100 + s)
                m.fit(train.drop(columns=["smoker"]), train["smoker"])
                r.append(acc((m.predict(test.drop(columns=["smoker"])) == "yes").astype(int)))
            out[name][e] = float(np.mean(r))
    # data_norm: the public bound on a row's norm after the encoding above
    # (each of the 6 feature groups contributes at most 1)
    norm = float(np.sqrt(len(schema.features)))
    out["diffprivlib LogisticRegression"] = {}
    for e in EPSILONS:
        r = []
        for s in range(REPS):
            m = DiffprivlibLogisticRegression(e, norm, np.random.default_rng(200 + s))
            r.append(acc(m.fit(Xtr, ytr).predict(Xte)))
        out["diffprivlib LogisticRegression"][e] = float(np.mean(r))
    Rtr, (rlo, rhi) = design_raw(train, schema)
    Rte, _ = design_raw(test, schema)
    raw_norm = float(np.linalg.norm(np.maximum(np.abs(rlo), np.abs(rhi))))  # the declared ranges' largest row norm
    out["diffprivlib LogisticRegression, raw ranges"] = {}
    for e in EPSILONS:
        r = []
        for s in range(REPS):
            m = DiffprivlibLogisticRegression(e, raw_norm, np.random.default_rng(200 + s))
            r.append(acc(m.fit(Rtr, ytr).predict(Rte)))
        out["diffprivlib LogisticRegression, raw ranges"][e] = float(np.mean(r))
    return out


def test_cps1988_dplearn_beats_diffprivlib():
    res = cps_results()
    for e in EPSILONS:
        assert res["dplearn gaussian-fm (δ=1e-6)"][e] < res["diffprivlib LinearRegression"][e], (e, res)
        # and nothing private beats the non-private fit by more than noise
        assert res["dplearn gaussian-fm (δ=1e-6)"][e] > 0.95 * res["nonprivate OLS"][e]


def test_smokeban_dplearn_not_worse_than_diffprivlib():
    res = smokeban_results()
    for e in EPSILONS:
        best = max(res["dplearn objpert (δ=1e-6)"][e], res["dplearn gaussian-fm (δ=1e-6)"][e])
        assert best >= res["diffprivlib LogisticRegression"][e] - 0.01, (e, res)


def table(res, fmt):
    lines = ["| method | " + " | ".join(f"ε = {e:g}" for e in EPSILONS) + " |",
             "|---|" + "---:|" * len(EPSILONS)]
    for name, row in res.items():
        lines.append(f"| {name} | " + " | ".join(format(row[e], fmt) for e in EPSILONS) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")
    print(f"CPS1988, linear regression of log(wage): test RMSE, mean of {REPS} draws\n")
    print(table(cps_results(), ".4f"))
    print(f"\nSmokeBan, logistic regression of smoker: test accuracy, mean of {REPS} draws\n")
    print(table(smokeban_results(), ".4f"))
