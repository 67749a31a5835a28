import collections
import gzip
import json
from pathlib import Path

import pytest

from streams.files import CSV, JSONLines, LibSVM, MalformedLineError, open_stream, sms_spam

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


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
LIBSVM = "+1 1:0.5 7:2  # comment\n\n-1 qid:4 2:1e-3\n3\n# only a comment\n"
CSV_TEXT = 'a,b,label\n1,,yes\n0.5,2,no\n\n-3,"4",no\n'


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
class TestFormats:
    def test_jsonl(self, tmp_path, compressed):
        path = write(tmp_path / "d.jsonl", JSONL, compressed)
        assert list(open_stream(path)) == [
            ({"a": 1, "b": 2.5}, "pos"),
            ({"text": "free prize"}, "spam"),
            ({}, 0),
        ]

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
        assert list(stream) == list(stream)


# (format suffix, good line, [(bad line, words expected in the reason)])
MALFORMED = {
    ".jsonl": (
        '{"x": {"a": 1}, "label": 1}',
        [
            ('{"x": {"a": 1}, "label": 1', "invalid JSON"),
            ("[1, 2]", "JSON object"),
            ('{"x": {"a": 1}}', "no 'label'"),
            ('{"x": {"a": NaN}, "label": 1}', "non-finite"),
            ('{"x": {"a": "1"}, "label": 1}', "non-numeric"),
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
        [("1,2", "expected 3 fields"), ("1,x,yes", "not a number"), ("1,2,", "empty 'label'")],
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
    if not SHARED.is_dir():
        pytest.skip(f"shared data not found at {SHARED}")
    stream = JSONLines(SHARED / "mdsd_processed_acl_books.jsonl.gz")
    examples = list(stream)
    assert len(examples) == 2000 and stream.n_skipped == 0
    assert collections.Counter(y for _, y in examples) == {"positive": 1000, "negative": 1000}
    assert all(isinstance(v, int) for v in examples[0][0].values())
