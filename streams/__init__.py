"""Operators around the classifiers, one sub-package per concern.

- `streams.io`: file readers (JSON lines, CSV, svmlight), the one example schema, bundled data.
- `streams.models`: model specs (`"AROW(r=0.1)"` to an estimator) and the broker-free mixing
  protocol; what evaluation and serving both build on.
- `streams.evaluate`: side-by-side progressive validation, label noise, drift, tuning, plots,
  synthetic streams and the offline simulation of a mixing group.
- `streams.kafka`: serving on Kafka: client settings, committed reads, messages, the
  broker-free partition learner, state and models topics, checkpoints, the server, a demo broker.
- `streams.cli`: the `river-cw` command.

Imports go down this list's layers only: `io` and `models` import neither `evaluate` nor
`kafka`; `evaluate` and `kafka` never import each other; only `cli` imports both.
"""
