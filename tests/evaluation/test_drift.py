"""`streams.evaluate.drift`: sudden, gradual and recurring concept drift between streams (river's
`ConceptDriftStream` where they meet), label flips and the books-to-kitchen domain drift."""

import itertools

import pytest
from river.datasets import synth

from streams.evaluate.drift import concept_drift, domains, label_flip, synthetic
from tests.conftest import shared_file


def tagged(name, n=10_000):
    return [({"concept": name, "i": i}, i % 2) for i in range(n)]


def concepts_of(stream):
    return "".join(x["concept"] for x, _ in stream)


@pytest.mark.parametrize("position", [0, 1, 137, 999])
def test_sudden_drift_switches_exactly_at_the_position(position):
    out = list(concept_drift([tagged("a"), tagged("b")], "sudden", position=position))
    assert concepts_of(out[:position]) == "a" * position
    assert concepts_of(out[position : position + 5000]) == "b" * 5000
    # each concept is consumed in order, nothing skipped
    assert [x["i"] for x, _ in out[position : position + 3]] == [0, 1, 2]


def test_synthetic_sudden_drift_is_sea_variant_0_then_variant_3():
    out = list(itertools.islice(synthetic("sudden", position=300, seed=4), 600))
    before = list(synth.SEA(variant=0, seed=4).take(300))
    after = list(synth.SEA(variant=3, seed=5).take(300))
    assert out == before + after


def test_gradual_drift_equals_rivers_concept_drift_stream():
    def sea():
        return synth.SEA(variant=0, seed=1), synth.SEA(variant=3, seed=2)

    river = synth.ConceptDriftStream(*sea(), position=400, width=150, seed=9)
    ours = concept_drift(sea(), "gradual", position=400, width=150, seed=9)
    assert list(itertools.islice(ours, 1500)) == list(river.take(1500))


def test_gradual_drift_is_centred_on_the_position_even_where_river_overflows():
    out = concepts_of(concept_drift([tagged("a"), tagged("b")], "gradual", 5000, width=10, seed=0))
    assert set(out[:4970]) == {"a"} and set(out[5030:9000]) == {"b"}
    assert 0 < out[4970:5030].count("b") < 60


def test_recurring_drift_alternates_every_period():
    out = concepts_of(
        concept_drift([tagged("a"), tagged("b"), tagged("c")], "recurring", 100, period=50)
    )
    assert out[:400] == "a" * 100 + ("b" * 50 + "c" * 50 + "a" * 50) * 2


def test_stream_ends_when_the_chosen_concept_runs_out():
    assert concepts_of(concept_drift([tagged("a", 5), tagged("b", 5)], "sudden", 2)) == "aabbbbb"


def test_concept_drift_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown drift kind"):
        list(concept_drift([[], []], "abrupt"))
    with pytest.raises(ValueError, match="needs two concepts"):
        list(concept_drift([[], [], []], "sudden"))
    with pytest.raises(ValueError, match="width"):
        list(concept_drift([[], []], "gradual", width=0))


def test_label_flip_swaps_classes_from_the_position_on():
    stream = [({"i": i}, "pos" if i % 3 else "neg") for i in range(100)]
    out = list(label_flip(stream, 40, ["neg", "pos"]))
    assert [x for x, _ in out] == [x for x, _ in stream]
    assert [y for _, y in out[:40]] == [y for _, y in stream[:40]]
    swap = {"neg": "pos", "pos": "neg"}
    assert [y for _, y in out[40:]] == [swap[y] for _, y in stream[40:]]


def test_domain_drift_switches_from_books_to_kitchen():
    path = shared_file("mdsd_sorted_acl_text.jsonl.gz")
    from streams.io.jsonl import JSONLines

    books = {x["text"] for x, _ in JSONLines(path, where={"domain": "books"})}
    kitchen = {x["text"] for x, _ in JSONLines(path, where={"domain": "kitchen"})}
    out = list(domains(path, ["books", "kitchen"], position=700, seed=3))
    assert len(out) == 700 + 2000
    assert all(x["text"] in books for x, _ in out[:700])
    assert all(x["text"] in kitchen and x["text"] not in books for x, _ in out[700:])
    # shuffled: the file is sorted by label, the stream is not
    assert {y for _, y in out[:50]} == {"positive", "negative"}
    assert out == list(domains(path, ["books", "kitchen"], position=700, seed=3))
