import json
import os
import subprocess
import warnings

import pandas as pd
import pytest

import dplearn

REPO = os.environ.get("DPLEARN_REPO") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(REPO, "exampledata")


def pytest_configure(config):
    warnings.simplefilter("ignore", dplearn.InsecureRandomnessWarning)


@pytest.fixture(scope="session")
def cps():
    return pd.read_csv(os.path.join(EXAMPLE, "CPS1988.csv"))


@pytest.fixture(scope="session")
def smokeban():
    return pd.read_csv(os.path.join(EXAMPLE, "SmokeBan.csv"))


@pytest.fixture(scope="session")
def cps_schema():
    return dplearn.Schema.load(os.path.join(EXAMPLE, "schemas", "cps1988.json"))


@pytest.fixture(scope="session")
def smokeban_schema():
    return dplearn.Schema.load(os.path.join(EXAMPLE, "schemas", "smokeban.json"))


def cli_fit(tmp_path, data, schema, model, mechanism, epsilon, delta, seed, extra=()):
    """The CLI itself on a file: the model file's coefficients."""
    out = tmp_path / f"cli-{model}-{mechanism}-{seed}.json"
    args = [dplearn.binary(), "fit", "--data", str(data), "--schema", str(schema), "--model", model,
            "--mechanism", mechanism, "--epsilon", repr(float(epsilon)), "--out", str(out), "--seed", str(seed), *extra]
    if delta is not None:
        args += ["--delta", repr(float(delta))]
    subprocess.run(args, check=True, capture_output=True)
    with open(out) as f:
        return json.load(f)
