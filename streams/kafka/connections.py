"""The Kafka clients a server holds while it runs, opened together and closed in order.

`ModelServer.run` opens them (creating the state topic, and the models topic with mixing, if
needed) and closes them when it returns: the consumer first, so that the group rebalances, then
the partitions' own producers, then the shared ones. Each partition's transactional producer
belongs to its task (`streams.kafka.task`), not here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from streams.kafka import state_topic
from streams.kafka.client import KafkaSettings, create_topics, topic_replication
from streams.kafka.committed import READS, committed_reads
from streams.kafka.config import ServeConfig
from streams.kafka.outputs import Outputs
from streams.kafka.rounds import RoundCoordinator
from streams.kafka.source import KafkaSource
from streams.kafka.task import PartitionTask

__all__ = ["Clients"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Clients:
    """The consumer of the input topics, the producer all partitions share (at-least-once
    only) and the mixing rounds (with mixing only)."""

    source: KafkaSource
    shared: Outputs | None
    rounds: RoundCoordinator | None

    @classmethod
    def open(
        cls, settings: KafkaSettings, config: ServeConfig, model, rejected: Callable[[], None]
    ) -> Clients:
        """Connect, creating the state topic (and the models topic, with mixing) if needed;
        `rejected()` is called for each record of the models topic ignored."""
        topics = config.topics
        source = KafkaSource(
            settings,
            topics.inputs,
            group_id=config.group_id,
            partitions=config.partitions,
            offsets_group=config.offsets_group,
        )
        shared = rounds = None
        try:
            count = source.partition_count
            replicas = config.replication_factor
            create_topics(
                settings,
                {topics.state: count},
                config.topic_config(state_topic.TOPIC_CONFIG),
                replicas,
            )
            _warn_if_unreplicated(settings, topics.state)
            log.info("committed reads: %s", READS[committed_reads(settings)])
            if not config.exactly_once:
                shared = Outputs(settings)
            if config.mixing is not None:
                create_topics(settings, {topics.models: 1}, config.topic_config(), replicas)
                rounds = RoundCoordinator(
                    settings,
                    config.mixing,
                    topics.models,
                    count,
                    model,
                    config.state_keys,
                    rejected=rejected,
                )
        except BaseException:
            cls(source, shared, rounds).close()
            raise
        return cls(source, shared, rounds)

    def close(self, tasks: Iterable[PartitionTask] = ()) -> None:
        """Close the consumer, then the `tasks`' producers, then the shared clients."""
        self.source.close()
        for task in tasks:
            task.close()
        if self.shared is not None:
            self.shared.close()
        if self.rounds is not None:
            self.rounds.close()


def _warn_if_unreplicated(settings: KafkaSettings, topic: str) -> None:
    """Warn when the state topic has a partition on one replica of a cluster of several
    brokers: losing that broker loses the partition's model."""
    replicas, brokers = topic_replication(settings, topic)
    if replicas == 1 and brokers > 1:
        log.warning(
            "the state topic %r keeps its partitions on one replica of a cluster of %d "
            "brokers: losing that broker loses their models (add replicas with Kafka's partition reassignment)",
            topic,
            brokers,
        )
