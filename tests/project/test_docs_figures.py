"""The guides' benchmark figures (docs/figures/) show the numbers of their guide's table.

Each figure is written by its benchmark with `--figure`, beside a JSON file of the numbers it
draws; the full runs take minutes, so here each figure is drawn again from its committed JSON and
compared with the committed PNG, and the guide's table is checked against the same JSON: one set
of numbers for the table and the figure. Two rows of the dense numbers are computed again. Each
figure is shown in its guide with alt text, and the numbers the alt text and the prose around
the figure quote are the JSON's.

- docs/figures/dense.json, dense.png: `python benchmarks/dense.py --part today --figure
  docs/figures/dense.png`, the summary table of docs/guide/dense.md;
- docs/figures/speed.json, speed.png: `python benchmarks/instructions.py --figure
  docs/figures/speed.png --write docs/tables/learn_one.md`, the `learn_one` table of
  docs/guide/speed.md;
- docs/figures/reliability.json, reliability.png: `python benchmarks/calibration.py --figure
  docs/figures/reliability.png`, the reliability diagram of docs/guide/choosing.md (no table: the
  numbers of its sample, the first 500 SMS examples for AROW(), are computed again);
- docs/figures/drift.json, drift.png: `python benchmarks/drift.py --figure docs/figures/drift.png`,
  accuracy over time on two drifting streams in docs/guide/choosing.md and the README (no table:
  the start of every curve, the first 1,000 examples, is computed again).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import shared_file
from tests.project.test_docs_generated import assert_same_figure

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures"
GUIDES = ROOT / "docs" / "guide"


def committed(name: str) -> dict:
    return json.loads((FIGURES / f"{name}.json").read_text(encoding="utf-8"))


def alt_text(page: Path, image: str) -> str:
    """The alt text of the one image at path `image` (as `page` writes it) on `page`, its words
    joined by single spaces."""
    text = page.read_text(encoding="utf-8")
    [alt] = re.findall(rf"!\[([^\]]*)\]\({re.escape(image)}\)", text)
    return " ".join(alt.split())


def table_after(page: Path, marker: str) -> list[list[str]]:
    """The cells of the first markdown table after `marker` in `page`, header and rule left out."""
    text = page.read_text(encoding="utf-8").split(marker, 1)[1]
    block = re.search(r"((?:^\|.*\|\n)+)", text, flags=re.M)[1]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines()]
    return rows[2:]


@pytest.mark.parametrize("name", ["dense", "speed", "reliability", "drift"])
def test_each_figure_is_drawn_from_its_committed_numbers(name, tmp_path):
    from benchmarks import calibration, dense, drift, instructions

    draw = {
        "dense": dense.draw,
        "speed": instructions.draw,
        "reliability": calibration.draw,
        "drift": drift.draw,
    }[name]
    draw(committed(name), tmp_path / f"{name}.png")
    assert_same_figure(tmp_path / f"{name}.png", FIGURES / f"{name}.png")


@pytest.mark.parametrize(
    "page, name",
    [
        ("dense.md", "dense"),
        ("speed.md", "speed"),
        ("choosing.md", "reliability"),
        ("choosing.md", "drift"),
    ],
)
def test_each_figure_is_in_its_guide_with_alt_text_and_its_command(page, name):
    assert len(alt_text(GUIDES / page, f"../figures/{name}.png").split()) >= 8
    assert f"--figure docs/figures/{name}.png" in (GUIDES / page).read_text(encoding="utf-8")


def test_the_dense_guides_table_holds_the_figures_numbers():
    numbers = committed("dense")
    rows = table_after(GUIDES / "dense.md", "--figure docs/figures/dense.png")
    assert rows == [[name, *(f"{v:.3f}" for v in values)] for name, values in numbers["rows"]]


def test_the_dense_figures_phishing_rows_are_what_the_benchmark_computes_today(capsys):
    """The whole run takes minutes: the rows of river's Phishing, clean and with 10% label
    noise, are computed again (in seconds) by the benchmark's own functions."""
    from river import datasets

    from benchmarks import dense

    examples = dense._binary(datasets.Phishing(), 10000)
    streams = {"Phishing": examples, dense.NOISY_PHISHING: examples}
    table = dense.summary_table(dense.run("Phishing", streams, dense.today_models()))
    capsys.readouterr()
    numbers = committed("dense")
    assert table["columns"] == numbers["columns"]
    assert table["rows"] == [row for row in numbers["rows"] if row[0] in streams]


