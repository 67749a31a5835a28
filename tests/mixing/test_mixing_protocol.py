"""The mixing protocol without a broker: every example's evidence once in the mix, crashes or not.

The ground truth: AROW with a large r updates on every example (its margins stay far below 1)
and each update adds ``x_j^2 / r`` to the precision of weight j, whatever the model was. So
after any interleaving of partitions, publications, mixes, adoptions and crashes, the final mix
must hold, for every feature, precision ``1/a0 + sum over the examples of x_j^2 / r``: an
example lost or counted twice changes it (each example also carries a feature of its own).

A round `combine` refuses is skipped, not fatal: the fault is injected by making `combine` raise
for one round (`refusing`), which changes nothing else of what we ship; every partition keeps its
model, a restore skips the round again, the next round mixes every example once, and the offline
simulation counts the round and completes.
"""

from __future__ import annotations

import logging
import math
import pickle
import random
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import river_cw
from streams.evaluate.sharded import ShardedClassifier, evaluate_mixing, shard_of
from streams.kafka.learner import PartitionLearner, PartitionState
from streams.kafka.messages import encode_example
from streams.models import mixing
from streams.models.mixing import (
    Contribution,
    Mixer,
    MixError,
    MixState,
    Rounds,
    clone,
    fingerprint,
)

R = 1e4


def stream(rng: random.Random, n: int, labels=("ham", "spam")) -> list[tuple]:
    return [
        (
            i,
            {f"w{rng.randrange(12)}": rng.uniform(-2, 2)}
            | {f"w{rng.randrange(12)}": 1.0, f"id{i}": 1.0},
            rng.choice(labels),
        )
        for i in range(n)
    ]


class Partition:
    """A partition as the server runs it: state committed with its contributions at once; a
    crash returns to the last commit (the open transaction's contributions are lost)."""

    def __init__(self, p: int, model, records: list[bytes], every: int, method: str, count: int):
        state = PartitionState("t", p, clone(model))
        state.mixing = MixState.starting(model)
        self.p, self.records, self.every, self.method, self.count = p, records, every, method, count
        self.committed = pickle.dumps(state)
        self.restore([])

    def restore(self, log: list) -> None:
        state = pickle.loads(self.committed)
        self.learner = PartitionLearner(state)
        self.mixer = Mixer(state.mixing, self.every, seconds=1.0)
        self.outbox: list = []
        self.rounds = Rounds(self.count, self.method)  # this member's view of the models topic
        self.read = state.mixing.models_from
        self.poll(log)

    @property
    def state(self) -> PartitionState:
        return self.learner.state

    def step(self, log: list) -> None:
        i = self.state.offsets.get("t", 0)
        if i < len(self.records):
            self.learner.example(self.records[i])
            self.state.offsets["t"] = i + 1
            self.publish(log)

    def publish(self, log: list, elapsed: float = 0.0) -> None:
        waiting = self.rounds.waiting(self.state.mixing.round)
        if self.mixer.due(elapsed, waiting):
            self.outbox.append(self.mixer.publish(self.state.model, self.p))
            self.commit(log)

    def commit(self, log: list) -> None:
        log.extend(pickle.dumps(c) for c in self.outbox)
        self.outbox.clear()
        self.committed = pickle.dumps(self.state)

    def poll(self, log: list) -> None:
        for offset in range(self.read, len(log)):
            self.rounds.add(pickle.loads(log[offset]), offset)
        self.read = len(log)
        mixing = self.state.mixing
        mix = self.rounds.mix(mixing.round, mixing) if mixing.published else None
        if mix is not None:
            self.state.model = self.mixer.adopt(self.state.model, mix)
            self.rounds.forget(mixing.round)


def run(seed: int, n: int, partitions: int, every: int, method: str = "kl", labels=("ham", "spam")):
    rng = random.Random(seed)
    examples = stream(rng, n, labels)
    # the diagonal with AROW's own scheme, never forgetting: every example adds x_j^2 / r to a
    # weight's precision
    model = river_cw.AROW(r=R, covariance="diagonal", diagonal="project", forgetting=0.0)
    records = [[] for _ in range(partitions)]
    for i, x, y in examples:
        records[rng.randrange(partitions)].append(encode_example(i, x, y))
    log: list = []
    parts = [Partition(p, model, records[p], every, method, partitions) for p in range(partitions)]
    for _ in range(50 * n):
        part = rng.choice(parts)
        action = rng.random()
        if action < 0.6:
            part.step(log)
        elif action < 0.75:
            part.commit(log)
        elif action < 0.8:
            part.restore(log)  # kill -9: back to the last commit
        else:
            part.poll(log)
    for _ in range(10 * n):  # the stream ends: everything is learned and mixed
        for part in parts:
            part.step(log)
            part.publish(log, elapsed=math.inf)
            part.poll(log)
            part.commit(log)
        states = [part.state for part in parts]
        if all(s.offsets.get("t", 0) == len(r) for s, r in zip(states, records)) and all(
            not s.mixing.published and s.mixing.learned == s.mixing.learned_at_anchor
            for s in states
        ):
            break
    return examples, parts, log


