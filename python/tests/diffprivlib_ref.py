"""diffprivlib's LinearRegression and LogisticRegression (IBM diffprivlib
0.6, models/linear_regression.py, models/logistic_regression.py,
mechanisms/laplace.py, mechanisms/vector.py, tools/utils.py), reimplemented
faithfully for the comparison in python/README.md: its package cannot be
installed here (no PyPI). Same steps, same sensitivities (including the ones
its issues #104/#105 report as wrong), same budget split, same optimiser;
numpy's Generator replaces its RNG.
"""

import numpy as np
from scipy import optimize
from scipy.special import expit, log_expit


def _logistic_loss_and_grad(w, X, y, alpha, sample_weight):
    """scikit-learn <= 1.0's sklearn.linear_model._logistic._logistic_loss_and_grad
    (what diffprivlib 0.6 perturbs; removed from scikit-learn 1.1): the summed
    log-loss plus alpha/2 |w|^2, the intercept w[-1] unpenalised."""
    n_features = X.shape[1]
    grad = np.empty_like(w)
    c = w[-1] if w.size == n_features + 1 else 0.0
    w = w[:n_features]
    yz = y * (X @ w + c)
    out = -np.sum(sample_weight * log_expit(yz)) + 0.5 * alpha * np.dot(w, w)
    z0 = sample_weight * (expit(yz) - 1) * y
    grad[:n_features] = X.T @ z0 + alpha * w
    if grad.shape[0] > n_features:
        grad[-1] = z0.sum()
    return out, grad


def _laplace(rng, value, epsilon, sensitivity):
    return value + rng.laplace(scale=sensitivity / epsilon)


def _laplace_folded(rng, value, epsilon, sensitivity, lower=0.0):
    # LaplaceFolded: Laplace noise folded (reflected) at the lower bound
    v = _laplace(rng, value, epsilon, sensitivity)
    return lower + abs(v - lower) if v < lower else v


def _laplace_truncated(rng, value, epsilon, sensitivity, lower, upper):
    return float(np.clip(_laplace(rng, value, epsilon, sensitivity), lower, upper))


def _dp_mean(rng, x, lo, hi, epsilon):
    """tools.utils.mean over axis 0: each column's mean with LaplaceTruncated,
    sensitivity (hi - lo) / n, the full epsilon per column (its _wrap_axis)."""
    n = x.shape[0]
    return np.array([_laplace_truncated(rng, x[:, j].mean(), epsilon, (hi[j] - lo[j]) / n, lo[j], hi[j])
                     for j in range(x.shape[1])])


class DiffprivlibLinearRegression:
    def __init__(self, epsilon, bounds_X, bounds_y, rng):
        self.epsilon, self.bounds_X, self.bounds_y, self.rng = epsilon, bounds_X, bounds_y, rng

    def fit(self, X, y):
        rng = self.rng
        X = np.asarray(X, dtype=float).copy()
        y = np.asarray(y, dtype=float).reshape(-1, 1).copy()
        n_features = X.shape[1]
        lo_x, hi_x = (np.asarray(b, dtype=float) for b in self.bounds_X)
        lo_y, hi_y = np.array([self.bounds_y[0]], float), np.array([self.bounds_y[1]], float)
        eps_int = 1 / (n_features + 1)
        # _preprocess_data: clip, DP means with epsilon * eps_int, centre
        X = np.clip(X, lo_x, hi_x)
        y = np.clip(y, lo_y, hi_y)
        X_offset = _dp_mean(rng, X, lo_x, hi_x, self.epsilon * eps_int)
        y_offset = _dp_mean(rng, y, lo_y, hi_y, self.epsilon * eps_int)
        X -= X_offset
        y -= y_offset
        bx = (lo_x - X_offset, hi_x - X_offset)
        by = (lo_y - y_offset, hi_y - y_offset)
        # _construct_regression_obj with epsilon * (1 - eps_int)
        eps = self.epsilon * (1 - eps_int)
        local = eps / (1 + n_features + n_features * (n_features + 1) / 2)
        c0 = (y ** 2).sum(axis=0)
        c1 = np.einsum("ij,ik->jk", X, y)
        c2 = np.einsum("ij,ik", X, X)

        def maxsens(yl, yu, xl, xu):
            corners = [yl * xl, yl * xu, yu * xl, yu * xu]
            return np.max(corners) - np.min(corners)

        m0 = _laplace_folded(rng, c0[0], local, np.abs([by[0][0], by[1][0]]).max() ** 2)
        m1 = np.array([_laplace(rng, c1[j, 0], local, maxsens(by[0][0], by[1][0], bx[0][j], bx[1][j]))
                       for j in range(n_features)])
        m2 = np.zeros((n_features, n_features))
        for i in range(n_features):
            m2[i, i] = _laplace_folded(rng, c2[i, i], local, np.max(np.abs([bx[0][i], bx[1][i]])) ** 2)
            for j in range(i + 1, n_features):
                m2[i, j] = m2[j, i] = _laplace(rng, c2[i, j], local, maxsens(bx[0][i], bx[1][i], bx[0][j], bx[1][j]))

        def obj(w):
            f = m0 - 2 * m1 @ w + np.sum(m2 * np.outer(w, w))
            return f, -2 * m1 + 2 * m2 @ w

        w = optimize.minimize(obj, np.zeros(n_features), jac=True).x
        self.coef_ = w
        self.intercept_ = float(y_offset[0] - X_offset @ w)
        return self

    def predict(self, X):
        return np.asarray(X, float) @ self.coef_ + self.intercept_


class DiffprivlibLogisticRegression:
    """C = 1, max_iter = 100, tol = 1e-4, fit_intercept, data_norm given."""

    def __init__(self, epsilon, data_norm, rng, C=1.0, max_iter=100, tol=1e-4):
        self.epsilon, self.data_norm, self.rng, self.C = epsilon, data_norm, rng, C
        self.max_iter, self.tol = max_iter, tol

    def fit(self, X, y):
        rng = self.rng
        X = np.asarray(X, float)
        norms = np.linalg.norm(X, axis=1)
        X = X * np.minimum(1, self.data_norm / np.maximum(norms, 1e-300))[:, None]  # clip_to_norm
        y = np.where(np.asarray(y) == 1, 1.0, -1.0)
        d = X.shape[1] + 1
        alpha = 1.0 / self.C
        # mechanisms.Vector(epsilon, dimension=d, alpha, function_sensitivity=0.25, data_sensitivity=data_norm)
        fs, ds = 0.25, self.data_norm
        eps_p = self.epsilon - 2 * np.log(1 + fs * ds / (0.5 * alpha))
        delta = 0.0
        if eps_p <= 0:
            delta = fs * ds / (np.exp(self.epsilon / 4) - 1) - 0.5 * alpha
            eps_p = self.epsilon / 2
        scale = ds * 2 / eps_p
        v = rng.standard_normal(d)
        v = v / np.linalg.norm(v) * rng.gamma(d, scale)

        def noisy(w, *args):
            f, g = _logistic_loss_and_grad(w, *args)
            return f + v @ w + 0.5 * delta * w @ w, g + v + delta * w

        w, _, _ = optimize.fmin_l_bfgs_b(noisy, np.zeros(d), args=(X, y, alpha, np.ones(len(y))),
                                         pgtol=self.tol, maxiter=self.max_iter)
        self.coef_, self.intercept_ = w[:-1], w[-1]
        return self

    def predict(self, X):
        return (np.asarray(X, float) @ self.coef_ + self.intercept_ > 0).astype(int)
