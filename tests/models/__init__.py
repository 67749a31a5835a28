"""The classifiers as users see them (AROW, CW, NHERD, SCW, SOP, voted RDA): each rule against
its paper (dense transcriptions, the papers' claims), hyperparameters, intercept, forgetting,
calibration, sample weights, the positive label, probabilities and predictions, the public
views, pickling, hostile input and river's mini-batch API. The engines underneath: tests/engines.
"""
