"""The project as a whole: the documentation and its generated files, lint, types, packaging,
the examples and notebooks, start-up time, the import layers, what CI needs, the reproduction;
and two tools, notebooks.py (runs the notebooks) and mutation.py (a mutation run of the suite).
"""
