"""The privacy calculator (``dplearn privacy ...``) from Python.

Every function runs the Go calculator and returns its JSON answer as a dict
(full precision; the CLI's words round guarantees up). Keyword arguments map
to the command's flags (``site_sensitivities=[...]`` → ``--site-sensitivities``).
"""

from __future__ import annotations

from typing import Any

from . import _cli


def _privacy(cmd: str, **kw: Any) -> dict[str, Any]:
    return _cli.run_json(["privacy", cmd, *_cli.flags(**kw)])


def calibrate(*, mechanism: str, epsilon: float, sensitivity: float, delta: float | None = None) -> dict[str, Any]:
    """Noise scale for a target (ε, δ): laplace, gaussian, gaussian-classic or
    discrete-gaussian. Result "scale"."""
    return _privacy("calibrate", mechanism=mechanism, epsilon=epsilon, delta=delta, sensitivity=sensitivity)


def gaussian_steps(*, sigma: float, sensitivity: float, steps: int, delta: float, no_grid_slack: bool = False) -> dict[str, Any]:
    """(ε, δ) of T Gaussian steps (noisy gradient descent)."""
    return _privacy("gaussian-steps", sigma=sigma, sensitivity=sensitivity, steps=steps, delta=delta,
                    no_grid_slack=no_grid_slack)


def subsampled(*, q: float, steps: int, delta: float, sigma: float | None = None, epsilon: float | None = None,
               neighbours: str | None = None) -> dict[str, Any]:
    """(ε, δ) of Poisson-subsampled Gaussian steps, or σ for a target ε."""
    return _privacy("subsampled", q=q, steps=steps, delta=delta, sigma=sigma, epsilon=epsilon, neighbours=neighbours)


def cape(*, epsilon: float, sites: int | None = None, n: int | None = None, tau: float | None = None,
         delta: float | None = None, sensitivity: float | None = None, site_sensitivities=None,
         colluders: int | None = None) -> dict[str, Any]:
    """Exact δ(ε) of the CAPE scheme, or τ for a target (ε, δ)."""
    return _privacy("cape", epsilon=epsilon, sites=sites, n=n, tau=tau, delta=delta, sensitivity=sensitivity,
                    site_sensitivities=site_sensitivities, colluders=colluders)


def binomial(*, epsilon: float, delta: float, sensitivity: int = 1) -> dict[str, Any]:
    """Smallest number of coin flips for the binomial mechanism."""
    return _privacy("binomial", epsilon=epsilon, delta=delta, sensitivity=sensitivity)
