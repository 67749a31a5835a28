"""Mixing models: `combine` (with and without a base, per covariance, against dense formulas and
in rounds on real streams) and the mixing protocol without a broker (`streams.models.mixing`).
The protocol against a real broker: tests/kafka/test_kafka_mixing.py.
"""
