"""Offline evaluation: progressive validation side by side, label noise, drift, tuning, plots.

May import `streams.io` and `streams.models`; never `streams.kafka` or `streams.cli`.
"""
