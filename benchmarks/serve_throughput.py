"""Throughput of `river-cw serve` (streams.kafka.server): exactly-once against at-least-once, and
against the same model run offline.

Starts a Tansu broker, writes the bundled SMS Spam Collection (5,574 texts) `--repeat` times
over to a topic of `--partitions` partitions (keyed by id), serves it with `AROW()` behind a bag
of words under each processing guarantee (a fresh topic each), and prints messages/s of the
server (Kafka in and out, JSON, predict + learn, a commit of outputs, state and offsets every
`--checkpoint-every` messages) next to the offline predict + learn loop over the same examples
(`predict_proba_one`, `predict_one`, `learn_one`: what the server computes per example).

A server's rate runs from the first message it handles to the return of `run` after its last
commit (its idle wait taken off); its start-up (connecting, fencing the previous owners,
restoring the partitions) is printed apart. The machine is shared and noisy: the contenders are
interleaved over `--rounds` rounds and each one's best round is kept.

    python benchmarks/serve_throughput.py [--repeat 2] [--partitions 2] [--checkpoint-every 1000]
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka import KafkaProducer

from streams.cli.serve import build_model
from streams.io import files
from streams.kafka.broker import TansuBroker
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.config import GUARANTEES, Topics
from streams.kafka.envelope import StateKeys
from streams.kafka.messages import encode_example
from streams.kafka.server import ModelServer

IDLE = 1.0


def offline(model, examples) -> float:
    """Examples/s of the offline predict + learn loop."""
    model = copy.deepcopy(model)
    started = time.perf_counter()
    for x, y in examples:
        model.predict_proba_one(x)
        model.predict_one(x)
        model.learn_one(x, y)
    return len(examples) / (time.perf_counter() - started)


def serve(broker, topic: str, model, guarantee: str, checkpoint_every: int, examples) -> tuple:
    """Messages/s of a server on a topic holding `examples`, and its start-up in seconds."""
    server = ModelServer(
        model,
        KafkaSettings(broker.bootstrap_servers),
        topics=Topics(topic),
        state_keys=StateKeys([b"a benchmark's state key, signing as served"]),
        processing_guarantee=guarantee,
        checkpoint_every=checkpoint_every,
        idle_timeout=IDLE,
        log_seconds=3600,
    )
    started = time.monotonic()
    states = server.run()
    ended = time.monotonic() - IDLE
    learned = sum(s.learned for s in states.values())
    assert learned == len(examples), (guarantee, learned)
    first = server.monitor.first_at
    return len(examples) / (ended - first), first - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--checkpoint-every", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    examples = list(files.sms_spam()) * args.repeat
    model = build_model("AROW()", text=True)
    rates: dict[str, list] = {"offline": [], **{g: [] for g in GUARANTEES}}
    startups: dict[str, list] = {g: [] for g in GUARANTEES}
    with TansuBroker() as broker:
        for round_ in range(args.rounds):
            rates["offline"].append(offline(model, examples))
            for guarantee in GUARANTEES:
                topic = f"sms-{guarantee}-{round_}"
                create_topics(broker.bootstrap_servers, {topic: args.partitions})
                producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=5)
                for i, (x, y) in enumerate(examples):
                    producer.send(topic, key=str(i).encode(), value=encode_example(i, x, y))
                producer.flush()
                producer.close()
                rate, startup = serve(
                    broker, topic, model, guarantee, args.checkpoint_every, examples
                )
                rates[guarantee].append(rate)
                startups[guarantee].append(startup)
    best = {name: max(values) for name, values in rates.items()}
    print(
        f"{len(examples):,} SMS messages, AROW() behind BagOfWords(on='text'), "
        f"{args.partitions} partitions, commit every {args.checkpoint_every:,} messages, "
        f"best of {args.rounds} interleaved rounds"
    )
    print(f"offline predict + learn:        {best['offline']:8,.0f} examples/s")
    for guarantee in GUARANTEES:
        print(
            f"serve, {guarantee + ':':<24}{best[guarantee]:8,.0f} messages/s "
            f"({best[guarantee] / best['offline']:.2f} x offline; start-up "
            f"{min(startups[guarantee]):.2f} s)"
        )


if __name__ == "__main__":
    main()
