"""The share of flipped labels in a binary model's calibrated probabilities (``calibrate=True``).

A label that a stream flips at random (river's Hyperplane flips 5% of its labels by default)
lands on the wrong side of any boundary, and a probit probability ``Phi(z)``, z the calibrated
standardised margin (`river_cw.calibration`), makes a confident model pay for it in full: at
z = 3 a flipped label costs 6.6 nats. With a share eps of flipped labels the probability of the
positive label is ``eps + (1 - 2 eps) Phi(z)``: the probit with flipped labels of outlier-robust
Gaussian process classification (Kim and Ghahramani 2008), on the calibration as it is. It
changes no prediction (it is increasing in z and 1/2 at z = 0), no temperature, no forgetting:
only the reported probabilities of a model of two labels.

eps is the mixture weight of two components, the label as the margin says and the label
flipped, and online EM fits it (Cappe and Moulines 2009): each example, before the update, gives
the posterior probability that its label was flipped, ``r = eps Phi(-z_y) / p``, z_y the
calibrated margin of its label and ``p = eps + (1 - 2 eps) Phi(z_y)``, and eps moves to the
running mean of the r's, ``n <- n + w``, ``eps <- eps + w (r - eps) / n``, from a prior share
`START_SHARE` counted as `START_COUNT` examples, and at most `MOST`: 1/2, where every
probability is 1/2 (a stream whose labels run against the margins more often than not has
drifted, which the model's forgetting answers, rather than flipped). From a share of 0 EM stays
at 0, so the prior is what lets it find flips; measured against priors of 0.001 to 0.01 over 10
to 100 examples on the drifting and stationary streams of benchmarks/drift.py, it comes within
0.0013 of the best share in hindsight on every stream and costs at most 0.0003 of log loss
where nothing flips
(benchmarks/log_loss_gap.py, ``--part link``; benchmarks/README.md).

The state is two floats, ``[n, eps]`` (`start`); `observe` steps it and `mix` merges the states
of models `river_cw.combine` mixes.

References: Kim, H.-C. and Ghahramani, Z., 2008. Outlier robust Gaussian process
classification. Structural, Syntactic, and Statistical Pattern Recognition, LNCS 5342, 896-905.
Cappe, O. and Moulines, E., 2009. On-line expectation-maximization algorithm for latent data
models. Journal of the Royal Statistical Society B 71(3), 593-613.
"""

from __future__ import annotations

import math
from array import array

__all__ = ["MOST", "START_COUNT", "START_SHARE", "mix", "observe", "probability", "start"]

START_SHARE = 0.003  # the prior share of flipped labels
START_COUNT = 100.0  # the examples the prior counts as
MOST = 0.5  # beyond it the probabilities would fall as the margin rises


def start() -> array:
    """The state before any example: ``[n, eps]``, the prior.

    >>> list(start())
    [100.0, 0.003]

    """
    return array("d", (START_COUNT, START_SHARE))


def probability(state, right: float) -> float:
    """The label's probability ``eps + (1 - 2 eps) right`` given its probability `right` under
    the calibrated margin alone; `right` itself without a state (None).

    >>> probability(None, 0.9), round(probability(array("d", (1.0, 0.1)), 0.9), 6)
    (0.9, 0.82)

    """
    if state is None:
        return right
    eps = state[1]
    return eps + (1.0 - 2.0 * eps) * right


def observe(state, right: float, w: float) -> None:
    """Step `state` = ``[n, eps]`` in place on an example whose label the calibrated margin gives
    probability `right` (``Phi(z_y)``), counted with sample weight `w`: the online EM step of the
    module's docstring (``w == 1``: one example). A step that is not finite, or from a label of
    probability 0, changes nothing. The compiled engines transcribe it (`rcw_flips_observe`).

    >>> state = start()
    >>> observe(state, 0.0001, 1.0)  # a confident mistake: likely a flip
    >>> round(state[1], 6)
    0.012553

    """
    n, eps = state[0] + w, state[1]
    p = eps + (1.0 - 2.0 * eps) * right
    if not p > 0.0:  # no share and no chance of the label: nothing to learn from
        return
    share = eps + w * (eps * (1.0 - right) / p - eps) / n
    if not math.isfinite(share):
        return
    state[0] = n
    state[1] = min(share, MOST)


def mix(members: list, base=None):
    """The state of a mix of models (`river_cw.combine`), from the members' states and their
    common start's (`base`; None: models trained from the start): as `river_cw.surprise.mix`,
    n by the delta rule and eps as the mean of the members', weighted by the examples each saw
    since the base. None where a member keeps none.

    >>> [round(value, 6) for value in mix([array("d", (200.0, 0.01)), array("d", (400.0, 0.04))])]
    [500.0, 0.0266]

    """
    from .surprise import mixed_averages  # whose imports reach the probabilities, which import us

    if any(member is None for member in members):
        return None
    return mixed_averages(members, start() if base is None else base)
