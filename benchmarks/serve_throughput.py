"""Throughput of `river-cw serve` (streams.kafka.server): exactly-once against at-least-once, and
against the same model run offline.

Starts a Tansu broker, writes the bundled SMS Spam Collection (5,574 texts) `--repeat` times
over to a topic of `--partitions` partitions (keyed by id), serves it with `AROW()` behind a bag
of words under each processing guarantee (a fresh topic each), and prints messages/s of the
server (Kafka in and out, JSON, predict + learn, a commit of outputs, state and offsets every
`--checkpoint-every` messages) next to the offline predict + learn loop over the same examples
(`predict_proba_one`, `predict_one`, `learn_one`: what the server computes per example).

A server's rate runs from the first message it handles to the end of its last commit: the time
from its first record to its last (the commits between included), and the commits after its last
record (the last one made once it has waited `IDLE` without a message; the wait itself, which
ends at a poll's timeout, is not counted, nor is closing the clients). Its start-up (connecting,
fencing the previous owners, restoring the partitions) is printed apart. The machine is shared
and noisy: the contenders are interleaved over `--rounds` rounds and each one's best round is
kept.

With `--processes N` each guarantee is also served by N server processes, each with a static
share of the partitions (partition p in process p mod N), as N members of a group on N cores
would share them. They start together: each holds its first record until every one has restored
its partitions. Their rate runs from the first record any of them handles to the end of the last
commit of any of them.

    python benchmarks/serve_throughput.py [--repeat 2] [--partitions 2] [--checkpoint-every 1000]
                                          [--processes N] [--write PATH]

``--write PATH`` also writes the rates and their ratio to offline as a markdown table
(docs/tables/serve_throughput.md, benchmarks/markdown.py).

With `--model-features 0,100000,1000000` it measures instead what the state topic's changelog
costs against the size of the model (exactly-once): for each size a text model that has learned
that many words (random ones) is served with `--init-model` on SMS `--repeat` times over, in two
runs on one topic: the first (the first 1,000 messages) writes each partition's first snapshot;
the second restores it and serves the rest. It prints the second run's messages/s against the
empty model's, the bytes per commit of changes and per weight they wrote, the snapshot's bytes
and the time of the first run's slowest commit (a snapshot), and the time a partition's restore
took (mark, read, decode). The second run is short of the model's next snapshot: the last
columns add it, every so many commits as the store's rules give for this model, to the rate
(the steady state of a long run), the snapshot's time taken from the first run's (the
partitions' first commits, together). The last column is the model's own offline predict + learn
rate against the empty model's, in the same rounds: what the model's size costs without Kafka.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import math
import multiprocessing
import pickle
import queue
import random

from kafka import KafkaProducer

from benchmarks import markdown
from river_cw import AROW
from river_cw.text import TextClassifier
from streams.cli.serve import build_model
from streams.io import files
from streams.kafka.broker import TansuBroker
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.config import GUARANTEES, Topics
from streams.kafka.envelope import StateKeys
from streams.kafka.messages import encode_example
from streams.kafka.server import ModelServer

IDLE = 1.0
KEYS = StateKeys([b"a benchmark's state key, signing as served"])


def offline(model, examples) -> float:
    """Examples/s of the offline predict + learn loop."""
    model = copy.deepcopy(model)
    started = time.perf_counter()
    for x, y in examples:
        model.predict_proba_one(x)
        model.predict_one(x)
        model.learn_one(x, y)
    return len(examples) / (time.perf_counter() - started)


class Span:
    """How long a `ModelServer` served (see the module docstring), measured around its `_runs`
    (the records of a poll, run by run) and its `commit`."""

    def __init__(self, server: ModelServer):
        self.first: float | None = None  # when its first run of records came
        self.last = 0.0  # when the loop asked for the run after its last one
        self.late = 0.0  # seconds committing since then
        runs, commit = server._runs, server.commit

        def timed_runs(records):
            for run in runs(records):
                if self.first is None:
                    self.first = time.monotonic()
                yield run
                self.last, self.late = time.monotonic(), 0.0

        def timed_commit(partitions=None):
            started = time.monotonic()
            commit(partitions)
            self.late += time.monotonic() - started

        server._runs, server.commit = timed_runs, timed_commit

    @property
    def seconds(self) -> float:
        return self.end - self.started

    @property
    def started(self) -> float:
        assert self.first is not None, "the server handled no record"
        return self.first

    @property
    def end(self) -> float:
        """When its last commit ended (monotonic time, the same in every process)."""
        return self.last + self.late


def server_for(
    bootstrap_servers: str,
    topic: str,
    model,
    guarantee: str,
    checkpoint_every: int,
    partitions: tuple[int, ...] | None = None,
) -> ModelServer:
    """The benchmark's server of `topic` (of `partitions` only, when given)."""
    return ModelServer(
        model,
        KafkaSettings(bootstrap_servers),
        topics=Topics(topic),
        state_keys=KEYS,
        processing_guarantee=guarantee,
        checkpoint_every=checkpoint_every,
        idle_timeout=IDLE,
        log_seconds=3600,
        partitions=partitions,
    )


