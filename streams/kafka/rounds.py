"""A member's side of mixing over Kafka: the models topic read, rounds mixed and adopted.

The protocol is `streams.models.mixing` (broker-free); this coordinator runs it for the
partitions a server owns. It reads every contribution of the models topic
(`streams.kafka.models_topic`), keeps the rounds (`Rounds`), tells when a partition should
publish (`due`) or wait for its round (`waits`: bounded staleness), writes a contribution into
the partition's open transaction (`publish`: the server then commits it with the partition's
state and offsets), and makes partitions adopt complete rounds (`adopt`).

With mixing (`ServeConfig.mixing`, exactly-once only) the group serves one model. Every `every`
examples a partition learned (or after `seconds` when it learned something or others wait for
it), it publishes its changes since the last mix to the models topic, in the same transaction as
its state (which records the publication, its anchor and the examples to replay) and its
consumed offsets: after any crash a contribution is committed exactly when the state that says
so is, so no example's evidence is lost or counted twice. Once a round has every partition's
contribution, each partition adopts the mix and learns again the examples it learned since
publishing. Partitions do not wait for each other unless `lag` is set (bounded staleness: a
partition that many examples past its publication leaves its records until the round is mixed,
then reads them again from its offsets). A round needs a contribution of every partition of the
topic: some member must serve each.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from streams.kafka import models_topic
from streams.kafka.client import KafkaSettings
from streams.kafka.config import Mixing
from streams.kafka.envelope import StateKeys
from streams.kafka.learner import PartitionState
from streams.kafka.task import PartitionTask
from streams.models.mixing import Mixer, MixState, Rounds

log = logging.getLogger(__name__)

__all__ = ["RoundCoordinator"]


class RoundCoordinator:
    """Mixing for the partitions of one member; `model` is ``B_0`` of partitions that never
    mixed (every partition descends from the served model). Contributions are sealed and
    verified with `keys`; `rejected()` is called for each record of the models topic ignored
    (`streams.kafka.models_topic.Reader`)."""

    def __init__(
        self,
        settings: KafkaSettings,
        mixing: Mixing,
        topic: str,
        partitions: int,
        model,
        keys: StateKeys,
        rejected: Callable[[], None] | None = None,
    ):
        self.mixing = mixing
        self.topic = topic
        self.model = model
        self.keys = keys
        self.rounds = Rounds(partitions, mixing.method)
        self.reader = models_topic.Reader(settings, topic, keys, rejected)
        self.mixers: dict[int, Mixer] = {}  # each owned partition's side of the rounds

    def restored(self, states: list[PartitionState]) -> None:
        """Newly owned partitions: their side of the rounds (a partition that never mixed starts
        from the served model: its learning so far is its first contribution), and the models
        topic read again from where their rounds start."""
        for state in states:
            if state.mixing is None:
                state.mixing = MixState.starting(self.model)
                state.mixing.learned = state.learned
            self.mixers[state.partition] = Mixer(
                state.mixing, self.mixing.every, self.mixing.seconds
            )
        if states:
            self.reader.rewind(
                min(self.mixers[state.partition].state.models_from for state in states)
            )

    def adopt(self, tasks: dict[int, PartitionTask]) -> list[int]:
        """Take new contributions and make every task whose round is complete adopt its mix;
        the partitions that adopted one (their state changed: to be committed)."""
        for contribution, offset in self.reader.poll(0):
            self.rounds.add(contribution, offset)
        adopted, now = [], time.monotonic()
        for p, task in tasks.items():
            mixing = task.state.mixing
            mix = self.rounds.mix(mixing.round, mixing) if mixing.published else None
            if mix is None:
                continue
            task.state.model = self.mixers[p].adopt(task.state.model, mix)
            task.dirty, task.mixed_at = True, now
            adopted.append(p)
            if mix.model is None:  # skipped (`streams.models.mixing`)
                log.info("partition %d: round %d skipped, it keeps its own model", p, mix.round)
            else:
                log.info(
                    "partition %d: mixed round %d (%d examples in the mix)",
                    p,
                    mix.round,
                    mix.examples,
                )
        if tasks:
            self.rounds.forget(min(task.state.mixing.round for task in tasks.values()))
        return adopted

    def waits(self, task: PartitionTask) -> bool:
        """Whether the task is `lag` examples past its unmixed publication: its records are left,
        to be read again from its offsets once its round is mixed. (Not the consumer's `pause`:
        resumed partitions were seen to get no records from the test broker again.)"""
        if not task.paused:
            task.paused = self.mixers[task.partition].ahead(self.mixing.lag)
        return task.paused

    def due(self, task: PartitionTask, now: float) -> bool:
        """Whether the task should publish its contribution now."""
        waiting = self.rounds.waiting(task.state.mixing.round)
        return self.mixers[task.partition].due(now - task.mixed_at, waiting)

    def publish(self, task: PartitionTask) -> None:
        """Write the task's contribution into its open transaction (commit it next: one
        transaction with the state that records the publication, see `streams.models.mixing`)."""
        contribution = self.mixers[task.partition].publish(task.state.model, task.partition)
        task.outputs.begin()
        models_topic.write(task.outputs, self.topic, contribution, self.keys)
        task.dirty, task.mixed_at = True, time.monotonic()

    def close(self) -> None:
        self.reader.close()
