"""Binding overhead: dplearn.LinearRegression.fit on a 100,000 x 20
DataFrame against the CLI's `dplearn fit` on the same data as a CSV file,
measured in one run, alternating, median of --runs each.

    python bench/overhead.py [--rows 100000] [--cols 20] [--runs 5] [--mechanism gaussian-fm]

Prints both medians and the ratio (Python / CLI). The Python side's time
includes everything a user waits for: schema checks, the Parquet write, the
core's run and the parsing of its report; the CLI side is the process alone
on a CSV already on disk (its write is not counted).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import pandas as pd

import dplearn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--cols", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mechanism", default="gaussian-fm")
    ap.add_argument("--model", default="linear", choices=["linear", "logistic"])
    ap.add_argument("--ci-share", type=float, default=None, help="passed to both sides (0: no intervals, the leanest fit)")
    a = ap.parse_args()
    warnings.simplefilter("ignore", dplearn.InsecureRandomnessWarning)
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(a.rows, a.cols)), columns=[f"x{j}" for j in range(a.cols)])
    if a.model == "linear":
        y = pd.Series(X.to_numpy() @ rng.normal(size=a.cols) + rng.normal(size=a.rows), name="y")
        schema = dplearn.Schema.from_frame(X, "y", bounds={c: (-1, 1) for c in X.columns}, target_bounds=(-10, 10))
        est = dplearn.LinearRegression
    else:
        y = pd.Series((X.to_numpy() @ rng.normal(size=a.cols) + rng.logistic(size=a.rows) > 0).astype(int), name="y")
        schema = dplearn.Schema.from_frame(X, "y", bounds={c: (-1, 1) for c in X.columns})
        est = dplearn.LogisticRegression
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "data.csv")
        X.assign(y=y).to_csv(csv, index=False)
        sp = os.path.join(tmp, "schema.json")
        schema.save(sp)
        cmd = [dplearn.binary(), "fit", "--data", csv, "--schema", sp, "--model", a.model, "--mechanism", a.mechanism,
               "--epsilon", "1", "--delta", "1e-7", "--out", os.path.join(tmp, "m.json"), "--seed", "1", "--format", "json"]
        if a.ci_share is not None:
            cmd += ["--ci-share", repr(a.ci_share)]
        cli, py = [], []
        for _ in range(a.runs):
            t = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            cli.append(time.perf_counter() - t)
            t = time.perf_counter()
            est(epsilon=1, delta=1e-7, mechanism=a.mechanism, schema=schema, random_state=1, ci_share=a.ci_share).fit(X, y)
            py.append(time.perf_counter() - t)
    c, p = statistics.median(cli), statistics.median(py)
    print(f"{a.rows} x {a.cols} {a.model} {a.mechanism} ci-share {a.ci_share}: CLI on CSV median {c:.3f} s, Python on DataFrame median {p:.3f} s, "
          f"ratio {p / c:.3f} (runs {a.runs}; CLI {['%.3f' % v for v in cli]}, Python {['%.3f' % v for v in py]})")


if __name__ == "__main__":
    sys.exit(main())
