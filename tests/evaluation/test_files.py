"""`streams.io`: the JSON lines, CSV and libsvm readers, gzip, the schema, and bad input (malformed
lines named with their file and line, or skipped and counted)."""

import collections
import csv
import gzip
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.io.base import MalformedLineError, UnreadableFileError
from streams.io.csv import CSV
from streams.io.files import open_stream, sms_spam
from streams.io.jsonl import JSONLines
from streams.io.libsvm import LibSVM
from streams.io.schema import Schema
from tests.conftest import shared_file


def write(path: Path, text: str, compressed: bool) -> Path:
    if compressed:
        path = path.with_name(path.name + ".gz")
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


JSONL = (
    '{"x": {"a": 1, "b": 2.5}, "label": "pos"}\n'
    "\n"
    '{"text": "free prize", "label": "spam", "id": 3}\n'
    '{"x": {}, "label": 0}\n'
)
JSONL_EXAMPLES = [({"a": 1, "b": 2.5}, "pos"), ({"text": "free prize"}, "spam"), ({}, 0)]
LIBSVM = "+1 1:0.5 7:2  # comment\n\n-1 qid:4 2:1e-3\n3\n# only a comment\n"
CSV_TEXT = 'a,b,label\n1,,yes\n0.5,2,no\n\n-3,"4",no\n'


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
class TestFormats:
    def test_jsonl(self, tmp_path, compressed):
        path = write(tmp_path / "d.jsonl", JSONL, compressed)
        assert list(open_stream(path)) == JSONL_EXAMPLES

    def test_libsvm(self, tmp_path, compressed):
        path = write(tmp_path / "d.svm", LIBSVM, compressed)
        assert list(open_stream(path)) == [
            ({"1": 0.5, "7": 2.0}, 1),
            ({"2": 0.001}, -1),
            ({}, 3),
        ]

    def test_csv(self, tmp_path, compressed):
        path = write(tmp_path / "d.csv", CSV_TEXT, compressed)
        assert list(open_stream(path)) == [
            ({"a": 1.0}, "yes"),
            ({"a": 0.5, "b": 2.0}, "no"),
            ({"a": -3.0, "b": 4.0}, "no"),
        ]

    def test_csv_text_column_and_options(self, tmp_path, compressed):
        path = write(tmp_path / "d.csv", 'y;text\nham;"hello; there"\n', compressed)
        assert list(CSV(path, target="y", delimiter=";")) == [({"text": "hello; there"}, "ham")]

    def test_replay_gives_the_same_examples(self, tmp_path, compressed):
        stream = open_stream(write(tmp_path / "d.jsonl", JSONL, compressed))
        assert list(stream) == JSONL_EXAMPLES
        assert list(stream) == JSONL_EXAMPLES  # a second pass reads the file again


# (format suffix, good line, [(bad line, words expected in the reason)])
MALFORMED = {
    ".jsonl": (
        '{"x": {"a": 1}, "label": 1}',
        [
            ('{"x": {"a": 1}, "label": 1', "bad JSON"),
            ("[1, 2]", "JSON object"),
            ('{"x": {"a": 1}}', "no 'label'"),
            ('{"x": {"a": NaN}, "label": 1}', "non-finite"),
            ('{"x": {"a": null}, "label": 1}', "neither a number nor a string"),
            ('{"x": [1], "label": 1}', "object of features"),
            ('{"text": 3, "label": 1}', "'text' must be a string"),
            ('{"text": "a", "x": {}, "label": 1}', "exactly one"),
            ('{"label": 1}', "exactly one"),
            ('{"text": "a", "label": [1]}', "'label' must be"),
        ],
    ),
    ".svm": (
        "1 a:1",
        [
            ("pos a:1", "bad label"),
            ("1 a:x", "non-numeric"),
            ("1 a", "name:value"),
            ("1 a:inf", "non-finite"),
            ("1 a:1 a:2", "twice"),
        ],
    ),
    ".csv": (
        "1,2,yes",
        [("1,2", "expected 3 fields"), ("1,nan,yes", "not finite"), ("1,2,", "empty 'label'")],
    ),
}


@pytest.mark.parametrize("suffix", MALFORMED)
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_malformed_lines_raise_with_file_and_line_or_are_skipped(tmp_path, suffix, compressed):
    good, bad = MALFORMED[suffix]
    header = ["a,b,label"] if suffix == ".csv" else []
    for bad_line, reason in bad:
        lines = header + [good, bad_line, good]
        path = write(tmp_path / f"d{suffix}", "\n".join(lines) + "\n", compressed)
        bad_number = len(header) + 2
        with pytest.raises(MalformedLineError, match=reason) as caught:
            list(open_stream(path))
        assert caught.value.line == bad_number
        assert caught.value.path == str(path)
        assert f"{path}, line {bad_number}: " in str(caught.value)

        stream = open_stream(path, on_error="skip")
        assert len(list(stream)) == 2
        assert stream.n_skipped == 1
        assert stream.errors[0].line == bad_number
        assert reason in stream.errors[0].reason


