import argparse
import csv
import gzip
import json
import re
from pathlib import Path

import pytest

from streams import evaluate_cli

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared(name):
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    return path


def run(*argv):
    parser = argparse.ArgumentParser()
    evaluate_cli.add_arguments(parser)
    return evaluate_cli.run(parser.parse_args([str(a) for a in argv]))


def read_csv(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def test_end_to_end_on_a_shared_file_writes_png_csv_and_json(tmp_path, capsys):
    books = shared("mdsd_processed_acl_books.jsonl.gz")
    png, table, document = (
        tmp_path / "curves.png",
        tmp_path / "curves.csv",
        tmp_path / "result.json",
    )
    code = run(
        books,
        "--shuffle",
        "--limit",
        300,
        "--every",
        100,
        "--noise",
        0,
        0.3,
        "--model",
        "AROW(r=0.1)",
        "--model",
        "river.linear_model.PAClassifier(C=0.01)",
        "--plot",
        png,
        "--csv",
        table,
        "--json",
        document,
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "AROW(r=0.1)" in out and "30%" in out
    assert png.stat().st_size > 5_000 and png.read_bytes()[:4] == b"\x89PNG"
    rows = read_csv(table)
    assert len(rows) == 2 * 2 * 3
    assert {(r["noise"], r["model"]) for r in rows} == {
        (n, m)
        for n in ("0%", "30%")
        for m in ("AROW(r=0.1)", "river.linear_model.PAClassifier(C=0.01)")
    }
    assert all(0.0 <= float(r["accuracy"]) <= 1.0 for r in rows)
    info = json.loads(document.read_text())["info"]
    assert info["classes"] == ["negative", "positive"] and info["examples"] == 300
    assert "shuffled (seed 1)" in info["data"]
    # shuffled with a fixed seed: both classes appear early although the file is sorted by label
    flipped = [int(r["flipped"]) for r in rows if r["noise"] == "30%"]
    assert 0 < flipped[-1] < 300


def test_default_run_uses_the_bundled_stream_and_default_models(capsys):
    assert run("--limit", 400) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines[2:]] == evaluate_cli.DEFAULT_MODELS
    assert all(line.split()[2] == "400" for line in lines[2:])


def test_synthetic_sudden_drift(tmp_path):
    assert (
        run(
            "--drift",
            "sudden",
            "--limit",
            2000,
            "--model",
            "AROW()",
            "--json",
            tmp_path / "r.json",
            "--plot",
            tmp_path / "r.png",
        )
        == 0
    )
    document = json.loads((tmp_path / "r.json").read_text())
    assert document["info"]["drift_at"] == 1000 and document["summary"][0]["step"] == 2000
    assert "SEA" in document["info"]["data"] and document["info"]["classes"] == [False, True]


def test_domain_drift_and_label_flip(tmp_path):
    text = shared("mdsd_sorted_acl_text.jsonl.gz")
    args = ("--model", "AROW()", "--json", tmp_path / "r.json", "--every", 100)
    assert (
        run(
            text,
            "--drift",
            "sudden",
            "--domains",
            "books,kitchen",
            "--shuffle",
            "--limit",
            600,
            *args,
        )
        == 0
    )
    info = json.loads((tmp_path / "r.json").read_text())["info"]
    assert info["drift_at"] == 300 and "books -> kitchen" in info["data"]
    assert run("--drift", "flip", "--drift-at", 100, "--limit", 300, *args) == 0
    records = json.loads((tmp_path / "r.json").read_text())["records"]
    # a learner that knew ham from spam is mostly wrong right after the classes swap
    assert records[0]["recent_accuracy"] > 0.8 and records[1]["recent_accuracy"] < 0.5


def test_tune_reports_choices_and_evaluates_on_the_rest(tmp_path, capsys):
    document, markdown = tmp_path / "r.json", tmp_path / "r.md"
    argv = ("--tune", "--limit", 500, "--tune-size", 100, "--model", "AROW()")
    assert run(*argv, "--json", document, "--markdown", markdown) == 0
    out = capsys.readouterr().out
    assert "tuned on the first 100 examples at noise 0%: AROW() -> AROW(r=" in out
    result = json.loads(document.read_text())
    assert result["summary"][0]["step"] == 400
    chosen = result["info"]["tuned"]["0%"]["AROW()"]
    assert chosen.startswith("AROW(r=")
    text = markdown.read_text()
    assert text.startswith("SMS Spam Collection (bundled); parameters tuned on the first 100")
    assert "| 0%    | AROW()" in text and f"AROW() -> {chosen}" in text


def test_class_conditional_noise(tmp_path):
    assert (
        run(
            "--limit", 2000, "--noise", "spam=1.0", "--model", "AROW()", "--csv", tmp_path / "r.csv"
        )
        == 0
    )
    last = read_csv(tmp_path / "r.csv")[-1]
    spam = sum(1 for _, y in list(evaluate_cli.files.sms_spam())[:2000] if y == "spam")
    assert last["noise"] == "spam 100%" and int(last["flipped"]) == spam


def test_malformed_lines_raise_or_are_skipped(tmp_path, capsys):
    path = tmp_path / "d.jsonl"
    path.write_text('{"x": {"a": 1}, "label": 1}\n{"x": \n{"x": {"a": -1}, "label": 0}\n')
    assert run(path, "--model", "AROW()") == 2
    assert f"error: {path}, line 2: bad JSON" in capsys.readouterr().err
    assert run(path, "--model", "AROW()", "--on-error", "skip") == 0
    captured = capsys.readouterr()
    assert "skipped 1 malformed lines" in captured.err and "  2  " in captured.out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "AROW("], "cannot parse model spec"),
        (["missing.jsonl"], "No such file"),
        (["--noise", "abc"], "'abc' is not a probability"),
        (["--noise", "1.5"], r"in \[0, 1\]"),
        (["--noise", "junk=0.1"], "unknown class 'junk'"),
        (["--drift", "sudden", "--domains", "a,b"], "--domains needs"),
        (["--tune", "--tune-size", "0", "--limit", "10"], "--tune-size"),
        (["--every", "0", "--limit", "10"], "every must be >= 1"),
        (["--limit", "0"], "the stream is empty"),
        (["--drift", "gradual", "--drift-width", "0"], "width and period > 0"),
    ],
)
def test_errors_exit_2_with_a_message(argv, message, capsys):
    assert run(*argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("river-cw evaluate: error: ")
    assert re.search(message, err)


def test_bad_labels_and_broken_files_fail_in_the_reader_with_file_and_line(tmp_path, capsys):
    path = tmp_path / "d.jsonl"
    path.write_text('{"x": {"a": 1}, "label": 1}\n{"x": {"a": -1}, "label": 0.5}\n')
    assert run(path, "--model", "AROW()") == 2
    err = capsys.readouterr().err
    assert err == (
        f"river-cw evaluate: error: {path}, line 2: wrong type: 'label' must be a string, "
        "integer or boolean, got float 0.5\n"
    )
    broken = tmp_path / "d.jsonl.gz"
    blob = gzip.compress(path.read_bytes() * 2000)
    broken.write_bytes(blob[: len(blob) // 2])
    assert run(broken, "--model", "AROW()", "--on-error", "skip") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"river-cw evaluate: error: {broken}: cannot read past line ")
    assert "truncated gzip stream" in err and len(err.splitlines()) == 1