def assert_evidence_once(examples, mix):
    """Every weight's precision is the prior's plus x_j^2 / r of every example, once."""
    expected: dict = {}
    for _, x, _ in examples:
        for f, value in x.items():
            expected[f] = expected.get(f, 1.0) + value * value / R
    variances = mix.variances
    assert set(variances) == set(expected)
    for f, precision in expected.items():
        assert 1.0 / variances[f] == pytest.approx(precision, rel=1e-9), f


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), partitions=st.integers(1, 4), every=st.integers(1, 12))
def test_every_example_counts_once_in_the_mix_whatever_crashes(seed, partitions, every):
    examples, parts, log = run(seed, 60, partitions, every)
    states = [part.state for part in parts]
    rounds = {s.mixing.round for s in states}
    assert len(rounds) == 1, rounds  # every partition adopted the last mix
    mixing = states[0].mixing
    assert mixing.examples == len(examples) == sum(s.learned for s in states)
    assert all(fingerprint(s.model) == mixing.fingerprint for s in states)  # one model
    assert_evidence_once(examples, mixing.anchor)
    committed = [pickle.loads(c) for c in log]
    assert len({(c.round, c.partition) for c in committed}) == len(committed)  # none twice


def test_l2_mixing_also_counts_every_example():
    examples, parts, _ = run(5, 80, 3, 5, method="l2")
    mixing = parts[0].state.mixing
    assert mixing.examples == len(examples)
    assert mixing.round > 3


@pytest.mark.parametrize("method", ["kl", "l2"])
def test_multiclass_partitions_meeting_labels_in_any_order_end_with_one_model(method):
    examples, parts, _ = run(8, 90, 3, 4, method=method, labels=("a", "b", "c", "d"))
    states = [part.state for part in parts]
    mixing = states[0].mixing
    assert mixing.examples == len(examples) and len({s.mixing.round for s in states}) == 1
    assert sorted(mixing.anchor.classes_) == ["a", "b", "c", "d"]
    assert all(fingerprint(s.model) == mixing.fingerprint for s in states)


def test_members_compute_the_same_mix_in_any_reading_order():
    rng = random.Random(2)
    base = river_cw.AROW()
    contributions = []
    for p in range(3):
        model = clone(base)
        for _, x, y in stream(rng, 20):
            model.learn_one(x, y)
        contributions.append(Contribution(0, p, model, 20, fingerprint(base)))
    mixes = []
    for order in ([0, 1, 2], [2, 0, 1]):
        rounds, state = Rounds(3, "kl"), MixState.starting(base)
        for p in order:
            assert rounds.mix(0, state) is None
            rounds.add(pickle.loads(pickle.dumps(contributions[p])))
        mixes.append(rounds.mix(0, state))
    assert mixes[0].fingerprint == mixes[1].fingerprint and mixes[0].examples == 60
    assert pickle.dumps(mixes[0].model) == pickle.dumps(mixes[1].model)


def test_contributions_from_another_base_are_refused():
    base, other = river_cw.AROW(), river_cw.AROW()
    other.learn_one({"a": 1.0}, True)
    rounds = Rounds(1, "kl")
    rounds.add(Contribution(0, 0, other, 1, fingerprint(other)))
    with pytest.raises(MixError, match="another base"):
        rounds.mix(0, MixState.starting(base))


def test_a_round_whose_mix_knows_one_label_is_skipped():
    start = river_cw.AROW()
    rounds = Rounds(2, "kl")
    mixers, models = [], []
    for p in range(2):
        model = clone(start)
        model.learn_one({f"f{p}": 1.0}, "ham")
        mixer = Mixer(MixState.starting(start), every=1)
        mixer.state.record({f"f{p}": 1.0}, "ham")
        rounds.add(mixer.publish(model, p))
        mixers.append(mixer)
        models.append(model)
    mix = rounds.mix(0, mixers[0].state)
    assert mix.model is None and mix.examples == 0
    kept = [mixer.adopt(model, mix) for mixer, model in zip(mixers, models)]
    assert kept == models and mixers[0].state.round == 1
    assert mixers[0].due() is False and mixers[0].due(elapsed=5.0) is False  # no seconds set


