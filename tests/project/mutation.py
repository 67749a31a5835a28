"""A short mutation run: does the suite notice small bugs in the Python code?

Each mutant changes one token of one module (a comparison, an arithmetic or boolean operator, a
number, True/False, a unary minus or `not`) in a copy of the checkout; the module's fast test
selection (`SELECTION`) then runs on the copy, with the compiled extensions as built. A mutant
the tests fail on (or time out on) is killed; one they pass survives and is printed with its
line, for review: either a test is missing, or the mutant is equivalent (it changes nothing
observable, e.g. ``<`` for ``<=`` where equality cannot happen). The score is killed / all.

    python tests/project/mutation.py river_cw/combine.py river_cw/arow.py   # those modules
    python tests/project/mutation.py --sample 300 --seed 1                  # 300 mutants of all
    python tests/project/mutation.py --list                                 # the modules and their tests
    python tests/project/mutation.py --report run.json ...                  # also write the results
    python tests/project/mutation.py --survivors run.json                   # retry a run's survivors

Docstrings, other strings, annotations and lines marked ``# pragma: no mutate`` are left alone.
The pure-Python engine's code is mutated too, but runs only where a test selects it (the tests
compare both engines in one process). Not collected by pytest (no ``test_`` prefix).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import io
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# module -> the tests that check it fast (each run stops at the first failure)
RULE = [
    "tests/engines/test_native_steps.py",
    "tests/engines/test_diagonal.py",
    "tests/models/test_hyperparameters.py",
]
COMBINE = [
    "tests/mixing/test_combine.py",
    "tests/mixing/test_combine_base.py",
    "tests/models/test_classifiers.py::test_combine_follows_the_papers_formulas",
    "tests/models/test_classifiers.py::test_combine_rejects_mismatched_models",
    "tests/text/test_text_classifier.py::test_combine_and_changes_mix_the_classifier",
    "tests/models/test_hostile_input.py::test_kl_combination_of_variances_that_underflowed_is_finite",
]
ENGINE = [
    "tests/models/test_full_covariance_vs_papers.py",
    "tests/engines/test_compiled_vs_python.py",
    "tests/engines/test_diagonal.py",
    "tests/models/test_forgetting.py",
]
MODEL = [
    "tests/models/test_classifiers.py",
    "tests/models/test_full_covariance_vs_papers.py",
    "tests/models/test_sample_weight.py",
    "tests/models/test_intercept.py",
]
SELECTION = {
    "river_cw/arow.py": RULE,
    "river_cw/cw.py": RULE,
    "river_cw/nherd.py": RULE,
    "river_cw/scw.py": RULE,
    "river_cw/sop.py": [
        *RULE,
        "tests/models/test_sample_weight.py::test_a_weight_counts_a_sop_mistake_w_times_in_the_papers_sums",
        "tests/models/test_full_covariance_vs_papers.py::test_sop_matches_the_papers_b_and_A_form",  # its prior a I
    ],
    "river_cw/combine.py": COMBINE,
    "river_cw/_engines/combine_diagonal.py": COMBINE,
    "river_cw/_engines/combine_full.py": COMBINE,
    "river_cw/_engines/combine_arrowhead.py": ["tests/mixing/test_combine_arrowhead.py"],
    "river_cw/covariances.py": [
        "tests/models/test_covariance_contract.py",
        "tests/models/test_hyperparameters.py",
    ],
    "river_cw/calibration.py": ["tests/models/test_calibration.py"],
    "river_cw/validation.py": [
        "tests/models/test_hostile_input.py",
        "tests/engines/test_compiled_vs_python.py",
    ],
    "river_cw/_engines/gaussian.py": ENGINE,
    "river_cw/_engines/diagonal.py": ENGINE,
    "river_cw/_engines/full.py": ENGINE,
    "river_cw/base.py": MODEL,
    "river_cw/gaussian_classifier.py": MODEL,
    "river_cw/_one_call.py": [
        "tests/models/test_mini_batch.py",
        "tests/engines/test_batch_kernels.py",
    ],
    "river_cw/_engines/arrowhead.py": ENGINE,
    "river_cw/probabilities.py": [*MODEL, "tests/models/test_views.py"],
    "river_cw/rda.py": [
        "tests/models/test_voted_rda.py",
        "tests/engines/test_rda_compiled_vs_python.py",
    ],
    "river_cw/_engines/rda_engine.py": [
        "tests/models/test_voted_rda.py",
        "tests/engines/test_rda_compiled_vs_python.py",
    ],
    "river_cw/batch.py": ["tests/models/test_mini_batch.py", "tests/engines/test_batch_kernels.py"],
    "river_cw/text.py": ["tests/text/test_bag_of_words.py", "tests/text/test_text_classifier.py"],
    "river_cw/_tokens.py": [
        "tests/text/test_bag_of_words.py",
        "tests/text/test_text_classifier.py",
    ],
    "river_cw/state.py": ["tests/models/test_state_format.py", "tests/kafka/test_state_fixture.py"],
    "streams/io/base.py": ["tests/evaluation/test_files.py"],
    "streams/io/jsonl.py": ["tests/evaluation/test_files.py"],
    "streams/io/csv.py": ["tests/evaluation/test_files.py"],
    "streams/io/libsvm.py": ["tests/evaluation/test_files.py"],
    "streams/io/files.py": ["tests/evaluation/test_files.py"],
    "streams/io/schema.py": [
        "tests/evaluation/test_files.py",
        "tests/kafka/test_kafka_messages.py",
    ],
    "streams/models/specs.py": ["tests/evaluation/test_model_specs.py"],
    "streams/models/mixing.py": ["tests/mixing/test_mixing_protocol.py"],
    "streams/kafka/state_codec.py": [
        "tests/kafka/test_state_codec.py",
        "tests/kafka/test_kafka_changelog.py",
        "tests/kafka/test_kafka_checkpoint.py",
    ],
    "streams/evaluate/progressive.py": ["tests/evaluation/test_evaluation.py"],
    "streams/evaluate/scoring.py": ["tests/evaluation/test_evaluation.py"],
    "streams/evaluate/track.py": ["tests/evaluation/test_evaluation.py"],
    "streams/evaluate/noise.py": ["tests/evaluation/test_noise.py"],
    "streams/evaluate/drift.py": ["tests/evaluation/test_drift.py"],
    "streams/evaluate/synthetic.py": [
        "tests/evaluation/test_drift.py",
        "tests/models/test_intercept.py",
    ],
}
# tests too slow for a mutation run (each is one long accuracy or end-to-end check)
DESELECT = [
    "tests/models/test_voted_rda.py::test_l1_trades_weights_for_accuracy_on_books",
    "tests/models/test_classifiers.py::test_kl_combination_of_shards_is_as_good_as_one_model_on_text",
]

SWAPS = {
    ast.Lt: "<=",
    ast.LtE: "<",
    ast.Gt: ">=",
    ast.GtE: ">",
    ast.Eq: "!=",
    ast.NotEq: "==",
    ast.Is: "is not",
    ast.IsNot: "is",
    ast.In: "not in",
    ast.NotIn: "in",
    ast.Add: "-",
    ast.Sub: "+",
    ast.Mult: "/",
    ast.Div: "*",
    ast.FloorDiv: "/",
    ast.Mod: "*",
    ast.Pow: "*",
    ast.And: "or",
    ast.Or: "and",
}
SYMBOLS = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.And: "and",
    ast.Or: "or",
}


@dataclass
class Mutant:
    path: str  # relative to the checkout
    line: int
    start: int  # character offsets of the replaced text in the file
    end: int
    original: str
    replacement: str
    outcome: str = ""  # "killed", "timeout" or "survived"

    def describe(self) -> str:
        return f"{self.path}:{self.line}: {self.original!r} -> {self.replacement!r}"


def mutants(path: str) -> list[Mutant]:
    """Every mutant of one module, in the order of the source.

    >>> [m.replacement for m in mutants_of_source("x.py", "y = a < 1 and not b\\n")]
    ['<=', '2', 'or', 'b']
    """
    return mutants_of_source(path, (ROOT / path).read_text(encoding="utf-8"))


def mutants_of_source(path: str, source: str) -> list[Mutant]:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:  # ast columns are UTF-8 byte offsets
        return starts[line - 1] + len(lines[line - 1].encode()[:col].decode())

    def span(node) -> tuple[int, int]:
        return offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)

    skipped = _skipped_nodes(tree)
    found = []

    def between(left, right, op) -> None:
        """The operator token `op` in the text between two operands."""
        lo, hi = span(left)[1], span(right)[0]
        symbol = SYMBOLS[type(op)]
        at = _find_token(source[lo:hi], symbol)
        if at is not None:
            end = lo + at + len(symbol)
            if " " in symbol:  # "is not", "not in": the words as written, whatever the spacing
                end = lo + at + len(symbol.split()[0])
                end = source.index(symbol.split()[-1], end) + len(symbol.split()[-1])
            found.append(
                Mutant(path, left.end_lineno, lo + at, end, source[lo + at : end], SWAPS[type(op)])
            )

    for node in ast.walk(tree):
        if id(node) in skipped or "pragma: no mutate" in lines[getattr(node, "lineno", 1) - 1]:
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in SWAPS:
            between(node.left, node.right, node.op)
        elif isinstance(node, ast.Compare):
            for left, op, right in zip([node.left, *node.comparators], node.ops, node.comparators):
                between(left, right, op)
        elif isinstance(node, ast.BoolOp):
            for left, right in zip(node.values, node.values[1:]):
                between(left, right, node.op)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
            lo, hi = span(node)
            operand = source[slice(*span(node.operand))]
            found.append(Mutant(path, node.lineno, lo, hi, source[lo:hi], operand))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
            lo, hi = span(node)
            value = node.value
            new = repr(not value) if isinstance(value, bool) else repr(value + 1)
            found.append(Mutant(path, node.lineno, lo, hi, source[lo:hi], new))
    return sorted(found, key=lambda m: m.start)


def _skipped_nodes(tree) -> set[int]:
    """Ids of nodes never mutated: annotations, docstrings, `__all__` and what they hold."""
    roots = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            roots += [a.annotation for a in ast.walk(node.args) if isinstance(a, ast.arg)]
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            roots.append(node)
    return {id(inner) for root in roots if root is not None for inner in ast.walk(root)}


def _find_token(text: str, symbol: str) -> int | None:
    """Where the operator `symbol` (``"<="``, ``"not in"``) is in `text`, the gap between two
    operands (spaces, brackets, comments), or None."""
    words = symbol.split()
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    try:
        tokens = [
            t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.string.strip()
        ]
    except (tokenize.TokenError, SyntaxError):
        return None
    for i, token in enumerate(tokens):
        if [t.string for t in tokens[i : i + len(words)]] == words:
            row, col = token.start
            return starts[row - 1] + col
    return None


def checkout_copy() -> Path:
    """The tracked files of the checkout and its built extensions, in a temporary folder."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    built = [p.relative_to(ROOT) for p in (ROOT / "river_cw" / "_engines").glob("*.so")]
    copy = Path(tempfile.mkdtemp(prefix="river-cw-mutation-"))
    for name in [os.fsdecode(n) for n in tracked if n] + [str(p) for p in built]:
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, target)
    return copy