def serve(broker, topic: str, model, guarantee: str, checkpoint_every: int, examples) -> tuple:
    """Messages/s of a server on a topic holding `examples`, and its start-up in seconds."""
    server = server_for(broker.bootstrap_servers, topic, model, guarantee, checkpoint_every)
    span = Span(server)
    started = time.monotonic()
    states = server.run()
    learned = sum(s.learned for s in states.values())
    assert learned == len(examples), (guarantee, learned)
    return len(examples) / span.seconds, span.started - started


def serve_share(
    bootstrap_servers, topic, model, guarantee, checkpoint_every, partitions, ready, results
) -> None:
    """One process of `serve_in_processes`: serves `partitions` once every process has
    restored its own (`ready`, a barrier), then puts its span's start and end and the
    examples it learned on `results` (or what failed, as text)."""
    try:
        server = server_for(
            bootstrap_servers, topic, model, guarantee, checkpoint_every, partitions
        )
        step, waiting = server._step, [True]

        def step_together() -> None:
            if waiting and server.ready():  # its partitions restored: wait for the others'
                ready.wait(timeout=60)
                waiting.clear()
            step()

        server._step = step_together
        span = Span(server)
        states = server.run()
        results.put((span.started, span.end, sum(s.learned for s in states.values())))
    except BaseException as error:
        results.put(f"{type(error).__name__}: {error}")
        raise


def serve_in_processes(broker, topic: str, model, guarantee: str, args, examples) -> float:
    """Messages/s of `args.processes` servers, each a static share of the topic's
    `args.partitions` partitions, in processes of their own started together (see the
    module)."""
    processes, checkpoint_every = args.processes, args.checkpoint_every
    context = multiprocessing.get_context("spawn")  # no fork after librdkafka's threads
    ready, results = context.Barrier(processes), context.Queue()
    shares = [tuple(range(i, args.partitions, processes)) for i in range(processes)]
    workers = [
        context.Process(
            target=serve_share,
            args=(
                broker.bootstrap_servers,
                topic,
                model,
                guarantee,
                checkpoint_every,
                share,
                ready,
                results,
            ),
        )
        for share in shares
    ]
    for worker in workers:
        worker.start()
    try:
        spans = [results.get(timeout=300) for _ in workers]
    except queue.Empty:
        raise RuntimeError(f"{guarantee}: a server process did not finish in 300 s") from None
    finally:
        for worker in workers:
            worker.join(timeout=30)
    failed = [s for s in spans if isinstance(s, str)]
    assert not failed, (guarantee, failed)
    learned = sum(n for _, _, n in spans)
    assert learned == len(examples), (guarantee, processes, learned)
    return learned / (max(end for _, end, _ in spans) - min(start for start, _, _ in spans))


def produce(broker, topic: str, examples, start: int = 0) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=5)
    for i, (x, y) in enumerate(examples, start):
        producer.send(topic, key=str(i).encode(), value=encode_example(i, x, y))
    producer.flush()
    producer.close()


