"""Serving on Kafka: the exactly-once server and its parts, and a local demo broker.

The server (`server`: the poll/commit loop, over the clients it holds, `connections`) is made of
a task per owned partition (`task`, taken on by `takeover`), its learning without a broker
(`learner`, `messages`), its state store (`store` over `state_topic`, `changelog` and
`checkpoint`, which hold the state's bytes of `state_codec`), the mixing rounds (`rounds` over `models_topic`), the progress line (`monitor`)
and Prometheus metrics (`metrics`); `config` says what it serves. The clients:
`client` (settings, admin), `source` and `outputs` (librdkafka), `committed` (kafka-python's
committed reads). `broker` runs the demo broker.

May import `streams.io` and `streams.models`; never `streams.evaluate` or `streams.cli`.
"""