def test_time_trigger_publishes_for_waiting_partitions():
    mixer = Mixer(MixState.starting(river_cw.AROW()), every=100, seconds=2.0)
    assert not mixer.due(elapsed=1.0, waiting=True)
    assert not mixer.due(elapsed=3.0, waiting=False)  # nothing learned, nobody waits
    assert mixer.due(elapsed=3.0, waiting=True)
    contribution = mixer.publish(river_cw.AROW(), 0)
    assert contribution.model is None and contribution.examples == 0


def test_one_shard_mixed_is_the_single_model():
    rng = random.Random(4)
    model, sharded = river_cw.AROW(), ShardedClassifier(river_cw.AROW(), 1, 7, "kl")
    for _, x, y in stream(rng, 50):
        assert sharded.predict_proba_one(x) == model.predict_proba_one(x)
        model.learn_one(x, y)
        sharded.learn_one(x, y)
    assert sharded.rounds == 7


def test_unmixed_shards_are_isolated_models():
    rng = random.Random(6)
    examples = stream(rng, 60)
    sharded = ShardedClassifier(river_cw.AROW(), 3, 5, "off")
    isolated = [river_cw.AROW() for _ in range(3)]
    for _, x, y in examples:
        sharded.learn_one(x, y)
        isolated[shard_of(x, 3)].learn_one(x, y)
    assert [m.weights for m in sharded.models] == [m.weights for m in isolated]
    with pytest.raises(ValueError, match="only Gaussian classifiers"):
        ShardedClassifier(river_cw.VotedRDA(), 2, 5, "kl")


def test_mixing_brings_shards_close_to_one_model_on_sms_spam():
    from river_cw.text import BagOfWords
    from streams.io.files import sms_spam

    result = evaluate_mixing(
        BagOfWords(on="text") | river_cw.AROW(),
        list(sms_spam())[:2500],
        shards=4,
        mix_every=[25],
        methods=["kl", "off"],
    )
    scores = {r["model"]: r["accuracy"] for r in result.summary}
    one, mixed, isolated = (
        scores[k] for k in ("one model", "4 shards, kl every 25", "4 shards, off")
    )
    assert mixed > isolated + 0.01 and one - mixed < (one - isolated) / 2


def test_inspect_shows_the_mixing_round():
    from streams.cli.inspect import describe

    state = PartitionState("t", 0, river_cw.AROW())
    state.mixing = MixState.starting(state.model)
    assert "mixing: round 0, 0 examples in the last mix, not published yet" in describe(state, 3)


def test_serving_refuses_what_cannot_be_mixed():
    import argparse

    from streams.cli import serve as serve_cli
    from streams.kafka.config import Mixing, ServeConfig, Topics
    from streams.kafka.envelope import StateKeys

    with pytest.raises(ValueError, match="exactly-once"):
        ServeConfig(
            Topics("t"),
            StateKeys.insecure(),
            mixing=Mixing("kl"),
            processing_guarantee="at-least-once",
        )
    with pytest.raises(ValueError, match="mix must be one of"):
        Mixing("average")
    parser = argparse.ArgumentParser()
    serve_cli.add_arguments(parser)
    args = parser.parse_args(["--topic", "t", "--model", "VotedRDA()", "--mix", "kl"])
    assert serve_cli.run(args) == 2  # before any broker is asked


REFUSED = "the mixed precision of the intercept is not positive and finite (-66.5)"


def refusing(monkeypatch, round_: int) -> list[int]:
    """Make `combine` raise ValueError whenever round `round_` is mixed (read from its caller,
    `Rounds.mix`), as a combination that cannot be made would: a function of the round only,
    so every member and every restore meets the same failure. Returns the list of the rounds
    refused so far (one entry each time)."""
    real, refused = mixing.combine, []

    def combine(models, **kwargs):
        if sys._getframe(1).f_locals.get("round_") == round_:
            refused.append(round_)
            raise ValueError(REFUSED)
        return real(models, **kwargs)

    monkeypatch.setattr(mixing, "combine", combine)
    return refused