def test_the_speed_guides_table_holds_the_figures_numbers():
    """The `learn_one` table the guide includes (docs/tables/learn_one.md, written by the same
    command) is the figure's numbers: instructions per feature and the ratio to river's
    PAClassifier, per corpus."""
    from benchmarks import instructions

    table = (ROOT / "docs" / "tables" / "learn_one.md").read_text(encoding="utf-8")
    assert table == instructions.learn_table(committed("speed")["corpora"])


def test_the_reliability_figures_sample_is_what_the_benchmark_computes_today():
    """The first 500 SMS examples, shuffled as in the full run, binned for AROW() by the
    benchmark's own functions; and the full run's bins are consistent (ten per model, every
    stream's examples counted once per model)."""
    from benchmarks import calibration
    from benchmarks.intercept import shared

    numbers = committed("reliability")
    sample = numbers["sample"]
    assert sample["stream"] in numbers["streams"]
    file = f"{calibration.RELIABILITY_STREAMS[sample['stream']]}.jsonl.gz"
    shared_file(file)
    examples = shared(file, 0, sample["limit"])
    model = calibration.RELIABILITY_MODELS[sample["model"]]()
    assert calibration.reliability(model, examples) == sample["bins"]
    for run in numbers["streams"].values():
        assert list(run["models"]) == list(calibration.RELIABILITY_MODELS)
        for bins in run["models"].values():
            assert len(bins) == numbers["bins"]
            assert sum(count for count, _, _ in bins) == run["examples"]


def test_the_readme_shows_the_drift_figure_with_alt_text():
    assert len(alt_text(ROOT / "README.md", "docs/figures/drift.png").split()) >= 8