def test_not_utf8_is_a_malformed_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"text": "ok", "label": 1}\n{"text": "\xff", "label": 1}\n')
    with pytest.raises(MalformedLineError, match="line 2: not UTF-8"):
        list(JSONLines(path))
    assert list(JSONLines(path, on_error="skip")) == [({"text": "ok"}, 1)]


def test_skip_counts_every_bad_line_and_resets_on_replay(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("".join(f"{i} 1:{i}\n" if i % 3 else "junk\n" for i in range(300)))
    stream = LibSVM(path, on_error="skip")
    assert len(list(stream)) == 200
    assert stream.n_skipped == 100
    assert [e.line for e in stream.errors[:3]] == [1, 4, 7]
    list(stream)
    assert stream.n_skipped == 100


def test_csv_without_target_column_fails_whatever_the_policy(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(MalformedLineError, match="no 'label' column"):
        list(CSV(path, on_error="skip"))


def test_where_filters_records(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"text": str(i), "label": i % 2, "domain": "ab"[i % 2]}) for i in range(6)
        )
    )
    assert [x["text"] for x, _ in JSONLines(path, where={"domain": "b"})] == ["1", "3", "5"]


def test_open_stream_rejects_unknown_names_and_formats():
    with pytest.raises(ValueError, match="cannot tell the format"):
        open_stream("data.parquet")
    with pytest.raises(ValueError, match="unknown format"):
        open_stream("data.txt", format="xml")
    with pytest.raises(ValueError, match="on_error"):
        open_stream("data.csv", on_error="ignore")
    assert isinstance(open_stream("data.txt", format="svmlight"), LibSVM)


def test_bundled_sms_spam():
    counts = collections.Counter(y for _, y in sms_spam())
    assert counts == {"ham": 4827, "spam": 747}


def test_shared_data_reads_without_errors():
    stream = JSONLines(shared_file("mdsd_processed_acl_books.jsonl.gz"))
    examples = list(stream)
    assert len(examples) == 2000 and stream.n_skipped == 0
    assert collections.Counter(y for _, y in examples) == {"positive": 1000, "negative": 1000}
    assert all(isinstance(v, int) for v in examples[0][0].values())


# ---------------------------------------------------------------------------------------------
# Hostile files: every record-level problem is a MalformedLineError (skipped with "skip"), and a
# broken compressed stream ends the stream with UnreadableFileError naming file and line.
# ---------------------------------------------------------------------------------------------

GOOD_JSON = '{"x": {"a": 1}, "label": "yes"}'
HOSTILE_JSON = {
    "nested 100,000 deep": ('{"x": ' + "[" * 100_000 + "]" * 100_000 + ', "label": 1}', "bad JSON"),
    "401-digit integer": ('{"x": {"a": 1' + "0" * 400 + '}, "label": 1}', "digits"),
    "400-digit integer": ('{"x": {"a": 1' + "0" * 399 + '}, "label": 1}', "out of float64"),
    "5000-digit label": ('{"x": {}, "label": 1' + "0" * 5000 + "}", "digits"),
    "NaN label": ('{"x": {}, "label": NaN}', "non-finite"),
    "float label": ('{"x": {}, "label": 1.0}', "'label' must be a string, integer or boolean"),
    "lone surrogate label": ('{"x": {}, "label": "\\ud800"}', "lone surrogate"),
    "null label": ('{"x": {}, "label": null}', "no 'label'"),
}


@pytest.mark.parametrize("case", HOSTILE_JSON)
def test_hostile_json_records_are_malformed_lines(tmp_path, case):
    bad, reason = HOSTILE_JSON[case]
    path = tmp_path / "d.jsonl"
    path.write_text(f"{GOOD_JSON}\n{bad}\n{GOOD_JSON}\n")
    with pytest.raises(MalformedLineError, match=reason) as caught:
        list(JSONLines(path))
    assert caught.value.line == 2 and str(caught.value).startswith(f"{path}, line 2: ")
    stream = JSONLines(path, on_error="skip")
    assert list(stream) == [({"a": 1}, "yes")] * 2 and stream.n_skipped == 1


