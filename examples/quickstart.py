"""Quickstart: AROW learns spam filtering from the bundled SMS stream, one message at a time."""

from river import evaluate, feature_extraction, metrics

import river_cw
from streams.io.files import sms_spam

model = feature_extraction.BagOfWords(on="text", lowercase=True) | river_cw.AROW(r=1.0)
metric = metrics.Accuracy() + metrics.CrossEntropy()
evaluate.progressive_val_score(sms_spam(), model, metric, print_every=2000)  # predict, then learn
print(model.predict_proba_one({"text": "WINNER! Claim your free prize, call now"}))