def test_a_round_that_cannot_be_mixed_is_skipped_once_and_the_next_round_mixes(monkeypatch, caplog):
    """Three partitions, every 5 examples, `combine` refusing round 2: the round is skipped
    (each partition keeps its very model and anchor), logged in one warning line naming the
    round and the reason, counted once even when a restored partition mixes it again, and round
    3 mixes every example learned so far exactly once."""
    caplog.set_level(logging.INFO, logger="streams.models.mixing")
    refused = refusing(monkeypatch, 2)
    start = river_cw.AROW(r=R, covariance="diagonal", diagonal="project")
    examples = stream(random.Random(3), 4 * 3 * 5)
    feed = iter(examples)
    rounds = Rounds(3, "kl")
    mixers = [Mixer(MixState.starting(start), every=5) for _ in range(3)]
    models = [clone(start) for _ in range(3)]
    learned = []

    def learn(p: int) -> None:
        _, x, y = example = next(feed)
        models[p].learn_one(x, y)
        mixers[p].state.record(x, y)
        learned.append(example)

    offset = 0
    for round_ in range(4):
        published = []
        for p in range(3):
            while not mixers[p].due():
                learn(p)
            published.append((mixers[p].publish(models[p], p), offset))
            rounds.add(*published[-1])
            offset += 1
        if round_ < 3:
            learn(round_)  # learned after publishing: replayed on a mix, kept on a skip
        committed = pickle.dumps(mixers[1].state)  # partition 1 published, not yet adopted
        mix = rounds.mix(round_, mixers[0].state)
        anchors = [mixer.state.fingerprint for mixer in mixers]
        before = list(models)
        models = [mixer.adopt(model, mix) for mixer, model in zip(mixers, models)]
        rounds.forget(round_ + 1)
        if round_ == 2:
            assert mix.model is None and mix.examples == mixers[0].state.examples
            assert all(after is kept for after, kept in zip(models, before))
            assert [mixer.state.fingerprint for mixer in mixers] == anchors
            # partition 1 restored from its commit before adopting (a new owner): its round
            # read again from the models topic, the same contributions, is skipped again
            restored = pickle.loads(committed)
            assert restored.round == 2 and restored.published
            for contribution, at in published:
                rounds.add(pickle.loads(pickle.dumps(contribution)), at)
            again = rounds.mix(2, restored)
            assert again.model is None and again.fingerprint == anchors[1]
            rounds.forget(3)
        else:
            assert mix.model is not None
    warnings = [
        r for r in caplog.records if r.name == mixing.__name__ and r.levelno >= logging.WARNING
    ]
    assert [r.getMessage() for r in warnings] == [
        "round 2 not mixed (every partition keeps its model, mixing again next round): " + REFUSED
    ]
    assert rounds.failed == 1 and refused == [2, 2]  # mixed twice, counted once
    # round 3 mixed the changes since round 1's mix: rounds 2 and 3, each example once
    assert mix.round == 3 and mix.examples == len(learned) == 4 * 3 * 5
    assert_evidence_once(learned, mix.model)
    assert all(fingerprint(model) == mix.fingerprint for model in models)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_refused_round_is_skipped_alike_by_every_member_whatever_crashes(monkeypatch, seed):
    """Each partition of `run` reads the models topic itself (a member of its own) and restores
    from its last commit at random: with round 2 refused, every one of them skips it (else their
    anchors would part and a later round fail as "another base"), and the final mix holds every
    example once."""
    refused = refusing(monkeypatch, 2)
    examples, parts, _ = run(seed, 60, 3, 4)
    assert len(refused) >= len(parts)  # each member met it (and members restored again)
    states = [part.state for part in parts]
    assert len({s.mixing.round for s in states}) == 1 and states[0].mixing.round > 3
    last = states[0].mixing
    assert last.examples == len(examples) == sum(s.learned for s in states)
    assert all(fingerprint(s.model) == last.fingerprint for s in states)
    assert_evidence_once(examples, last.anchor)


def test_the_offline_simulation_counts_a_refused_round_and_completes(monkeypatch):
    """`evaluate_mixing` (what `river-cw evaluate --shards` runs) with round 1 refused: the run
    ends, the round is counted in ``info["mixing"]``, and the CLI's note names the model."""
    from streams.cli.evaluate_output import mixing as notes

    refusing(monkeypatch, 1)
    rng = random.Random(7)
    examples = [(x, y) for _, x, y in stream(rng, 400)]
    result = evaluate_mixing(
        river_cw.AROW(), examples, shards=3, mix_every=[20], methods=["kl", "l2", "off"]
    )
    assert {r["model"]: r["step"] for r in result.summary} == {
        "one model": 400,
        "3 shards, kl every 20": 400,
        "3 shards, l2 every 20": 400,
        "3 shards, off": 400,
    }
    counts = result.info["mixing"]
    assert set(counts) == {"3 shards, kl every 20", "3 shards, l2 every 20"}
    for name in counts:
        assert counts[name]["failed"] == 1 and counts[name]["rounds"] > 3, counts
    assert notes({"mixing": {"0%": counts}}) == [
        f"{name}: 1 of {counts[name]['rounds']} rounds could not be mixed and were skipped "
        "(each shard kept its model)"
        for name in counts
    ]
