"""The benchmark scripts, each run as ``python benchmarks/NAME.py``; those that share another's
loaders or tables import it as ``benchmarks.NAME`` (the repository's root on the path)."""