def run_tests(copy: Path, path: str, timeout: float | None) -> tuple[bool, float]:
    """Whether the module's selection passes in `copy`, and how long it took."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "--hypothesis-seed=0",
        path,  # its doctests
        *SELECTION[path],
        *(f"--deselect={test}" for test in DESELECT),
    ]
    env = dict(os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    start = time.monotonic()
    try:
        run = subprocess.run(command, cwd=copy, env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, math.inf
    return run.returncode == 0, time.monotonic() - start


def judge(copies: list[Path], free: list[int], mutant: Mutant, budget: dict) -> Mutant:
    slot = free.pop()
    copy = copies[slot]
    target = copy / mutant.path
    original = target.read_text(encoding="utf-8")
    try:
        target.write_text(original[: mutant.start] + mutant.replacement + original[mutant.end :])
        passed, took = run_tests(copy, mutant.path, budget[mutant.path])
        mutant.outcome = "survived" if passed else ("timeout" if took == math.inf else "killed")
    finally:
        target.write_text(original, encoding="utf-8")
        free.append(slot)
    return mutant


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="modules to mutate (default: all of SELECTION)")
    parser.add_argument("--sample", type=int, help="mutate a random sample of this many")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once")
    parser.add_argument("--report", type=Path, help="write every mutant and its outcome (JSON)")
    parser.add_argument("--survivors", type=Path, help="retry the survivors of a --report")
    parser.add_argument("--list", action="store_true", help="list the modules and their tests")
    args = parser.parse_args(argv)
    if args.list:
        for path, tests in SELECTION.items():
            print(f"{path}: {len(mutants(path))} mutants; {' '.join(tests)}")
        return 0
    earlier = []
    if args.survivors:
        earlier = [Mutant(**m) for m in json.loads(args.survivors.read_text())]
        todo = [m for m in earlier if m.outcome == "survived"]
        for m in todo:
            m.outcome = ""
    else:
        unknown = [m for m in args.modules if m not in SELECTION]
        if unknown:
            parser.error(f"no test selection for {unknown}: add it to SELECTION")
        todo = [m for path in (args.modules or SELECTION) for m in mutants(path)]
        if args.sample is not None and args.sample < len(todo):
            todo = sorted(random.Random(args.seed).sample(todo, args.sample), key=_order)
    copies = [checkout_copy() for _ in range(args.jobs)]
    try:
        budget = {}
        for path in sorted({m.path for m in todo}):
            passed, took = run_tests(copies[0], path, None)
            if not passed:
                print(f"{path}: its tests fail unmutated; fix them first", file=sys.stderr)
                return 2
            budget[path] = 3 * took + 10
            print(f"{path}: tests pass in {took:.1f} s", flush=True)
        free = list(range(args.jobs))
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            jobs = [pool.submit(judge, copies, free, m, budget) for m in todo]
            for done, job in enumerate(concurrent.futures.as_completed(jobs), 1):
                mutant = job.result()
                print(f"[{done}/{len(todo)}] {mutant.outcome} {mutant.describe()}", flush=True)
                if args.report:  # as it goes, so that a run stopped early keeps its results
                    write_report(args.report, earlier or todo)
    finally:
        for copy in copies:
            shutil.rmtree(copy, ignore_errors=True)
    summary(sorted(earlier or todo, key=_order))
    return 0


def write_report(path: Path, mutants: list[Mutant]) -> None:
    path.write_text(json.dumps([asdict(m) for m in mutants], indent=1))


def _order(mutant: Mutant):
    return mutant.path, mutant.start


def summary(results: list[Mutant]) -> None:
    results = [m for m in results if m.outcome]  # a run stopped early judged only some
    killed = sum(m.outcome in ("killed", "timeout") for m in results)
    timeouts = sum(m.outcome == "timeout" for m in results)
    survivors = [m for m in results if m.outcome == "survived"]
    print(
        f"\n{len(results)} mutants: {killed} killed ({timeouts} by timeout), "
        f"{len(survivors)} survived; score {killed / max(len(results), 1):.1%}"
    )
    for path in sorted({m.path for m in results}):
        mine = [m for m in results if m.path == path]
        dead = sum(m.outcome in ("killed", "timeout") for m in mine)
        print(f"  {path}: {dead}/{len(mine)} killed")
    for mutant in survivors:
        source = (ROOT / mutant.path).read_text(encoding="utf-8").splitlines()[mutant.line - 1]
        print(f"survived {mutant.describe()}    {source.strip()}")


if __name__ == "__main__":
    sys.exit(main())
