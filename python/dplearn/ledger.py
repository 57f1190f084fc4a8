"""dplearn.Ledger: the CLI's privacy budget file (``dplearn ledger``).

The file format, locking and exact arithmetic are the Go code's; this class
only names a file and runs ``dplearn ledger create|charge|show`` on it. Give a
Ledger (or its path) to an estimator's ``ledger=`` and ``fit`` charges the
fit's guarantee to it (``dplearn fit --ledger``), refusing an overspend with
BudgetExceededError.
"""

from __future__ import annotations

import os
from typing import Any

from . import _cli


class Ledger:
    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)

    @classmethod
    def create(cls, path: str | os.PathLike, *, name: str, epsilon: float | None = None, delta: float | None = None,
               rho: float | None = None) -> "Ledger":
        """Creates a new ledger file with an (ε, δ) or ρ (zCDP) budget."""
        _cli.run_json(["ledger", "create", os.fspath(path), *_cli.flags(name=name, epsilon=epsilon, delta=delta, rho=rho)])
        return cls(path)

    def charge(self, label: str, *, epsilon: float | None = None, delta: float | None = None,
               rho: float | None = None) -> dict[str, Any]:
        """Charges a release; raises BudgetExceededError if it would overspend."""
        return _cli.run_json(["ledger", "charge", self.path, *_cli.flags(label=label, epsilon=epsilon, delta=delta, rho=rho)])

    def show(self) -> dict[str, Any]:
        """The budget, what has been spent and what is left (the CLI's JSON)."""
        return _cli.run_json(["ledger", "show", self.path])

    @property
    def spent(self) -> tuple[float, float]:
        s = self.show()
        return s["spent_epsilon"], s["spent_delta"]

    @property
    def remaining(self) -> tuple[float, float]:
        s = self.show()
        return s["remaining_epsilon"], s["remaining_delta"]

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"Ledger({self.path!r})"