def text_model(features: int):
    """A text model (a diagonal `AROW` behind a bag of words, the engine whose changes a
    changelog writes) that has learned `features` random words."""
    rng = random.Random(0)
    model = TextClassifier(AROW(covariance="diagonal"), on="text")
    for i in range(features // 100):
        text = " ".join(f"w{rng.randrange(10**12)}" for _ in range(100))
        model.learn_one({"text": text}, "spam" if i % 2 else "ham")
    return model


def changelog_run(broker, topic, model, args, examples) -> dict:
    """The two runs of `--model-features` on one topic (see the module): what they measured."""
    settings = KafkaSettings(broker.bootstrap_servers)
    create_topics(broker.bootstrap_servers, {topic: args.partitions})
    first = 1000

    def server():
        running = ModelServer(
            model,
            settings,
            topics=Topics(topic),
            state_keys=KEYS,
            checkpoint_every=args.checkpoint_every,
            idle_timeout=IDLE,
            log_seconds=3600,
        )
        commit, durations = running.commit, []

        def timed(partitions=None):
            started = time.perf_counter()
            commit(partitions)
            durations.append(time.perf_counter() - started)

        running.commit = timed
        return running, durations, Span(running)

    produce(broker, topic, examples[:first])
    warm, durations, _ = server()
    warm.run()
    snapshot_seconds = max(durations)
    snapshot_bytes = max(w.since.snapshot_bytes for w in warm.store.written.values())
    produce(broker, topic, examples[first:], first)
    served, _, span = server()
    states = served.run()
    assert sum(s.learned for s in states.values()) == len(examples)
    written = served.store.written.values()
    changes = sum(w.changes for w in written)
    rate = (len(examples) - first) / span.seconds
    per_partition = sum(w.changes_bytes for w in written) / max(1, changes)
    # commits of every partition between two snapshots: the store's rules for this model
    every = min(
        served.config.snapshot_every,
        math.ceil(served.config.snapshot_share * snapshot_bytes / per_partition),
    )
    seconds = every * args.checkpoint_every / rate
    return {
        "rate": rate,
        "steady": every * args.checkpoint_every / (seconds + snapshot_seconds),
        "every": every,
        "commits": changes + sum(w.snapshots for w in written),
        "snapshots": sum(w.snapshots for w in written),
        "bytes per commit": per_partition,
        "weights per commit": sum(w.weights for w in written) / max(1, changes),
        "snapshot bytes": snapshot_bytes,
        "snapshot seconds": snapshot_seconds,
        "restore seconds": max(served.metrics.restore_seconds.values()),
    }


def model_sizes(args, examples) -> None:
    """`--model-features`: the changelog's cost against the model's size."""
    sizes = [int(n) for n in args.model_features.split(",")]
    models = {n: text_model(n) for n in sizes}
    results: dict[int, list] = {n: [] for n in sizes}
    offline_rates: dict[int, list] = {n: [] for n in sizes}
    with TansuBroker() as broker:
        for round_ in range(args.rounds):
            for n in sizes:
                topic = f"sms-{n}-{round_}"
                results[n].append(changelog_run(broker, topic, models[n], args, examples))
                offline_rates[n].append(offline(models[n], examples))
    best = {n: max(runs, key=lambda r: r["rate"]) for n, runs in results.items()}
    best_offline = {n: max(rates) for n, rates in offline_rates.items()}
    empty = best[sizes[0]]["rate"]
    print(
        f"{len(examples):,} SMS messages, a text model (AROW() behind a bag of words) of N "
        f"learned words served exactly-once on {args.partitions} partitions, a commit every "
        f"{args.checkpoint_every:,} messages; the run after the first snapshot, best of "
        f"{args.rounds} interleaved rounds"
    )
    print(
        "| words N | model pickle | messages/s | against N=0 | bytes per commit of changes "
        "| weights per commit | bytes per weight | snapshot | its commit | restore "
        "| snapshot every | with snapshots | offline against N=0 |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        r = best[n]
        size = len(pickle.dumps(models[n], protocol=pickle.HIGHEST_PROTOCOL))
        print(
            f"| {n:,} | {size / 1e6:.1f} MB | {r['rate']:,.0f} | {r['rate'] / empty:.2f}x "
            f"| {r['bytes per commit']:,.0f} | {r['weights per commit']:,.0f} "
            f"| {r['bytes per commit'] / max(1.0, r['weights per commit']):.1f} "
            f"| {r['snapshot bytes'] / 1e6:.1f} MB | {r['snapshot seconds']:.2f} s "
            f"| {r['restore seconds']:.2f} s | {r['every']:,} commits "
            f"| {r['steady']:,.0f} ({r['steady'] / best[sizes[0]]['steady']:.2f}x) "
            f"| {best_offline[n] / best_offline[sizes[0]]:.2f}x |"
        )


def write_rates(path: str, best: dict) -> None:
    """The table of `best` (messages/s of offline, then of each server, by name) at `path`."""
    offline_rate = best["offline"]
    rows = [["offline predict + learn (no Kafka)", f"{offline_rate:,.0f}", "1.00x"]]
    for name, rate in best.items():
        if name != "offline":
            rows.append([f"`serve`, {name}", f"{rate:,.0f}", f"{rate / offline_rate:.2f}x"])
    markdown.write(path, markdown.table(["", "messages/s", "against offline"], rows))


def servers(args) -> dict[str, tuple[str, int]]:
    """The servers measured, by name: their guarantee and processes. Each guarantee in one
    process, then in `--processes` processes."""
    names = {guarantee: (guarantee, 1) for guarantee in GUARANTEES}
    if args.processes > 1:
        for guarantee in GUARANTEES:
            names[f"{guarantee}, {args.processes} processes"] = (guarantee, args.processes)
    return names


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--checkpoint-every", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="also serve each guarantee in N processes, a share of the partitions each",
    )
    parser.add_argument(
        "--model-features",
        metavar="N,N,...",
        help="measure the state changelog against models of these many words (see above)",
    )
    parser.add_argument("--write", metavar="PATH", help="also write the rates as markdown")
    args = parser.parse_args(argv)
    if not 1 <= args.processes <= args.partitions:
        parser.error("--processes: from 1 to --partitions")
    examples = list(files.sms_spam()) * args.repeat
    if args.model_features:
        model_sizes(args, examples)
        return
    model = build_model("AROW()", text=True)
    names = servers(args)
    rates: dict[str, list] = {"offline": [], **{name: [] for name in names}}
    startups: dict[str, list] = {g: [] for g in GUARANTEES}
    with TansuBroker() as broker:
        for round_ in range(args.rounds):
            rates["offline"].append(offline(model, examples))
            for number, (name, (guarantee, processes)) in enumerate(names.items()):
                topic = f"sms-{number}-{round_}"
                create_topics(broker.bootstrap_servers, {topic: args.partitions})
                produce(broker, topic, examples)
                if processes == 1:
                    rate, startup = serve(
                        broker, topic, model, guarantee, args.checkpoint_every, examples
                    )
                    startups[guarantee].append(startup)
                else:
                    rate = serve_in_processes(broker, topic, model, guarantee, args, examples)
                rates[name].append(rate)
    best = {name: max(values) for name, values in rates.items()}
    print(
        f"{len(examples):,} SMS messages, AROW() behind BagOfWords(on='text'), "
        f"{args.partitions} partitions, commit every {args.checkpoint_every:,} messages, "
        f"best of {args.rounds} interleaved rounds"
    )
    width = max(len(name) for name in names) + 8
    print(f"{'offline predict + learn:':<{width}}{best['offline']:8,.0f} examples/s")
    for name in names:
        startup = f"; start-up {min(startups[name]):.2f} s" if name in startups else ""
        print(
            f"{f'serve, {name}:':<{width}}{best[name]:8,.0f} messages/s "
            f"({best[name] / best['offline']:.2f} x offline{startup})"
        )
    if args.write is not None:
        write_rates(args.write, best)


if __name__ == "__main__":
    main()
