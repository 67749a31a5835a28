"""Confidence-weighted online linear classifiers for river.

Every Gaussian classifier keeps N(mu, Sigma) over its weights and updates it in one shared form
on the engine of its covariance; each algorithm is a small rule on top of it. `VotedRDA` is the
sparse, l1-regularised companion (regularised dual averaging with voting).

What lives where. The public modules stand here, those the API reference documents: a rule per
algorithm (`arow`, `cw`, `nherd`, `scw`, `sop`, `rda`) on `gaussian_classifier.GaussianClassifier`
and `base.LinearClassifier`; `text` (river's `BagOfWords` with its token counting compiled,
`TextClassifier`); `combine`; `calibration`; `covariances` (the registry: per covariance, its
engines and mixer); `labels` (the labels' order); `probabilities` (and `most_probable`, every
`predict_one`); `batch` (a mini-batch's rows); `state` (the versioned format a model is saved
in); `engine` (the switch between the compiled engine and pure Python). The engines, their
mixers and the C are the private package `river_cw._engines`: a model is their API.
"""

__version__ = "0.1.0"

from . import state as state
from . import text as text
from .arow import AROW
from .base import INTERCEPT
from .combine import changes, combine
from .cw import CW
from .engine import ENGINE
from .nherd import NHERD
from .rda import VotedRDA
from .scw import SCW
from .sop import SOP

__all__ = [
    "AROW",
    "CW",
    "ENGINE",
    "INTERCEPT",
    "NHERD",
    "SCW",
    "SOP",
    "VotedRDA",
    "changes",
    "combine",
]
