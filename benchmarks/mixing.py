"""Accuracy against the mixing period N (JMLR 2012 Figure 6 in spirit): P partitions of a stream
mixed every N examples per partition by the KL and L2 delta rules, next to one model learning the
whole stream and to isolated per-partition models.

Offline, with `streams.evaluate.sharded` (the protocol `river-cw serve --mix` runs); with
``--broker``, also served by `river-cw serve` members in one consumer group on a local Tansu
broker, the prequential accuracy of the committed predictions. Prints markdown tables; writes a
PNG and beside it (same name, ``.json``) the offline numbers it draws, which
tests/project/test_docs_generated.py recomputes for one N.

    python benchmarks/mixing.py [docs/mixing.png] [--data FILE] [--every 10 25 ...] [--broker]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import threading
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from streams.cli.serve import build_model
from streams.evaluate.sharded import evaluate_mixing, shard_name
from streams.io.files import sms_spam

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
METHODS = ("kl", "l2")


def load(path: str | None, seed: int) -> tuple[list, str]:
    """(x, y) pairs: the bundled SMS spam in its order, or a shared JSON-lines file shuffled."""
    if path is None:
        return list(sms_spam()), "SMS Spam Collection (bundled)"
    with gzip.open(DATA / path if not Path(path).exists() else path, "rt") as fh:
        rows = [json.loads(line) for line in fh]
    stream = [({"text": r["text"]} if "text" in r else r["x"], r["label"]) for r in rows]
    random.Random(seed).shuffle(stream)
    return stream, f"{Path(path).name}, shuffled (seed {seed})"


def offline(spec: str, stream: list, shards: int, every: list[int]) -> dict:
    """Accuracy by model name, one pass of progressive validation."""
    text = isinstance(stream[0][0].get("text"), str)
    result = evaluate_mixing(
        build_model(spec, text=text),
        stream,
        shards=shards,
        mix_every=every,
        methods=(*METHODS, "off"),
    )
    return {r["model"]: r["accuracy"] for r in result.summary}


def served(spec: str, stream: list, shards: int, every: int, method: str, members: int) -> float:
    """Prequential accuracy of the predictions `members` servers commit on a local broker."""
    from kafka import KafkaProducer, TopicPartition

    from streams.kafka.broker import TansuBroker
    from streams.kafka.client import KafkaSettings, create_topics
    from streams.kafka.committed import committed_consumer
    from streams.kafka.config import Mixing, Topics
    from streams.kafka.envelope import StateKeys
    from streams.kafka.messages import encode_example
    from streams.kafka.server import ModelServer

    text = isinstance(stream[0][0].get("text"), str)
    with TansuBroker() as broker:
        bootstrap = broker.bootstrap_servers
        create_topics(bootstrap, {"examples": shards, "examples.predictions": 1})
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        for i, (x, y) in enumerate(stream):
            producer.send(
                "examples", encode_example(i, x, y), key=str(i).encode(), partition=i % shards
            )
        producer.close()
        settings = KafkaSettings(bootstrap, session_timeout_ms=3000, heartbeat_interval_ms=500)
        servers = [
            ModelServer(
                build_model(spec, text=text),
                settings,
                topics=Topics("examples", dead_letters="examples.dead"),
                state_keys=StateKeys([b"a benchmark's state key, signing as served"]),
                group_id="mixing",
                checkpoint_every=200,
                checkpoint_seconds=0.5,
                mixing=None if method == "off" else Mixing(method, every, 0.5, lag=every),
                idle_timeout=6.0,
            )
            for _ in range(members)
        ]
        threads = [threading.Thread(target=server.run) for server in servers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        consumer = committed_consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
        consumer.assign([TopicPartition("examples.predictions", 0)])
        predictions, deadline = {}, time.monotonic() + 60
        while len(predictions) < len(stream) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                for record in records:
                    message = json.loads(record.value)
                    predictions[int(message["id"])] = message["prediction"]
        consumer.close()
    if len(predictions) != len(stream):
        raise SystemExit(f"{len(predictions)} predictions for {len(stream)} examples")
    return sum(predictions[i] == y for i, (_, y) in enumerate(stream)) / len(stream)


def draw(numbers: dict, out: Path) -> None:
    """The figure of the offline numbers: accuracy against N, the two bounds as lines."""
    scores, shards, every = numbers["scores"], numbers["shards"], numbers["every"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for method, marker in zip(METHODS, "os"):
        values = [scores[shard_name(shards, method, n)] for n in every]
        ax.plot(every, values, marker=marker, label=f"{shards} shards, {method.upper()} mixing")
    ax.axhline(scores["one model"], color="black", linestyle="--", label="one model, whole stream")
    ax.axhline(
        scores[shard_name(shards, "off", 0)],
        color="grey",
        linestyle=":",
        label=f"{shards} isolated models",
    )
    shown = [y for line in ax.get_lines() for y in line.get_ydata()]
    pad = 0.08 * (max(shown) - min(shown))
    ax.set_ylim(min(shown) - pad, max(shown) + pad)  # the bounds' lines inside the frame
    ax.set_xscale("log")
    ax.set_xlabel("mix every N examples per shard")
    ax.set_ylabel("prequential accuracy")
    ax.set_title(f"{numbers['model']}\non {numbers['data'].split(',')[0]}", fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default="docs/mixing.png")
    parser.add_argument("--data", help="a shared JSON-lines file (default: bundled SMS spam)")
    # the model docs/guide/mixing.md measures: AROW's diagonal (the default before issue 30)
    parser.add_argument("--model", default='AROW(covariance="diagonal", diagonal="project")')
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--every", type=int, nargs="+", default=[10, 25, 50, 100, 250, 1000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--broker", action="store_true", help="also serve on a local broker")
    parser.add_argument("--served-every", type=int, default=25)
    parser.add_argument("--members", type=int, default=2)
    args = parser.parse_args(argv)
    stream, name = load(args.data, args.seed)
    started = time.perf_counter()
    scores = offline(args.model, stream, args.shards, args.every)
    seconds = time.perf_counter() - started
    numbers = {
        "data": name,
        "examples": len(stream),
        "model": args.model,
        "shards": args.shards,
        "every": args.every,
        "scores": scores,
    }
    print(
        f"{name}: {len(stream):,} examples, {args.model}, {args.shards} shards ({seconds:.0f} s)\n"
    )
    print("| mix every N | " + " | ".join(f"{m.upper()} delta rule" for m in METHODS) + " |")
    print("|---:|" + "---:|" * len(METHODS))
    for n in args.every:
        cells = [f"{scores[shard_name(args.shards, m, n)]:.4f}" for m in METHODS]
        print(f"| {n:,} | " + " | ".join(cells) + " |")
    one, isolated = scores["one model"], scores[shard_name(args.shards, "off", 0)]
    print(f"\none model: {one:.4f}; isolated per-partition models (no mixing): {isolated:.4f}")
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(numbers, indent=1) + "\n", encoding="utf-8")
    draw(numbers, out)
    print(f"wrote {out} and its numbers beside it")

    if args.broker:
        print(
            f"\nServed by {args.members} members of one group, {args.shards} partitions, mixed "
            f"every {args.served_every} (--mix-lag {args.served_every}):\n"
        )
        print("| mixing | prequential accuracy of the served predictions | seconds |")
        print("|---|---:|---:|")
        for method in (*METHODS, "off"):
            started = time.perf_counter()
            accuracy = served(
                args.model, stream, args.shards, args.served_every, method, args.members
            )
            print(f"| {method} | {accuracy:.4f} | {time.perf_counter() - started:.0f} |")


if __name__ == "__main__":
    main()
