"""`river-cw evaluate` prints river's numbers: the differential test against river, in one process.

For every data set, model spec, metric and delay below, the command's final numbers (its metric,
its accuracy and log loss columns, the examples scored and the mistakes) equal, to 1e-12, those of
river's ``evaluate.progressive_val_score`` for the same model (the spec as
`streams.models.specs.prepare` fits it to the stream) on the same parsed stream. Where a river
binary classifier runs on labels that are not booleans, its numbers also equal river's for the
bare classifier on the stream with the positive label (`river_cw.labels`) as True: the label
arrangement changes nothing but the labels' names.

Data: river's Phishing and Bananas (boolean labels) and ImageSegments (7 string labels), written as
JSON lines and read back by the command's readers; and `tests/evaluation/data/parcels.*` (a
categorical colour and a missing value; labels "express"/"standard", "+1"/"-1" in JSON and in CSV,
the strings "True"/"False", the ints 1/-1, and 3 shapes). Delays 0, 1, 7 and 100. The fast tests
take a prefix of each stream and one metric per run (every run checks accuracy and log loss as
well); hypothesis draws further combinations; the slow test runs every metric at every delay, and
the whole streams.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from river import datasets, metrics
from river import evaluate as river_evaluate

from river_cw.labels import order_key
from streams.cli import evaluate as evaluate_cli
from streams.cli.evaluate_input import parse_metric
from streams.io.files import open_stream
from streams.models.labels import BinaryLabels
from streams.models.specs import parse, prepare

DATA = Path(__file__).resolve().parent / "data"

BINARY_SPECS = [
    "AROW()",
    "VotedRDA()",
    "river.linear_model.LogisticRegression()",
    "river.preprocessing.StandardScaler() | river.linear_model.LogisticRegression()",
    "river.preprocessing.StandardScaler() | river.linear_model.PAClassifier()",
]
MULTICLASS_SPECS = [
    "SOP()",
    "river.naive_bayes.GaussianNB()",
    "river.preprocessing.StandardScaler() | river.linear_model.LogisticRegression()",
]
ENCODED = "river.compose.Discard('color') | river.preprocessing.StandardScaler()"
CATEGORICAL_SPECS = [
    "river.preprocessing.OneHotEncoder() | AROW()",
    "river.compose.TransformerUnion(river.compose.Select('color') | "
    f"river.preprocessing.OneHotEncoder(), {ENCODED}) | river.linear_model.PAClassifier()",
    "river.preprocessing.OneHotEncoder() | river.linear_model.LogisticRegression()",
]
BINARY_METRICS = ["accuracy", "logloss", "f1", "MCC()", "ROCAUC()"]
MULTICLASS_METRICS = ["accuracy", "logloss", "MacroF1()", "CohenKappa()"]
DELAYS = [0, 1, 7, 100]

# name -> (file, --target, specs, metrics, prefix for the fast tests)
STREAMS = {
    "phishing": ("phishing.jsonl", "label", BINARY_SPECS, BINARY_METRICS, 500),
    "bananas": ("bananas.jsonl", "label", BINARY_SPECS, BINARY_METRICS, 400),
    "segments": ("segments.jsonl", "label", MULTICLASS_SPECS, MULTICLASS_METRICS, 400),
    "parcels, +1/-1 (CSV)": ("parcels.csv", "sign", CATEGORICAL_SPECS, BINARY_METRICS, 300),
    "parcels, strings": ("parcels.jsonl", "label", CATEGORICAL_SPECS, BINARY_METRICS, 300),
    "parcels, 'True'/'False'": ("parcels.jsonl", "flag", CATEGORICAL_SPECS, BINARY_METRICS, 300),
    "parcels, ints 1/-1": ("parcels_ints.jsonl", "sign", CATEGORICAL_SPECS, BINARY_METRICS, 300),
    "parcels, 3 shapes": (
        "parcels.jsonl",
        "shape",
        CATEGORICAL_SPECS[::2],
        MULTICLASS_METRICS,
        300,
    ),
}
RIVER = {
    "phishing.jsonl": datasets.Phishing,
    "bananas.jsonl": datasets.Bananas,
    "segments.jsonl": datasets.ImageSegments,
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """river's data sets as JSON lines, beside the parcels (and the parcels with int signs)."""
    folder = tmp_path_factory.mktemp("differential")
    for name, dataset in RIVER.items():
        with open(folder / name, "w", encoding="utf-8") as fh:
            for x, y in dataset():
                fh.write(json.dumps({"x": x, "label": y}) + "\n")
    for name in ("parcels.csv", "parcels.jsonl"):
        (folder / name).write_bytes((DATA / name).read_bytes())
    with open(DATA / "parcels.jsonl", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    with open(folder / "parcels_ints.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps({**row, "sign": int(row["sign"])}) + "\n")
    return folder


def parsed(path: Path, target: str, limit: int | None) -> list:
    """The stream as the command reads it."""
    args = argparse.Namespace(target=target, text_field="text", flat=False, delimiter=",")
    from streams.cli import records

    reader = open_stream(path, schema=records.schema(args))
    return list(reader)[:limit]


def command(path: Path, target: str, specs: list, metric: str, delay: int, limit, out: Path):
    """The summary records of `river-cw evaluate`, by model."""
    parser = argparse.ArgumentParser()
    evaluate_cli.add_arguments(parser)
    argv = [str(path), "--target", target, "--metric", metric, "--delay", str(delay), "--quiet"]
    argv += [a for spec in specs for a in ("--model", spec)] + ["--json", str(out)]
    argv += ["--limit", str(limit)] if limit else []
    assert evaluate_cli.run(parser.parse_args(argv)) == 0
    return {r["model"]: r for r in json.loads(out.read_text())["summary"]}


def river_numbers(stream, model, metric, delay: int, columns: bool) -> tuple:
    """river's progressive_val_score of the metric and, with `columns`, of Accuracy and of
    CrossEntropy (fresh copies of the model, one run each), and the examples Accuracy scored
    and got wrong."""
    runs = []
    for m in (metric, metrics.Accuracy(), metrics.CrossEntropy())[: 3 if columns else 1]:
        try:
            runs.append(
                river_evaluate.progressive_val_score(
                    stream, model.clone(), m.clone(), delay=delay or None
                )
            )
        except NotImplementedError:  # a model without probabilities
            runs.append(None)
    if not columns:
        return runs[0], None, None, None, None
    accuracy = runs[1]
    scored = accuracy.cm.total_weight
    return runs[0], accuracy, runs[2], scored, scored - accuracy.cm.total_true_positives


def close(ours, theirs) -> bool:
    return ours is not None and math.isclose(ours, theirs, rel_tol=1e-12, abs_tol=1e-12)


def check(
    folder: Path,
    tmp: Path,
    name: str,
    delay: int,
    metric: str,
    specs=None,
    full: bool = False,
    columns: bool = True,
):
    """The command's numbers against river's: its metric and, with `columns`, its accuracy,
    log loss, scored and mistakes (and the bare binary classifier's on booleans)."""
    file, target, default_specs, _, prefix = STREAMS[name]
    specs = specs or default_specs
    limit = None if full else prefix
    stream = parsed(folder / file, target, limit)
    if file in RIVER and full:  # the command read river's own data set
        assert stream == [(x, y) for x, y in RIVER[file]()]
    summary = command(folder / file, target, specs, metric, delay, limit, tmp / "r.json")
    labels = sorted({y for _, y in stream}, key=order_key)
    scoring = parse_metric(metric, [y for _, y in stream])
    models = {"majority class": river_evaluate_baseline()}
    models.update({spec: prepare(parse(spec), labels=labels) for spec in specs})
    for spec, model in models.items():
        ours = summary[spec]
        chosen, accuracy, log_loss, scored, mistakes = river_numbers(
            stream, model, scoring, delay, columns
        )
        where = f"{spec} on {name}, --metric {metric} --delay {delay}"
        assert close(ours["metric"], chosen.get()), where
        if not columns:
            continue
        assert close(ours["accuracy"], accuracy.get()), where
        assert (ours["scored"], ours["mistakes"]) == (scored, mistakes), where
        assert (
            (ours["log_loss"] is None)
            if log_loss is None
            else close(ours["log_loss"], log_loss.get())
        ), where
        if isinstance(model, BinaryLabels):  # river's own convention: the positive label is True
            booleans = [(x, y == model.positive) for x, y in stream]
            bare = model.classifier.clone()
            assert close(
                ours["accuracy"],
                river_evaluate.progressive_val_score(
                    booleans, bare, metrics.Accuracy(), delay=delay or None
                ).get(),
            ), where
            assert close(
                ours["log_loss"],
                river_evaluate.progressive_val_score(
                    booleans, model.classifier.clone(), metrics.CrossEntropy(), delay=delay or None
                ).get(),
            ), where


def river_evaluate_baseline():
    from river import dummy

    return dummy.PriorClassifier()


@pytest.mark.parametrize("delay", DELAYS)
@pytest.mark.parametrize("name", STREAMS)
def test_the_command_prints_rivers_numbers(folder, tmp_path, name, delay):
    metrics_ = STREAMS[name][3]
    metric = metrics_[(DELAYS.index(delay) + list(STREAMS).index(name)) % len(metrics_)]
    check(folder, tmp_path, name, delay, metric)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_spec_metric_and_delay(folder, tmp_path, data):
    name = data.draw(st.sampled_from(list(STREAMS)), "stream")
    _, _, specs, metrics_, prefix = STREAMS[name]
    chosen = data.draw(st.lists(st.sampled_from(specs), min_size=1, max_size=2, unique=True))
    metric = data.draw(st.sampled_from(metrics_), "metric")
    delay = data.draw(st.integers(0, prefix - 1), "delay")
    check(folder, tmp_path, name, delay, metric, chosen)


@pytest.mark.slow
@pytest.mark.parametrize("name", STREAMS)
def test_every_metric_and_delay(folder, tmp_path, name):
    """Every metric at every delay (the metric's column), then the whole stream (every column):
    river's data sets as river gives them, read back by the command."""
    for delay in DELAYS:
        for metric in STREAMS[name][3]:
            check(folder, tmp_path, name, delay, metric, columns=False)
    check(folder, tmp_path, name, 7, STREAMS[name][3][0], full=True)


@pytest.mark.parametrize("delay", [None, 1, 7])
def test_river_stream_not_imported(monkeypatch, delay):
    """Where river.stream is not imported (`river-cw evaluate` does without its readers, which load
    scikit-learn: tests/project/test_startup.py), progressive validation runs river's simulate_qa
    from river's own file: the same code, the same questions and answers."""
    import sys

    from river import stream

    from streams.evaluate import progressive

    monkeypatch.delitem(sys.modules, "river.stream")
    standalone = progressive._simulate_qa()
    monkeypatch.undo()
    assert standalone is not stream.simulate_qa
    assert standalone.__code__.co_filename == stream.simulate_qa.__code__.co_filename
    examples = [({"a": float(i)}, i % 3) for i in range(20)]
    ours = list(standalone(examples, None, delay))
    assert ours == list(stream.simulate_qa(examples, None, delay))
    assert len(ours) == 40
