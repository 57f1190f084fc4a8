"""The public example tables the dplearn binary embeds (exampledata/ in the
repository), copied into the package at install time: CPS1988 (wages,
linear) and SmokeBan (smoking, logistic), each with its schema."""

from __future__ import annotations

import os

import pandas as pd

from .schema import Schema

_HERE = os.path.dirname(os.path.abspath(__file__))
_TABLES = {"cps1988": ("CPS1988.csv", "cps1988.json"), "smokeban": ("SmokeBan.csv", "smokeban.json")}


def _dir() -> str:
    for d in (os.path.join(_HERE, "data"), os.path.join(_HERE, "..", "..", "exampledata")):
        if os.path.exists(os.path.join(d, "CPS1988.csv")):
            return d
    raise FileNotFoundError("dplearn's example data is not installed (reinstall the package from the repository)")


def path(name: str) -> str:
    """The CSV file of an example table."""
    return os.path.join(_dir(), _TABLES[name.lower()][0])


def schema_path(name: str) -> str:
    """The schema file of an example table."""
    return os.path.join(_dir(), "schemas", _TABLES[name.lower()][1])


def load(name: str) -> tuple[pd.DataFrame, Schema]:
    """(table, schema) of an example table: "cps1988" or "smokeban"."""
    return pd.read_csv(path(name)), Schema.load(schema_path(name))
