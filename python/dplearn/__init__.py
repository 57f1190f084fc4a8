"""dplearn from Python: scikit-learn estimators over the dplearn Go core.

See python/README.md and docs/python.md. Every mechanism, noise draw and
privacy computation runs in the ``dplearn`` executable (built from this
repository at install time); this package maps DataFrames, schemas and
parameters onto it and parses its reports.
"""

from . import cape, datasets, privacy
from ._cli import BudgetExceededError, DataError, DplearnError, ParameterError, binary
from .estimators import (InsecureRandomnessWarning, LinearRegression, LogisticRegression, PrivacyLeakWarning,
                         PrivacyReport, Release, RobustRegression, Summary)
from .ledger import Ledger
from .schema import MissingBoundsError, Schema

__all__ = ["LinearRegression", "LogisticRegression", "RobustRegression", "Schema", "Ledger", "PrivacyReport",
           "Release", "Summary", "privacy", "cape", "datasets", "DataError", "DplearnError", "ParameterError", "BudgetExceededError",
           "MissingBoundsError", "InsecureRandomnessWarning", "PrivacyLeakWarning", "binary"]

__version__ = "0.1.0"
