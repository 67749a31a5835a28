"""`river-cw evaluate` as a command: its options (models, noise, drift, tuning, metrics, delay,
inputs, shards), the files it writes, its running table, and its errors in one line."""

import argparse
import csv
import gzip
import io
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import river_cw
from streams.cli import evaluate as evaluate_cli
from streams.cli import evaluate_output
from streams.io.files import sms_spam
from tests.conftest import shared_file as shared


def run(*argv):
    """`river-cw evaluate ARGV`'s exit status (argparse's own errors exit with 2)."""
    parser = argparse.ArgumentParser(prog="river-cw evaluate")
    evaluate_cli.add_arguments(parser)
    try:
        return evaluate_cli.run(parser.parse_args([str(a) for a in argv]))
    except SystemExit as exit:
        return exit.code


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
    assert out.splitlines()[0] == evaluate_cli.engine_line()  # the header says which engine ran
    assert png.stat().st_size > 5_000 and png.read_bytes()[:4] == b"\x89PNG"
    rows = read_csv(table)
    assert len(rows) == 2 * 3 * 3  # noise levels, models with the baseline, curve points
    assert {(r["noise"], r["model"]) for r in rows} == {
        (n, m)
        for n in ("0%", "30%")
        for m in ("majority class", "AROW(r=0.1)", "river.linear_model.PAClassifier(C=0.01)")
    }
    assert all(0.0 <= float(r["accuracy"]) <= 1.0 for r in rows)
    info = json.loads(document.read_text())["info"]
    assert info["classes"] == ["negative", "positive"] and info["examples"] == 300
    assert "shuffled (seed 1)" in info["data"]
    assert info["engine"] == river_cw.ENGINE
    # shuffled with a fixed seed: both classes appear early although the file is sorted by label
    flipped = [int(r["flipped"]) for r in rows if r["noise"] == "30%"]
    assert 0 < flipped[-1] < 300


@pytest.mark.parametrize(
    "engine, pure, line",
    [
        ("c", False, "engine: compiled (C)"),
        ("python", True, "engine: pure Python (RIVER_CW_PURE_PYTHON=1)"),
        (
            "python",
            False,
            "engine: pure Python (the compiled extensions did not import; about 30x slower)",
        ),
    ],
)
def test_the_header_says_which_engine_runs(monkeypatch, engine, pure, line):
    monkeypatch.setattr(river_cw, "ENGINE", engine)
    monkeypatch.setattr(river_cw.engine, "PURE_PYTHON", pure)
    assert evaluate_cli.engine_line() == line


def test_default_run_uses_the_bundled_stream_and_default_models(capsys):
    assert run("--limit", 400, "--quiet") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line[7:].split("  ")[0] for line in lines[2:]] == [
        "majority class",
        *evaluate_cli.DEFAULT_MODELS,
    ]
    assert all(line.split()[-5] == "400" for line in lines[2:])


def test_numeric_features_leave_cw_out_of_the_default_line_up(tmp_path, capsys):
    """CW collapses on noisy dense data (issue 30; evaluate.DENSE_MODELS says why)."""
    path = tmp_path / "d.jsonl"
    rows = [{"x": {"a": i % 7 - 3.0, "b": 5.0 + i % 3}, "label": i % 7 > 3} for i in range(60)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert run(path, "--quiet") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line[7:].split("  ")[0] for line in lines[2:]] == [
        "majority class",
        *evaluate_cli.DENSE_MODELS,
    ]
    assert "CW()" not in evaluate_cli.DENSE_MODELS


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
    # the diagonal, which holds to what it learned longest: the swap shows in its accuracy
    spec = 'AROW(covariance="diagonal", diagonal="project")'
    args = ("--model", spec, "--json", tmp_path / "r.json", "--every", 100)
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
    records = [
        r for r in json.loads((tmp_path / "r.json").read_text())["records"] if r["model"] == spec
    ]
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
    # the table and the figure name the model that ran, the tuned one
    assert f"| 0%    | {chosen}" in text and f"AROW() -> {chosen}" in text
    assert {r["model"] for r in result["summary"]} == {"majority class", chosen}


