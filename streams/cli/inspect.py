"""`river-cw inspect`: show the state `river-cw serve` keeps for a topic's partitions.

Reads the last committed state of each partition from the state topic (`TOPIC.state`) and
prints its model, classes, learned count, prequential accuracy, offsets, pending examples and
labels, dead letters and the largest weights (through the model's public `weights`);
`--export PATH` writes one partition's model in river-cw's versioned state format
(`river_cw.state`: later versions read it), or as a pickle where that format does not describe
the model (a river pipeline), for `serve --init-model` or to use offline. The state's parts are verified with the server's state keys before they are
unpickled (`streams.kafka.state_topic`): give `inspect` the same `--state-key-file`.
"""

from __future__ import annotations

import argparse
import pickle
import sys

from river_cw import state as model_state
from streams.cli.security import (
    add_connection_arguments,
    add_state_key_arguments,
    kafka_settings,
    state_keys,
)
from streams.kafka.client import BrokerUnavailable, TopicError, check_connection, topic_partitions
from streams.kafka.state_topic import StateError, restore, state_topic
from streams.models.specs import classifier_of


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument("--topic", required=True, help="the examples topic `serve` reads")
    parser.add_argument("--state-topic", help="default: TOPIC.state")
    parser.add_argument("--partition", type=int, help="this partition only (default: all)")
    parser.add_argument("--top", type=int, default=10, help="weights shown (default: %(default)s)")
    parser.add_argument(
        "--export",
        metavar="PATH",
        help="write the partition's model here, in river-cw's versioned state format (read it "
        "with river_cw.state.loads) or as a pickle where that format does not describe it",
    )
    parser.add_argument("--connect-timeout-ms", type=int, default=10000)
    add_state_key_arguments(parser)


def top_weights(model, n: int) -> dict:
    """The `n` largest weights by magnitude of the model (its classifier: `streams.models.specs.classifier_of`), per
    class where the model keeps one weight dict per class; {} without public `weights`."""
    model = classifier_of(model)
    weights = getattr(model, "weights", None)
    if not isinstance(weights, dict) or not weights:
        return {}
    if all(isinstance(w, dict) for w in weights.values()):
        return {label: top_weights_of(w, n) for label, w in weights.items()}
    return {None: top_weights_of(weights, n)}


def top_weights_of(weights: dict, n: int) -> list[tuple]:
    return sorted(weights.items(), key=lambda item: -abs(item[1]))[:n]


def describe(state, top: int) -> str:
    """A few lines on a `streams.kafka.learner.PartitionState`."""
    model = state.model
    core = classifier_of(model)
    accuracy = state.accuracy
    positive = getattr(core, "positive_label", None)
    lines = [
        f"partition {state.partition} of {state.topic}: {state.model_spec}",
        f"  classes: {getattr(core, 'classes_', 'n/a')}"
        + ("" if positive is None else f"; positive weights favour {positive!r}"),
        f"  learned {state.learned:,}, predicted {state.predicted:,}, prequential accuracy "
        + ("n/a" if accuracy is None else f"{accuracy:.4f}")
        + f" ({state.scored:,} scored)",
        f"  offsets (next to read): {state.offsets}; batches committed: {state.batches:,}",
        f"  pending: {len(state.pending_examples):,} examples waiting for a label, "
        f"{len(state.pending_labels):,} labels waiting for an example; expired "
        f"{state.expired:,}; dead letters {state.dead_letters:,}",
    ]
    mixing = getattr(state, "mixing", None)
    if mixing is not None:
        published = "published to this round" if mixing.published else "not published yet"
        lines.append(
            f"  mixing: round {mixing.round:,}, {mixing.examples:,} examples in the last mix, "
            f"{published}"
        )
    weights = top_weights(model, top)
    if not weights:
        lines.append("  weights: the model shows no public `weights`")
    for label, items in weights.items():
        shown = ", ".join(f"{feature!r}: {w:+.4g}" for feature, w in items)
        lines.append(f"  top weights{'' if label is None else f' of {label!r}'}: {shown}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        keys = state_keys(args)
        settings = kafka_settings(args, connect_timeout_ms=args.connect_timeout_ms)
    except ValueError as error:
        print(f"river-cw inspect: error: {error}", file=sys.stderr)
        return 2
    topic = args.state_topic or state_topic(args.topic)
    try:
        check_connection(settings)
        partitions = (
            [args.partition] if args.partition is not None else topic_partitions(settings, topic)
        )
        states = [restore(settings, topic, p, keys).state for p in partitions]
    except (BrokerUnavailable, TopicError, StateError) as error:
        print(f"river-cw inspect: error: {error}", file=sys.stderr)
        return 1
    found = [s for s in states if s is not None]
    for p, state in zip(partitions, states):
        print(f"partition {p}: no stored state" if state is None else describe(state, args.top))
    if args.export:
        if len(found) != 1:
            print(
                f"river-cw inspect: error: --export needs exactly one stored partition "
                f"(give --partition), found {len(found)}",
                file=sys.stderr,
            )
            return 1
        model = found[0].model
        try:
            data, kind = model_state.dumps(model), "river-cw's versioned state format"
        except TypeError:
            data, kind = pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL), "a pickle"
        with open(args.export, "wb") as fh:
            fh.write(data)
        print(f"model of partition {found[0].partition} written to {args.export} ({kind})")
    return 0
