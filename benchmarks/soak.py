"""Numerical soak: a long run of adversarial updates through every classifier configuration.

Each configuration learns from three adversarial streams in turn, interleaved:

- the same example again and again with alternating labels (no weight vector separates it:
  every rule keeps updating, CW's variances collapse towards 0);
- feature values spanning 1e-8 to 1e8 (sixteen orders of magnitude in one example);
- a constant feature next to random ones, labelled by a noisy threshold.

After the run it checks the whole state through the public views: every mean and variance is a
finite Python float, no variance is negative, full covariances keep a non-singular Cholesky
factor, probabilities are distributions. It reports per configuration the updates made, the
errors raised (each must be a TypeError or ValueError), the steps skipped because float64
could not express them (`n_skipped_updates`), and the findings; it exits 1 on any finding.

    python benchmarks/soak.py [--updates 1000000] [--seed 0]

`--updates` is the total over all configurations (1,000,000 by default: about 29,000 each).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

import river_cw


def configurations() -> list:
    models = []
    for variant in ("stdev", "var"):
        for covariance, diagonal in (
            ("diagonal", "project"),
            ("diagonal", "drop"),
            ("diagonal", "exact"),
            ("full", "project"),
        ):
            models.append(river_cw.CW(variant=variant, covariance=covariance, diagonal=diagonal))
    for cls in (river_cw.AROW, river_cw.SOP, river_cw.SCW):
        for covariance, diagonal in (
            ("diagonal", "project"),
            ("diagonal", "drop"),
            ("full", "project"),
        ):
            models.append(cls(covariance=covariance, diagonal=diagonal))
    for covariance, diagonal in (
        ("diagonal", "project"),
        ("diagonal", "drop"),
        ("diagonal", "exact"),
        ("full", "project"),
    ):
        models.append(river_cw.NHERD(covariance=covariance, diagonal=diagonal))
    models.append(river_cw.SCW(variant="II"))
    models += [
        river_cw.VotedRDA(),
        river_cw.VotedRDA(loss="log"),
        river_cw.VotedRDA(prediction="last", l1=0.01),
    ]
    return models


def adversarial(n: int, seed: int):
    """n examples cycling through the three adversarial streams, with three labels."""
    rng = np.random.default_rng(seed)
    scales = 10.0 ** np.arange(-8, 9, 2)
    for i in range(n):
        kind = i % 3
        if kind == 0:
            yield {"same": 1.0, "also": -2.0}, "a" if (i // 3) % 2 else "b"
        elif kind == 1:
            x = {
                f"s{j}": float(s * rng.normal()) for j, s in enumerate(scales) if rng.random() < 0.6
            }
            yield x, "a" if rng.random() < 0.5 else "b"
        else:
            value = float(rng.normal())
            label = ("a" if value > 0.3 else "b") if rng.random() < 0.9 else "c"
            yield {"bias": 1.0, "v": value, f"w{rng.integers(20)}": float(rng.normal())}, label


def findings(model) -> list[str]:
    """What is wrong with the model's state (empty when sound)."""
    problems = []
    weights = model.weights if not model.is_binary else {"": model.weights}
    blocks = list(weights.values())
    means = [w for block in blocks for w in block.values()]
    variances = []
    if hasattr(model, "variances"):
        v = model.variances if not model.is_binary else {"": model.variances}
        variances = [s for block in v.values() for s in block.values()]
    bad = sum(1 for w in means + variances if type(w) is not float or not math.isfinite(w))
    if bad:
        problems.append(f"{bad} non-finite or non-float values")
    negative = sum(1 for s in variances if s < 0)
    if negative:
        problems.append(f"{negative} negative variances")
    if getattr(model, "covariance", None) == "full":
        chol = model._gaussian.chol
        if len(chol) and not np.all(np.diag(chol) > 0):
            problems.append("singular Cholesky factor of the precision")
    for x in ({"same": 1.0}, {"s0": 1e-8, "s8": 1e8}, {"bias": 1.0, "v": 0.5}):
        p = model.predict_proba_one(x)
        if p and not math.isclose(sum(p.values()), 1.0, abs_tol=1e-9):
            problems.append(f"probabilities {p} do not sum to 1")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--updates", type=int, default=1_000_000, help="total over all configurations"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    models = configurations()
    each = math.ceil(args.updates / len(models))
    print(f"{len(models)} configurations, {each:,} adversarial examples each\n")
    print("| model | examples | errors | skipped steps | seconds | findings |")
    print("|---|---:|---:|---:|---:|---|")
    failed = 0
    for model in models:
        errors, start = 0, time.process_time()
        for x, y in adversarial(each, args.seed):
            try:
                model.learn_one(x, y)
            except (TypeError, ValueError):
                errors += 1
        problems = findings(model)
        failed += bool(problems)
        name = " ".join(repr(model).split())
        print(
            f"| {name} | {each:,} | {errors} | {getattr(model, 'n_skipped_updates', 0)} | "
            f"{time.process_time() - start:.1f} | {'; '.join(problems) or 'none'} |"
        )
    print(f"\n{failed} configurations with findings")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
