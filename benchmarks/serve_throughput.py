"""Throughput of `river-cw serve` (streams.consumer) against the same model run offline.

Starts a Tansu broker, writes the bundled SMS Spam Collection (5,574 texts) to a one-partition
topic `--repeat` times over, serves it with `AROW()` behind a bag of words, and prints
messages/s of the server (Kafka in and out, JSON, predict + learn, checkpoints every
`--checkpoint-every` messages) next to the offline predict + learn loop over the same examples.

    python benchmarks/serve_throughput.py [--repeat 2] [--checkpoint-every 1000]
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

from kafka import KafkaProducer

from streams import files
from streams.broker import TansuBroker
from streams.consumer import ModelServer
from streams.kafka_io import KafkaSettings, create_topics
from streams.messages import encode_example
from streams.serve_cli import build_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
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

    with TansuBroker() as broker, tempfile.TemporaryDirectory() as directory:
        create_topics(broker.bootstrap_servers, {"sms": 1})
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=5)
        for i, (x, y) in enumerate(examples):
            producer.send("sms", key=str(i).encode(), value=encode_example(i, x, y))
        producer.flush()
        producer.close()
        server = ModelServer(
            model,
            KafkaSettings(broker.bootstrap_servers),
            examples_topic="sms",
            predictions_topic="sms.predictions",
            dead_letter_topic="sms.dead-letters",
            checkpoint_dir=directory,
            checkpoint_every=args.checkpoint_every,
            idle_timeout=1.0,
        )
        started = time.perf_counter()
        state = server.run()[0]
        serve_seconds = time.perf_counter() - started - 1.0  # minus the idle wait at the end
        size = Path(server.checkpoint_path(0)).stat().st_size
    assert state.learned == len(examples)
    print(f"{len(examples):,} SMS messages, AROW() behind BagOfWords(on='text'), 1 partition")
    print(f"offline predict + learn: {offline_rate:,.0f} examples/s")
    print(
        f"river-cw serve:          {len(examples) / serve_seconds:,.0f} messages/s "
        f"(checkpoint every {args.checkpoint_every:,}: {size / 1e6:.2f} MB at the end)"
    )


if __name__ == "__main__":
    main()
