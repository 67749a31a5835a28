"""The test suite, by concern (CONTRIBUTING.md, "Where the tests live", is the map).

engines/ the covariance engines, compiled and pure Python; models/ the classifiers as users see
them; mixing/ `combine` and the mixing protocol; text/ the text features; evaluation/ files,
noise, drift and `river-cw evaluate`; kafka/ the serving side; project/ docs, lint, types,
packaging and tools. support/ holds what they share; conftest.py the fixtures and helpers for
what comes from outside the project.
"""
