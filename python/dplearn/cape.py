"""A site of a multi-site capeFM fit (``dplearn cape join``) from Python.

``join`` writes the site's DataFrame to a private temporary Parquet file and
runs ``dplearn cape join`` on it: the protocol (secure aggregation, mutual
TLS, key signatures, the site's own noise, its ledger checks) is the Go
code's. The site's rows never leave the machine; only the protocol's
perturbed statistics do.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pandas as pd

from . import _cli, _parquet
from .ledger import Ledger
from .schema import Schema


def join(data: pd.DataFrame, *, server: str, schema: Schema | str, model: str, epsilon: float, delta: float,
         certs: str | None = None, ledger: Ledger | str | None = None, insecure: bool = False,
         name: str | None = None, mechanism: str | None = None, random_state: int | None = None,
         **flags: Any) -> dict[str, Any]:
    """Takes part in a capeFM fit as one site; returns the CLI's JSON report.

    ``data`` holds the schema's feature columns and its target; ``schema``
    must be the one every party uses. ``certs`` is the site's certificate
    directory from ``dplearn certs`` (or ``insecure=True, name=...`` for a
    loopback test). Further keyword arguments map to ``dplearn cape join``
    flags (``min_sites=3`` → ``--min-sites 3``).
    """
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data: expected a pandas DataFrame, got {type(data).__name__}")
    if isinstance(schema, str):
        schema = Schema.load(schema)
    t = schema.target_name
    if t not in data.columns:
        from ._cli import DataError
        raise DataError(f"column {t!r}: the schema's target is not in the data", t)
    schema.check_frame(data.drop(columns=[t]), data[t])
    ledger = ledger.path if isinstance(ledger, Ledger) else ledger
    with tempfile.TemporaryDirectory(prefix="dplearn-cape-") as tmp:
        path = os.path.join(tmp, "site.parquet")
        _parquet.write(data[[*schema.feature_names, t]], path)
        sp = os.path.join(tmp, "schema.json")
        schema.save(sp)
        args = ["cape", "join", *_cli.flags(server=server, certs=certs, data=path, schema=sp, model=model,
                                           epsilon=float(epsilon), delta=float(delta), ledger=ledger,
                                           insecure=insecure, name=name, mechanism=mechanism,
                                           seed=random_state, **flags)]
        return _cli.run_json(args)