def test_class_conditional_noise(tmp_path):
    assert (
        run(
            "--limit", 2000, "--noise", "spam=1.0", "--model", "AROW()", "--csv", tmp_path / "r.csv"
        )
        == 0
    )
    last = read_csv(tmp_path / "r.csv")[-1]
    spam = sum(1 for _, y in list(sms_spam())[:2000] if y == "spam")
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
        (["--tune", "--tune-size", "10", "--limit", "10"], "--tune-size must be between 1 and 9"),
        (["--tune", "--tune-size", "0", "--limit", "10"], "--tune-size: must be >= 1, got 0"),
        (["--every", "0", "--limit", "10"], "--every: must be >= 1, got 0"),
        (["--limit", "-5"], "--limit: must be >= 1, got -5"),
        (["--limit", "x"], "--limit: expected an integer, got 'x'"),
        (["--delay", "-1"], "--delay: must be >= 0, got -1"),
        (["--drift", "gradual", "--drift-width", "0"], "--drift-width: must be >= 1, got 0"),
        (["--model", "preprocessing.StandardScaler()"], "StandardScaler is not a classifier$"),
        (["--metric", "nope"], "--metric 'nope': expected accuracy, f1, f1:CLASS, logloss"),
        (["--metric", "MAE()"], "--metric 'MAE\\(\\)' is not a classification metric"),
        (["--metric", "f1:junk", "--limit", "10"], "unknown class 'junk'; the classes are"),
        (["--delimiter", ";;"], "--delimiter must be one character"),
        (["--plot", "curves.jpg"], "cannot tell the figure format of 'curves.jpg'"),
        (["--json", "no/such/dir/r.json"], "no directory 'no/such/dir'"),
        (["--csv", "."], "is a directory"),
        (["--limit", "300", "--delay", "300"], "--delay 300 is not shorter than the 300 examples"),
        (["--tune", "--limit", "300", "--delay", "270"], "not shorter than the 270 examples"),
        (["--drift", "flip", "--limit", "300", "--drift-at", "300"], "not inside the stream of"),
        (["--drift", "sudden", "--limit", "300", "--drift-at", "400"], "not inside the stream"),
    ],
)
def test_errors_exit_2_with_one_line(argv, message, capsys):
    assert run(*argv) == 2
    err = capsys.readouterr().err
    last = err.splitlines()[-1]
    assert last.startswith("river-cw evaluate: error: ") and re.search(message, last)
    assert "Traceback" not in err and (len(err.splitlines()) == 1 or err.startswith("usage:"))


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


def test_running_table_at_doubling_intervals_comes_before_the_final_table(capsys):
    assert run("--limit", 1000, "--every", 10, "--model", "AROW()", "--model", "CW()") == 0
    engine, *out = capsys.readouterr().out.splitlines()
    assert engine == evaluate_cli.engine_line()
    assert out[0] == (
        "Progressive validation on SMS Spam Collection (bundled), label noise 0%: "
        "accuracy so far (since the previous row)"
    )
    assert out[1].split() == ["examples", "majority", "class", "AROW()", "CW()"]
    rows = out[2 : out.index("")]
    assert [row.split()[0] for row in rows] == [
        "10",
        "20",
        "40",
        "80",
        "160",
        "320",
        "640",
        "1,000",
    ]
    final = out.index(
        "Final scores (progressive validation: each example predicted, then learned):"
    )
    assert final > 2 + len(rows) and out[-1].startswith("majority class: the baseline")
    # the last running row holds the final accuracies; the first cell is the baseline's
    summary = {line[7:].split("  ")[0]: line.split() for line in out[final + 3 : -1]}
    assert float(rows[-1].split()[1]) == round(float(summary["majority class"][-4]), 3)
    assert float(rows[-1].split()[3]) == round(float(summary["AROW()"][-4]), 3)


