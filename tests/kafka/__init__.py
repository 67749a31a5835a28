"""The Kafka side (`streams.kafka`, `river-cw serve`, `broker`, `inspect`, `tail`): the modules
without a broker (envelope, client security, dead letters, changelog, checkpoints, learner,
messages) and, marked ``kafka``, those against a real Tansu broker. kafka_support.py and
tls_support.py are their helpers (producing, reading back, offline runs; certificates, a TLS proxy).
"""
