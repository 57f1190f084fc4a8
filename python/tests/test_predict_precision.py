"""predict returns the core's float64 predictions exactly (``dplearn
predict --digits 0``, read back with a round-trip parser), not the CLI's
default 8 significant digits."""

import math
from fractions import Fraction

import numpy as np

import dplearn

LO, HI = -10.0, 10.0
BOUNDS = [(-1.0, 1.0), (-2.0, 2.0), (-4.0, 4.0)]


def _fit():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(5000, 3)) * [1.2, 2.2, 4.4]  # some values beyond the bounds: clipped
    y = X @ [0.3, -0.2, 0.1] + 0.3 * rng.normal(size=5000)
    m = dplearn.LinearRegression(epsilon=2.0, delta=1e-6, bounds=BOUNDS, target_bounds=(LO, HI),
                                 random_state=1, ci_share=0).fit(X, y)
    return m, X


def _unit_scale(b):
    """The encoder's 1/√B rounded down: the largest float64 s with B·s² ≤ 1."""
    s = 1 / math.sqrt(b)
    while Fraction(s) ** 2 * b > 1:
        s = math.nextafter(s, 0)
    while Fraction(math.nextafter(s, 1)) ** 2 * b <= 1:
        s = math.nextafter(s, 1)
    return s


def test_predict_is_the_core_float64():
    """Bit for bit the core's arithmetic, recomputed independently from the
    model file's encoded coefficients: scaled affine encoding of the clipped
    features, the dot product in the core's order (intercept first, one
    rounding per product and per sum), clip to [−1, 1], decode."""
    m, X = _fit()
    enc = np.asarray(m.model_["coefficients"], dtype=np.float64)
    assert m.model_["features"] == ["(intercept)", "x0", "x1", "x2"]
    s = _unit_scale(4)
    z = np.zeros(len(X)) + s * enc[0]
    for j, (lo, hi) in enumerate(BOUNDS):
        v = np.clip(X[:, j], lo, hi)
        u = np.clip(2 * (v - lo) / (hi - lo) - 1, -1, 1)
        z = z + (s * u) * enc[j + 1]
    z = np.clip(z, -1, 1)
    want = LO + (z + 1) / 2 * (HI - LO)
    got = m.predict(X)
    assert got.dtype == np.float64
    assert [v.hex() for v in got] == [v.hex() for v in want]
    # the old 8-digit output would fail the comparison on most rows
    eight = np.asarray([float(f"{v:.8g}") for v in want])
    assert (eight != want).mean() > 0.5


def test_predict_matches_coef_and_intercept():
    """predict(X) = X @ coef_ + intercept_ (inside the bounds) up to the
    rounding of the two computations: the core computes on the encoded
    scale (×1/√B, affine maps, decode), the check in original units, so the
    two float64 results differ by a few rounding errors of the terms'
    magnitudes (not 1 ulp of the result, which cancellation can make
    arbitrarily small); bound 8·eps·(|b0| + Σ|c_j x_j| + max(|lo|, |hi|))."""
    m, X = _fit()
    X = np.clip(X, [b[0] for b in BOUNDS], [b[1] for b in BOUNDS])
    got = m.predict(X)
    want = X @ m.coef_ + m.intercept_
    assert np.all((want > LO) & (want < HI))  # no clipping of the prediction
    mag = abs(m.intercept_) + np.abs(X * m.coef_).sum(axis=1) + max(abs(LO), abs(HI))
    err = np.abs(got - want) / (np.finfo(np.float64).eps * mag)
    assert err.max() <= 8, err.max()
    # an 8-significant-digit prediction is off by up to 5e-9 relative: far beyond the bound
    eight = np.asarray([float(f"{v:.8g}") for v in got])
    assert (np.abs(eight - want) / (np.finfo(np.float64).eps * mag)).max() > 8