def test_metric_options(tmp_path, capsys):
    document = tmp_path / "r.json"
    for metric, name in [
        ("f1", "F1 (spam)"),
        ("f1:ham", "F1 (ham)"),
        ("logloss", "CrossEntropy"),
        ("MCC()", "MCC (spam)"),
        ("Precision(pos_val='ham')", "Precision (ham)"),
        ("metrics.BalancedAccuracy()", "BalancedAccuracy"),
    ]:
        argv = ("--limit", 500, "--model", "AROW()", "--metric", metric, "--json", document)
        assert run(*argv) == 0
        out = capsys.readouterr().out
        assert f"{name} so far (accuracy since the previous row)" in out
        result = json.loads(document.read_text())
        assert result["metric"] == name and result["info"]["metric"] == name
        assert name in out.splitlines()[-5]  # a column of the final table
    spam = [y == "spam" for _, y in list(sms_spam())[:500]]
    assert run("--limit", 500, "--model", "AROW()", "--metric", "f1", "--json", document) == 0
    baseline = json.loads(document.read_text())["summary"][0]
    assert baseline["model"] == "majority class" and baseline["metric"] == 0.0  # never says spam
    assert sum(spam) > 0


def test_delay_holds_labels_back(tmp_path):
    document = tmp_path / "r.json"
    assert run("--limit", 300, "--delay", 299, "--model", "AROW()", "--json", document) == 0
    result = json.loads(document.read_text())
    # one label arrives before the stream ends: the models answer the last example only
    assert [(r["scored"], r["step"]) for r in result["summary"]] == [(1, 300), (1, 300)]
    assert result["info"]["delay"] == 299 and "labels 299 examples late" in result["info"]["data"]
    assert run("--limit", 300, "--delay", 5, "--model", "AROW()", "--json", document) == 0
    assert json.loads(document.read_text())["summary"][1]["accuracy"] > 0.8


def stdin(data: bytes) -> io.TextIOWrapper:
    """A standard input that holds `data`, buffered as the real one is."""
    return io.TextIOWrapper(io.BufferedReader(io.BytesIO(data)))


def test_input_options_csv_columns_delimiter_and_flat_json_on_stdin(tmp_path, monkeypatch, capsys):
    rows = [
        ("spam" if i % 3 == 0 else "ham", "win cash" if i % 3 == 0 else "hi mum") for i in range(60)
    ]
    path = tmp_path / "d.tsv"
    path.write_text("body\tid\ty\n" + "".join(f"{t}\t{i}\t{y}\n" for i, (y, t) in enumerate(rows)))
    argv = ("--format", "csv", "--target", "y", "--text-field", "body", "--delimiter", "\\t")
    assert run(path, *argv, "--model", "AROW()", "--quiet") == 0
    table = capsys.readouterr().out.splitlines()
    assert table[-1].split()[1:3] == ["AROW()", "60"]  # text read as a bag of words

    lines = "".join(
        json.dumps({"a": i % 2, "b": 1.0, "spam": i % 2 == 1}) + "\n" for i in range(50)
    )
    monkeypatch.setattr("sys.stdin", stdin(gzip.compress(lines.encode())))
    assert run("-", "--flat", "--target", "spam", "--model", "AROW()", "--quiet") == 0
    last = capsys.readouterr().out.splitlines()[-1].split()
    assert last[1:3] == ["AROW()", "50"] and float(last[3]) > 0.9

    monkeypatch.setattr("sys.stdin", stdin(b'{"a": 1, "label": 2}\n'))
    assert run("-", "--model", "AROW()") == 2
    assert "<stdin>, line 1: unknown schema" in capsys.readouterr().err