def test_the_drift_figures_curves_start_as_the_benchmark_computes_them_today():
    """The first 1,000 examples of each stream, every model, by the benchmark's own functions
    (the curves' first ten points); and the full run's curves are whole (one point per
    `EVERY` examples, the models and the reversal of the benchmark)."""
    from benchmarks import drift

    numbers = committed("drift")
    every, first = numbers["every"], 1000
    streams = drift.drifting_streams(numbers["n"], set(drift.FIGURE_STREAMS))
    assert list(numbers["streams"]) == list(drift.FIGURE_STREAMS)
    for name, run in numbers["streams"].items():
        assert run["examples"] == len(streams[name])
        assert run["drift_at"] == drift.FIGURE_STREAMS[name]
        assert list(run["models"]) == list(drift.FIGURE_MODELS)
        for model, curve in run["models"].items():
            assert len(curve) == run["examples"] // every
            start = drift.windowed_accuracy(
                drift.FIGURE_MODELS[model](), streams[name][:first], numbers["window"], every
            )
            assert start == curve[: first // every], (name, model)


def test_the_dense_guides_scaler_claim_holds_the_figures_numbers():
    """ "`StandardScaler()` gains at most 0.3 points on any stream (Sine) and loses 8.1 and 15.7
    on a9a and Spambase": AROW after the scaler against AROW, in points."""
    numbers = committed("dense")
    arow, scaled = (
        numbers["columns"].index("AROW"),
        numbers["columns"].index("... after StandardScaler"),
    )
    gain = {name: 100 * (v[scaled] - v[arow]) for name, v in numbers["rows"]}
    most = max(gain, key=gain.get)
    text = " ".join((GUIDES / "dense.md").read_text(encoding="utf-8").split())
    assert (
        f"`StandardScaler()` gains at most {gain[most]:.1f} points on any stream "
        f"({most.split(',')[0]}) and loses {-gain['a9a']:.1f} and {-gain['Spambase']:.1f} on a9a "
        "and Spambase" in text
    ), gain


def test_the_drift_figures_alt_texts_say_what_its_numbers_show():
    """Each number of the alt texts of docs/figures/drift.png (docs/guide/choosing.md and the
    README) against drift.json: the windowed accuracy, one point every `every` examples."""
    numbers = committed("drift")
    every = numbers["every"]
    hyperplane = numbers["streams"]["Hyperplane 0.01"]["models"]
    sine = numbers["streams"]["Sine reversed"]
    default, never = "AROW() (the default)", "AROW(forgetting=0) (no adaptation)"
    logistic, pa = "river LogisticRegression (scaled)", "river PAClassifier (scaled)"

    settled = {m: sum(c[len(c) // 2 :]) / (len(c) - len(c) // 2) for m, c in hyperplane.items()}
    assert settled[never] < settled[pa] < min(settled[default], settled[logistic])
    assert 0.005 < settled[default] - settled[logistic] < 0.02  # "a point ahead of"

    reversal = sine["drift_at"] // every  # the first point after the reversal
    lowest = {m: min(c[reversal:]) for m, c in sine["models"].items()}
    back = {}  # examples from the reversal until the curve is above 0.9 again
    for model, c in sine["models"].items():
        bottom = c.index(lowest[model], reversal)
        up = [i for i in range(bottom, len(c)) if c[i] > 0.9]
        back[model] = (up[0] + 1) * every - sine["drift_at"] if up else None
    assert lowest[logistic] < 0.06  # "near 0.05"
    assert back[never] > 2 * back[logistic]  # too confident to unlearn soon

    alt = alt_text(GUIDES / "choosing.md", "../figures/drift.png")
    assert (
        f"the default AROW settles near {settled[default]:.2f} over the second half, a point "
        f"ahead of river's LogisticRegression ({settled[logistic]:.2f}) and ahead of its PAClassifier "
        f"({settled[pa]:.2f}), while without adaptation it falls to {settled[never]:.2f}"
    ) in alt
    assert (
        f"the default AROW dips to {lowest[default]:.2f} after the reversal and is back above "
        f"0.9 within {back[default]:,} examples, LogisticRegression drops to near 0.05 and takes "
        f"{back[logistic]:,}, PAClassifier dips only to {lowest[pa]:.2f}"
    ) in alt
    assert f"without adaptation AROW falls to {lowest[never]:.2f} and takes {back[never]:,}" in alt
    readme = alt_text(ROOT / "README.md", "docs/figures/drift.png")
    assert f"back above 0.9 within {back[default]:,} examples of the reversal" in readme
    assert f"falls to {lowest[never]:.2f} after the reversal and takes {back[never]:,}" in readme


def test_the_reliability_paragraph_says_what_its_numbers_show():
    """choosing.md: "of the predictions near 0.55, 73% to 96% are spam", the sixth bin of SMS for
    each model in reliability.json."""
    models = committed("reliability")["streams"]["SMS spam (positive: spam)"]["models"]
    sixth = [bins[5] for bins in models.values()]
    assert all(0.5 <= mean < 0.6 for _, mean, _ in sixth)
    low, high = (round(100 * f(frequency for _, _, frequency in sixth)) for f in (min, max))
    text = " ".join((GUIDES / "choosing.md").read_text(encoding="utf-8").split())
    assert f"of the predictions near 0.55, {low}% to {high}% are spam" in text


def test_the_dense_guides_comparisons_with_river_hold_the_figures_numbers():
    """ "AROW is ahead of river's best on all 16 streams ...; its narrowest lead is 0.4 points,
    on Shuttle. The papers' diagonal model trails by more than a point on 7 of them. ... NHERD
    is ahead of river's best on all 16 too (its narrowest lead 0.4 points, on Shuttle)."; the
    README's "ahead of river's best linear model on all 16 dense streams measured"."""
    numbers = committed("dense")
    columns = numbers["columns"]
    best = columns.index("best of river's three")
    lead = {
        model: {name: 100 * (v[columns.index(model)] - v[best]) for name, v in numbers["rows"]}
        for model in ("AROW", "NHERD", "AROW diagonal (before)")
    }
    n = len(numbers["rows"])
    arow, nherd, diagonal = lead["AROW"], lead["NHERD"], lead["AROW diagonal (before)"]
    narrowest = min(arow, key=arow.get)
    closest = min(nherd, key=nherd.get)
    trailing = sum(v < -1 for v in diagonal.values())
    assert min(arow.values()) > 0 and min(nherd.values()) > 0
    text = " ".join((GUIDES / "dense.md").read_text(encoding="utf-8").split())
    assert f"AROW is ahead of river's best on all {n} streams of the table" in text
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"ahead of river's best linear model on all {n} dense streams measured" in readme
    assert f"its narrowest lead is {arow[narrowest]:.1f} points, on {narrowest}." in text
    assert f"The papers' diagonal model trails by more than a point on {trailing} of them." in text
    assert f"NHERD is ahead of river's best on all {n} too" in text
    assert f"(its narrowest lead {nherd[closest]:.1f} points, on {closest.split(',')[0]})" in text
