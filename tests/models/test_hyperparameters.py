"""Every hyperparameter's documented range, at its edges: a value outside is refused with a
ValueError naming the parameter, a value just inside is accepted; and the documented defaults
(no calibration, no forgetting)."""

from __future__ import annotations

import math

import pytest

import river_cw

GAUSSIANS = [river_cw.CW, river_cw.AROW, river_cw.NHERD, river_cw.SOP, river_cw.SCW]
TINY = 5e-324

REFUSED = [
    (river_cw.AROW, "r", [0.0, -1.0, math.nan]),
    (river_cw.SOP, "a", [0.0, -1.0, math.nan]),
    (river_cw.NHERD, "C", [0.0, -1.0, math.nan]),
    (river_cw.SCW, "C", [0.0, -1.0, math.nan]),
    (river_cw.CW, "confidence", [0.5, 1.0, 0.2, math.nan]),
    (river_cw.SCW, "confidence", [0.5, 1.0, 0.2, math.nan]),
    (river_cw.CW, "variant", ["std", None]),
    (river_cw.SCW, "variant", ["III", None]),
    (river_cw.AROW, "initial_variance", [0.0, -1.0, math.nan]),
    (river_cw.CW, "initial_variance", [0.0]),
    (river_cw.AROW, "forgetting", [1.0, -0.1, math.nan, True]),
    (river_cw.AROW, "covariance", ["dense"]),
    (river_cw.AROW, "diagonal", ["exact", "none"]),  # AROW has no exact diagonal scheme
    (river_cw.SOP, "diagonal", ["exact"]),
    # the exact schemes are diagonal: the default arrowhead refuses them, naming covariance
    (river_cw.CW, "diagonal", ["exact"]),
    (river_cw.NHERD, "diagonal", ["exact"]),
    (river_cw.AROW, "calibrate", [1, "yes"]),
    (river_cw.AROW, "learn_intercept", [1, None]),
]
ACCEPTED = [
    (river_cw.AROW, "r", [TINY, 1e300]),
    (river_cw.SOP, "a", [1e-300, 1e300]),  # the prior variance 1 / a stays finite
    (river_cw.NHERD, "C", [TINY, 1e300]),
    (river_cw.SCW, "C", [TINY, 1e300]),
    (river_cw.CW, "confidence", [0.5 + 1e-9, 1 - 1e-9]),
    (river_cw.SCW, "confidence", [0.5 + 1e-9, 1 - 1e-9]),
    (river_cw.AROW, "initial_variance", [TINY, 1e300]),
    (river_cw.AROW, "forgetting", [0.0, 1 - 1e-9]),
    (river_cw.CW, "diagonal", ["project", "drop"]),
    (river_cw.NHERD, "diagonal", ["project"]),
]


def cases(table):
    return [
        pytest.param(cls, name, value, id=f"{cls.__name__}({name}={value!r})")
        for cls, name, values in table
        for value in values
    ]


@pytest.mark.parametrize("cls, name, value", cases(REFUSED))
def test_a_value_outside_a_parameters_range_is_refused_by_name(cls, name, value):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        cls(**{name: value})


@pytest.mark.parametrize("cls, name, value", cases(ACCEPTED))
def test_a_value_at_the_edge_of_a_parameters_range_is_accepted(cls, name, value):
    model = cls(**{name: value})
    assert model._get_params()[name] == value
    model.learn_one({"a": 1.0}, True)
    model.learn_one({"a": -1.0}, False)
    assert model.predict_one({"a": 1.0}) in (False, True)


@pytest.mark.parametrize("cls", GAUSSIANS)
def test_by_default_a_model_calibrates_and_forgets_as_its_surprise_says(cls):
    """``calibrate`` is on by default (its probabilities, not its predictions); AROW, NHERD and
    SCW set their own forgetting by default (``"auto"``, `river_cw.surprise`), CW and SOP never
    forget (see `river_cw.gaussian_classifier.GaussianClassifier`)."""
    params = cls()._get_params()
    forgets = cls in (river_cw.AROW, river_cw.NHERD, river_cw.SCW)
    assert params["calibrate"] is True
    assert params["forgetting"] == ("auto" if forgets else 0.0)