def test_outputs_are_checked_before_the_run_and_plots_follow_their_extension(tmp_path, capsys):
    assert run("missing.jsonl", "--plot", tmp_path / "x.jpg") == 2  # not "No such file"
    assert "cannot tell the figure format" in capsys.readouterr().err
    argv = ("--limit", 200, "--model", "AROW()", "--quiet")
    for suffix, magic in [(".pdf", b"%PDF"), (".svg", b"<?xml"), (".PNG", b"\x89PNG")]:
        assert run(*argv, "--plot", tmp_path / f"c{suffix}") == 0
        assert (tmp_path / f"c{suffix}").read_bytes().startswith(magic)


def test_ctrl_c_ends_with_one_line_and_the_table_talks_while_it_learns(tmp_path):
    with subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "evaluate", "--drift", "sudden", "--limit", "300000"]
        + ["--every", "100", "--model", "AROW()"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        # Ctrl-C as in a terminal's foreground: a suite started in the background (`cmd &` in a
        # script) inherits SIGINT ignored, and so would the CLI, which would then never see it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as process:  # its pipes closed and the process waited for on the way out
        try:
            assert process.stdout.readline() == evaluate_cli.engine_line() + "\n"
            assert process.stdout.readline().startswith("Progressive validation on SEA")
            process.stdout.readline()
            assert process.stdout.readline().split()[0] == "100"  # a row while the models learn
            assert process.poll() is None
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=60)
            assert (code, process.stderr.read()) == (130, "river-cw evaluate: interrupted\n")
        finally:
            process.kill()


def test_shards_mixed_every_n_next_to_one_model(capsys):
    code = run(
        "--limit",
        600,
        "--model",
        "AROW()",
        "--model",
        "river.linear_model.PAClassifier()",
        "--shards",
        3,
        "--mix",
        "kl",
        "off",
        "--mix-every",
        20,
        100,
        "--quiet",
    )
    out, err = capsys.readouterr()
    assert code == 0
    names = re.findall(r"^0%\s+(.+?)\s{2,}600", out, flags=re.M)
    assert names == [
        "majority class",
        "AROW()",
        "AROW(), 3 shards, kl every 20",
        "AROW(), 3 shards, kl every 100",
        "AROW(), 3 shards, off",
        "river.linear_model.PAClassifier()",
        "river.linear_model.PAClassifier(), 3 shards, off",
    ]
    assert "PAClassifier(): not mixed (cannot mix BinaryLabels" in err


def test_shards_whose_round_cannot_be_mixed_run_on_and_say_so(monkeypatch, capsys, tmp_path):
    """A round `combine` refuses (injected as in tests/mixing/test_mixing_protocol.py) is skipped,
    not fatal: the run completes, prints one line for the sharded model that met it, and saves the
    counts in the JSON and markdown."""
    from tests.mixing.test_mixing_protocol import refusing

    refusing(monkeypatch, 3)
    document, markdown = tmp_path / "r.json", tmp_path / "r.md"
    args = ["--limit", 600, "--model", "AROW()", "--shards", 3, "--mix", "kl", "off"]
    args += ["--mix-every", 20, "--quiet", "--json", document, "--markdown", markdown]
    assert run(*args) == 0
    out = capsys.readouterr().out
    counts = json.loads(document.read_text())["info"]["mixing"]["0%"]
    assert list(counts) == ["AROW(), 3 shards, kl every 20"]
    (counted,) = counts.values()
    assert counted["failed"] == 1 and counted["rounds"] > 3
    line = (
        f"AROW(), 3 shards, kl every 20: 1 of {counted['rounds']} rounds could not be mixed and "
        "were skipped (each shard kept its model)"
    )
    assert out.splitlines()[-1] == line
    assert markdown.read_text().splitlines()[-1] == f"- {line}"


PARCELS = Path(__file__).resolve().parent / "data" / "parcels.csv"


