"""Offline evaluation (`streams.io`, `streams.evaluate`, `streams.models.specs`, `river-cw
evaluate`): file readers, label noise, drift, progressive evaluation, model specs, the command
line, and its numbers against river's. data/ holds the small files these tests read.
"""