def test_csv_field_over_the_csv_limit_and_huge_numbers_are_skipped(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text(
        "a,label\n1,yes\n"
        + "2" * (csv.field_size_limit() + 1)
        + ",no\n"
        + ("1" + "0" * 400)
        + ",no\n3,no\n"
    )
    with pytest.raises(MalformedLineError, match="line 3: bad CSV: field larger than field limit"):
        list(CSV(path))
    stream = CSV(path, on_error="skip")
    assert list(stream) == [({"a": 1.0}, "yes"), ({"a": 3.0}, "no")]
    assert [(e.line, e.reason.split(":")[0]) for e in stream.errors] == [
        (3, "bad CSV"),
        (4, "column 'a'"),
    ]


def test_libsvm_labels_are_checked_like_json_labels(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 a:1\nnan a:1\n2.5 a:1\n" + "1" * 5000 + " a:1\n")
    stream = LibSVM(path, on_error="skip", label_type=float)
    assert list(stream) == [] and stream.n_skipped == 4
    assert all("must be a string, integer or boolean" in e.reason for e in stream.errors)
    stream = LibSVM(path, on_error="skip")
    assert list(stream) == [({"a": 1.0}, 1)]
    assert [e.line for e in stream.errors] == [2, 3, 4]
    assert stream.errors[2].reason == "bad label '1111111111111111111111111111111111111...'"
    assert all(len(e.reason) < 80 for e in stream.errors)


def test_utf8_byte_order_mark_is_ignored(tmp_path):
    for name, text, expected in [
        ("d.jsonl", GOOD_JSON + "\n", [({"a": 1}, "yes")]),
        ("d.csv", "label,a\nyes,1\n", [({"a": 1.0}, "yes")]),
        ("d.svm", "1 a:1\n", [({"a": 1.0}, 1)]),
    ]:
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert list(open_stream(path)) == expected


def test_duplicate_csv_column_names_are_an_error_whatever_the_policy(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b,a,label\n1,2,3,yes\n")
    with pytest.raises(MalformedLineError, match=r"line 1: duplicate column names .*\['a'\]"):
        list(CSV(path, on_error="skip"))


def gzip_lines(n: int) -> bytes:
    return gzip.compress(
        "".join(f'{{"x": {{"a": {i}}}, "label": {i % 2}}}\n' for i in range(n)).encode()
    )


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda blob: blob[: len(blob) // 2], "truncated gzip stream"),
        (lambda blob: blob[:100] + b"\x00" * 50 + blob[150:], "corrupt gzip data"),
        (lambda blob: blob[:2] + b"\x09" + blob[3:], "not a valid gzip stream"),
    ],
    ids=["truncated", "corrupt", "bad header"],
)
@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_broken_gzip_ends_the_stream_naming_file_and_line(tmp_path, damage, reason, on_error):
    path = tmp_path / "d.jsonl.gz"
    path.write_bytes(damage(gzip_lines(20_000)))
    seen = []
    with pytest.raises(UnreadableFileError, match=reason) as caught:
        for x, _ in JSONLines(path, on_error=on_error):
            seen.append(x["a"])
    assert seen == list(range(len(seen)))  # what came before the damage, in order
    assert caught.value.path == str(path) and caught.value.line >= len(seen)
    assert str(caught.value).startswith(f"{path}: cannot read past line {caught.value.line}: ")


HOSTILE_LINES = [
    b"",
    b"\xff\xfe",
    b"\xef\xbb\xbf",
    b"[" * 5000,
    b'{"x": {"a": 1e999}, "label": 1}',
    b'{"x": {"a": 1' + b"0" * 500 + b"}, " + b'"label": 1}',
    b'{"text": "\\ud800", "label": "\\udc00"}',
    b'"a","b',
    b"1 a:1 a:2",
    b"nan 1:nan",
    b"\x00,\x00",
    b'{"x": {"a": true}, "label": false}',
    b"label,a",
]


@given(
    lines=st.lists(st.one_of(st.binary(max_size=30), st.sampled_from(HOSTILE_LINES)), max_size=12),
    suffix=st.sampled_from([".jsonl", ".csv", ".svm"]),
    compressed=st.booleans(),
    cut=st.none() | st.integers(min_value=1, max_value=200),
)
@settings(
    derandomize=True,
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_hostile_bytes_give_examples_or_errors_naming_the_file(
    tmp_path, lines, suffix, compressed, cut
):
    data = b"\n".join(lines)
    if compressed:
        data = gzip.compress(data)
        data = data[:cut] if cut is not None else data
    path = tmp_path / f"h{suffix}"
    path.write_bytes(data)
    for on_error in ("raise", "skip"):
        stream = open_stream(path, on_error=on_error)
        try:
            for x, y in stream:
                assert isinstance(x, dict) and isinstance(y, (str, int))
        except MalformedLineError as error:  # with "skip", only for a CSV header
            assert on_error == "raise" or (suffix == ".csv" and "header" in error.reason)
            assert str(error).startswith(f"{path}, line ")
        except UnreadableFileError as error:
            assert data[:2] == b"\x1f\x8b"  # a gzip stream, by its magic bytes
            assert str(error).startswith(f"{path}: cannot read past line ")


def test_open_stream_passes_the_schema_and_delimiter_to_each_format(tmp_path, monkeypatch):
    schema = Schema(label_field="y", text_field="body", flat=True)
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text('{"id": 3, "a": 1, "b": 0.5, "y": "pos"}\n')
    assert list(open_stream(jsonl, schema=schema)) == [({"a": 1, "b": 0.5}, "pos")]
    table = tmp_path / "d.csv"
    table.write_text("body|a|y\nhello there|2|neg\n")
    assert list(open_stream(table, schema=schema, delimiter="|")) == [
        ({"text": "hello there", "a": 2.0}, "neg")
    ]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(b"1 a:1\n"))))
    stdin = open_stream("-", format="libsvm")
    assert stdin.source == "<stdin>" and list(stdin) == [({"a": 1.0}, 1)]