def test_drift_between_files_of_different_lengths_happens_inside_the_stream(tmp_path, capsys):
    longer = tmp_path / "longer.csv"
    rows = PARCELS.read_text().splitlines()
    longer.write_text("\n".join([rows[0], *rows[1:] * 3]) + "\n")  # 900 rows after the 300
    model = ("--model", "river.preprocessing.OneHotEncoder() | AROW()", "--target", "sign")
    document, plot = tmp_path / "r.json", tmp_path / "r.png"
    assert run(PARCELS, longer, "--drift", "sudden", *model, "--json", document) == 0
    info = json.loads(document.read_text())["info"]
    # by default the drift is where the first file ends, and both files are scored
    assert info["drift_at"] == 300 and info["examples"] == 1200
    assert "sudden drift at 300" in info["data"]
    argv = (PARCELS, longer, "--drift", "sudden", "--drift-at", 301, *model)
    assert run(*argv) == 2
    assert "--drift-at 301 is beyond the end of the first file (parcels.csv), 300 examples" in (
        capsys.readouterr().err
    )
    # tuned on a prefix: the figure marks the drift among the examples scored after it
    argv = (PARCELS, longer, "--drift", "sudden", *model, "--tune", "--tune-size", 100)
    assert run(*argv, "--plot", plot, "--json", document) == 0
    assert evaluate_output.marks(json.loads(document.read_text())["info"]) == [200]


def test_categorical_columns_and_true_false_labels_in_a_csv(tmp_path, capsys):
    flags = tmp_path / "flags.csv"
    flags.write_text(PARCELS.read_text().replace("+1", "True").replace("-1", "False"))
    spec = (
        "river.compose.TransformerUnion(river.compose.Select('color') | "
        "river.preprocessing.OneHotEncoder(), river.compose.Discard('color') | "
        "river.preprocessing.StandardScaler()) | river.linear_model.LogisticRegression()"
    )
    assert run(flags, "--target", "sign", "--model", spec, "--json", tmp_path / "r.json") == 0
    out = capsys.readouterr().out
    assert f"{spec}: a binary classifier: it learns 'True' as True and 'False' as False" in out
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["info"]["classes"] == ["False", "True"]  # the file's labels, strings
    assert result["summary"][1]["accuracy"] > 0.7
    # a model that takes numbers only is named, with the feature that holds a string
    assert run(flags, "--target", "sign", "--model", "AROW()") == 2
    err = capsys.readouterr().err
    assert err.startswith("river-cw evaluate: error: model AROW() failed on example 1: TypeError:")
    assert "'color': 'yellow'" in err and len(err.splitlines()) == 1


def test_a_binary_river_model_on_three_labels_is_one_per_label(tmp_path, capsys):
    """The note says how the model was fitted to the labels: river's OneVsRestClassifier, which
    the command imports only where it wraps a model (tests/project/test_startup.py)."""
    path = tmp_path / "three.jsonl"
    rows = [{"x": {"a": float(i % 3), "b": 1.0}, "label": "abc"[i % 3]} for i in range(30)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    spec = "river.linear_model.PAClassifier()"
    assert run(path, "--model", spec, "--model", "AROW()") == 0
    out = capsys.readouterr().out
    assert f"{spec}: a binary classifier, one per label (river's OneVsRestClassifier)" in out
    assert "AROW():" not in out  # river_cw's models take any labels as they are


def test_noise_levels_share_one_pass_and_the_running_table_has_a_row_per_level(capsys):
    assert run("--limit", 400, "--every", 100, "--noise", 0, 0.2, "--model", "AROW()") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].endswith("label noise 0%, 20%: accuracy so far (since the previous row)")
    assert out[2].split() == ["examples", "noise", "majority", "class", "AROW()"]
    rows = [row.split()[:2] for row in out[3 : out.index("")]]
    assert rows == [[step, level] for step in ("100", "200", "400") for level in ("0%", "20%")]
