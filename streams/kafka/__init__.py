"""Serving on Kafka: the exactly-once server and its parts, and a local demo broker.

May import `streams.io` and `streams.models`; never `streams.evaluate` or `streams.cli`.
"""
