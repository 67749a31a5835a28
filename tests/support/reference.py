"""Plain dense transcriptions of the papers' full-covariance updates: the oracle of the tests.

Each function maps (mu, Sigma, x, y) with y in {-1, +1} to the new (mu, Sigma), written as in
its paper, with no shared code and no tricks; numpy, dense, full covariance.
"""

from __future__ import annotations

import math
import statistics

import numpy as np


def phi_of(confidence):
    return statistics.NormalDist().inv_cdf(confidence)


def cw_var(mu, S, x, y, confidence):
    """CW, variance version: JMLR 2012 Lemma 1; Sigma^-1 <- Sigma^-1 + 2 alpha phi x x'."""
    phi = phi_of(confidence)
    m, v = y * mu @ x, x @ S @ x
    gamma = (-(1 + 2 * phi * m) + math.sqrt((1 + 2 * phi * m) ** 2 - 8 * phi * (m - phi * v))) / (
        4 * phi * v
    )
    alpha = max(0.0, gamma)
    mu = mu + alpha * y * S @ x
    S = np.linalg.inv(np.linalg.inv(S) + 2 * alpha * phi * np.outer(x, x))
    return mu, S


def cw_stdev(mu, S, x, y, confidence):
    """CW, stdev version: JMLR 2012 eq. (31) for alpha, eq. (27) for beta (not the box's typo)."""
    phi = phi_of(confidence)
    psi, zeta = 1 + phi**2 / 2, 1 + phi**2
    m, v = y * mu @ x, x @ S @ x
    alpha = max(0.0, (-m * psi + math.sqrt(m**2 * phi**4 / 4 + v * phi**2 * zeta)) / (v * zeta))
    u = 0.25 * (-alpha * v * phi + math.sqrt(alpha**2 * v**2 * phi**2 + 4 * v)) ** 2
    beta = alpha * phi / (math.sqrt(u) + v * alpha * phi)
    mu = mu + alpha * y * S @ x
    S = S - beta * S @ np.outer(x, x) @ S
    return mu, S


def arow(mu, S, x, y, r):
    """AROW (Crammer, Kulesza, Dredze 2009): beta = 1 / (v + r), alpha = max(0, 1 - m) beta."""
    m, v = y * mu @ x, x @ S @ x
    beta = 1 / (v + r)
    alpha = max(0.0, 1 - m) * beta
    mu = mu + alpha * y * S @ x
    if m < 1:
        S = S - beta * S @ np.outer(x, x) @ S
    return mu, S


def nherd(mu, S, x, y, C):
    """NHERD (Crammer and Lee 2010), full covariance:
    Sigma <- Sigma - Sigma x x' Sigma (C^2 v + 2 C) / (1 + C v)^2."""
    m, v = y * mu @ x, x @ S @ x
    if m < 1:
        mu = mu + max(0.0, 1 - m) / (v + 1 / C) * y * S @ x
        S = S - S @ np.outer(x, x) @ S * (C**2 * v + 2 * C) / (1 + C * v) ** 2
    return mu, S


def scw(mu, S, x, y, C, confidence, variant):
    """SCW-I / SCW-II (Wang, Zhao, Hoi 2012), as printed in their Algorithm 1."""
    phi = phi_of(confidence)
    psi, zeta = 1 + phi**2 / 2, 1 + phi**2
    m, v = y * mu @ x, x @ S @ x
    if phi * math.sqrt(v) - m <= 0:
        return mu, S
    if variant == "I":
        alpha = min(
            C, max(0.0, (-m * psi + math.sqrt(m**2 * phi**4 / 4 + v * phi**2 * zeta)) / (v * zeta))
        )
    else:
        n = v + 1 / (2 * C)
        gamma = phi * math.sqrt(phi**2 * m**2 * v**2 + 4 * n * v * (n + v * phi**2))
        alpha = max(0.0, (-(2 * m * n + phi**2 * m * v) + gamma) / (2 * (n**2 + n * v * phi**2)))
    u = 0.25 * (-alpha * v * phi + math.sqrt(alpha**2 * v**2 * phi**2 + 4 * v)) ** 2
    beta = alpha * phi / (math.sqrt(u) + v * alpha * phi)
    mu = mu + alpha * y * S @ x
    S = S - beta * S @ np.outer(x, x) @ S
    return mu, S


class SecondOrderPerceptron:
    """Cesa-Bianchi, Conconi, Gentile 2005, Figure 1: b and A over the mistakes, current x in A.

    A mistake is ``y (w . x) <= 0`` (a tie counts as a mistake, as in the perceptron).
    """

    def __init__(self, d, a):
        self.b = np.zeros(d)
        self.A = a * np.eye(d)

    def score(self, x):
        return np.linalg.solve(self.A + np.outer(x, x), self.b) @ x

    def learn(self, x, y):
        if y * self.score(x) <= 0:
            self.b = self.b + y * x
            self.A = self.A + np.outer(x, x)

    @property
    def mean(self):
        return np.linalg.solve(self.A, self.b)

    @property
    def cov(self):
        return np.linalg.inv(self.A)


def arrowhead_projection(mu, S, roots, scheme):
    """The Gaussian of the arrowhead family nearest N(mu, S), written from its definition.

    The family (river_cw/_engines/arrowhead.py): weights in blocks, each block's weights independent given
    its root (the intercept), blocks independent. `roots` maps each weight's index to its
    block's root index (a root maps to itself). Both projections keep mu, every root's
    variance and every weight's regression on its root, ``k_j = S_jr / S_rr``; the variance of
    w_j given its root is ``S_jj - k_j^2 S_rr`` for "drop" (the M-projection, which keeps the
    moments of every (root, weight) pair) and ``1 / (S^-1)_jj`` for "project" (the diagonal of the
    precision, as the diagonal "project" keeps it). The covariance is then ``S_rr k k' +
    diag(c)`` within a block (k = 1, c = 0 for the root) and 0 across blocks.
    """
    precision = np.linalg.inv(S)
    n = len(mu)
    loading, conditional = np.zeros(n), np.zeros(n)
    for j, r in enumerate(roots):
        loading[j] = S[j, r] / S[r, r]
        if j != r:
            drop = S[j, j] - loading[j] ** 2 * S[r, r]
            conditional[j] = drop if scheme == "drop" else 1.0 / precision[j, j]
    Q = np.diag(conditional)
    for j, r in enumerate(roots):
        for k, r2 in enumerate(roots):
            if r == r2:
                Q[j, k] += S[r, r] * loading[j] * loading[k]
    return mu, Q
