"""Throughput of `river-cw serve` (streams.kafka.server): exactly-once against at-least-once, and
against the same model run offline.

Starts a Tansu broker, writes the bundled SMS Spam Collection (5,574 texts) `--repeat` times
over to a topic of `--partitions` partitions (keyed by id), serves it with `AROW()` behind a bag
of words under each processing guarantee (a fresh topic each), and prints messages/s of the
server (Kafka in and out, JSON, predict + learn, a commit of outputs, state and offsets every
`--checkpoint-every` messages) next to the offline predict + learn loop over the same examples.

    python benchmarks/serve_throughput.py [--repeat 2] [--partitions 2] [--checkpoint-every 1000]
"""

from __future__ import annotations

import argparse
import copy
import time

from kafka import KafkaProducer

from streams.cli.serve import build_model
from streams.io import files
from streams.kafka.broker import TansuBroker
from streams.kafka.client import KafkaSettings, create_topics
from streams.kafka.config import GUARANTEES, Topics
from streams.kafka.messages import encode_example
from streams.kafka.server import ModelServer


def serve(broker, topic: str, model, guarantee: str, checkpoint_every: int) -> tuple[float, int]:
    """Seconds to serve the topic (the final idle wait excluded) and examples learned."""
    server = ModelServer(
        model,
        KafkaSettings(broker.bootstrap_servers),
        topics=Topics(topic),
        processing_guarantee=guarantee,
        checkpoint_every=checkpoint_every,
        idle_timeout=1.0,
        log_seconds=3600,
    )
    started = time.perf_counter()
    states = server.run()
    return time.perf_counter() - started - 1.0, sum(s.learned for s in states.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--checkpoint-every", type=int, default=1000)
    args = parser.parse_args()
    examples = list(files.sms_spam()) * args.repeat
    model = build_model("AROW()", text=True)

    started = time.perf_counter()
    offline = copy.deepcopy(model)
    for x, y in examples:
        offline.predict_proba_one(x)
        offline.predict_one(x)
        offline.learn_one(x, y)
    offline_rate = len(examples) / (time.perf_counter() - started)

    rates = {}
    with TansuBroker() as broker:
        for guarantee in GUARANTEES:
            topic = f"sms-{guarantee}"
            create_topics(broker.bootstrap_servers, {topic: args.partitions})
            producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=5)
            for i, (x, y) in enumerate(examples):
                producer.send(topic, key=str(i).encode(), value=encode_example(i, x, y))
            producer.flush()
            producer.close()
            seconds, learned = serve(broker, topic, model, guarantee, args.checkpoint_every)
            assert learned == len(examples), (guarantee, learned)
            rates[guarantee] = len(examples) / seconds
    print(
        f"{len(examples):,} SMS messages, AROW() behind BagOfWords(on='text'), "
        f"{args.partitions} partitions, commit every {args.checkpoint_every:,} messages"
    )
    print(f"offline predict + learn:        {offline_rate:8,.0f} examples/s")
    for guarantee, rate in rates.items():
        print(
            f"serve, {guarantee + ':':<24}{rate:8,.0f} messages/s "
            f"({rate / offline_rate:.2f} x offline)"
        )
    ratio = rates["exactly-once"] / rates["at-least-once"]
    print(f"exactly-once / at-least-once: {ratio:.2f}")


if __name__ == "__main__":
    main()
