"""Confidence-weighted online linear classifiers for river.

Every Gaussian classifier keeps N(mu, Sigma) over its weights and updates it in one shared form
(`river_cw.gaussian`) on the engine of its covariance; each algorithm is a small rule on top of
it. `VotedRDA` is the
sparse, l1-regularised companion (regularised dual averaging with voting). `river_cw.text`
holds river's `BagOfWords` with its token counting compiled; `river_cw.state` the versioned
format a model is saved in.
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
