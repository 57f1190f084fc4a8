"""Running the dplearn binary: where it is, how its errors become Python
exceptions."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from typing import Any, Sequence

_HERE = os.path.dirname(os.path.abspath(__file__))


class DplearnError(RuntimeError):
    """The dplearn core refused a request (its message is kept verbatim)."""

    def __init__(self, message: str, args: Sequence[str] = ()):
        super().__init__(message)
        self.command = list(args)


class DataError(ValueError):
    """A value or column of the input cannot be used; ``column`` names it."""

    def __init__(self, message: str, column: str | None = None):
        super().__init__(message)
        self.column = column


class ParameterError(DplearnError, ValueError):
    """The core refused a parameter (its flag is named in the message:
    --epsilon is ``epsilon=``, --delta ``delta=``, other flags ``options=``)."""


class BudgetExceededError(DplearnError):
    """A ledger refused a charge: the fit or release would overspend it."""


def binary() -> str:
    """The path of the dplearn executable: $DPLEARN_BIN, else the one built
    into the package at install time, else ``dplearn`` on PATH."""
    env = os.environ.get("DPLEARN_BIN")
    if env:
        return env
    built = os.path.join(_HERE, "_bin", "dplearn")
    if os.path.exists(built):
        return built
    found = shutil.which("dplearn")
    if found:
        return found
    raise DplearnError("the dplearn executable was not built with the package (reinstall with the Go toolchain on PATH) "
                       "and is not on PATH; set DPLEARN_BIN to its path")


_COLUMN = re.compile(r'column "([^"]+)"')


def run(args: Sequence[str], *, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """Runs dplearn with args; raises DataError (naming the column when the
    core's message does) or DplearnError when it fails."""
    args = [str(a) for a in args]
    try:
        p = subprocess.run([binary(), *args], input=stdin, capture_output=True)
    except OSError as e:  # missing or non-executable binary
        raise DplearnError(f"cannot run dplearn: {e}", args) from e
    if p.returncode != 0:
        msg = p.stderr.decode("utf-8", "replace").strip()
        # keep the error line(s), not the usage text cobra may append
        lines = [l for l in msg.splitlines() if l.strip()]
        err = [l for l in lines if l.startswith("Error:") or l.startswith("dplearn:")] or lines[-3:]
        text = "\n".join(l.removeprefix("Error: ") for l in err) or f"dplearn exited with status {p.returncode}"
        if "budget" in text and ("exceed" in text or "refus" in text):
            raise BudgetExceededError(text, args)
        m = _COLUMN.search(text)
        if m:
            raise DataError(text, m.group(1))
        body = text.removeprefix("dplearn: ")
        if body.startswith("--") or " needs --" in body:
            raise ParameterError(text, args)
        raise DplearnError(text, args)
    return p


def run_json(args: Sequence[str], **kw) -> Any:
    """Runs dplearn with --format json and decodes its one JSON object."""
    p = run([*args, "--format", "json"], **kw)
    return json.loads(p.stdout)


def flags(**kw) -> list[str]:
    """Maps keyword arguments to flags: foo_bar=1 → --foo-bar 1; True → bare
    flag; None/False → omitted; lists → comma-separated."""
    out: list[str] = []
    for k, v in kw.items():
        if v is None or v is False:
            continue
        name = "--" + k.replace("_", "-")
        if v is True:
            out.append(name)
        elif isinstance(v, (list, tuple)):
            out += [name, ",".join(_num(x) for x in v)]
        else:
            out += [name, _num(v)]
    return out


def _num(v: Any) -> str:
    """Floats in their shortest round-trip form, so the Go side parses the
    very same float64."""
    if isinstance(v, float):
        return repr(v)
    return str(v)
