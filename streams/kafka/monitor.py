"""What a server tells a person: the progress line every `log_seconds`, and what needs a look.

`Monitor.progress` logs messages per second, owned partitions, learned examples, prequential
accuracy, pending examples and labels, dead letters, expired entries and the lag; it warns once
per new count when labels have waited for their example too long (keyed differently from their
examples?), and once when a group member has had no partition for a session timeout (more
members than partitions, or a group the broker does not rebalance). `tick` also measures the
lag, once a second: the consumer is the serving loop's, and `ModelServer.lag` reads `lag` here.
"""

from __future__ import annotations

import logging
import time

from streams.kafka.config import ServeConfig
from streams.kafka.source import KafkaSource
from streams.kafka.task import PartitionTask

log = logging.getLogger(__name__)

__all__ = ["Monitor"]


class Monitor:
    """The progress line and its warnings; `tick` logs when `log_seconds` have passed."""

    def __init__(self, config: ServeConfig, session_timeout_ms: int = 6000):
        self.config = config
        self.session_timeout_ms = session_timeout_ms
        self._unassigned_since: float | None = None
        self._warned = False
        self.consumed = 0
        self.started = time.monotonic()
        self.first_at: float | None = None  # when the first message was handled
        self._last = (0, self.started)
        self.lag: dict[int, int] | None = None  # per owned partition, measured every second
        self._lag_at = 0.0

    def handled(self, count: int) -> None:
        """`count` more messages handled."""
        if self.first_at is None:
            self.first_at = time.monotonic()
        self.consumed += count

    def tick(self, tasks: dict[int, PartitionTask], source: KafkaSource) -> None:
        """Measure the lag (every second), log the progress line when due, and check the
        member has partitions."""
        now = time.monotonic()
        if now - self._lag_at >= 1.0:
            self.lag, self._lag_at = source.lag(), now
        if now - self._last[1] >= self.config.log_seconds:
            self.progress(
                tasks, _total(self.lag), self.consumed - self._last[0], now - self._last[1]
            )
            self._last = (self.consumed, now)
        self._check_assignment(source, now)

    def done(self, tasks: dict[int, PartitionTask], lag: dict | None) -> None:
        """The last progress line: the messages since the first one."""
        since = self.started if self.first_at is None else self.first_at
        self.progress(tasks, _total(lag), self.consumed, time.monotonic() - since, final=True)

    def _check_assignment(self, source: KafkaSource, now: float) -> None:
        """Warn once when a member has had no partition for longer than a session timeout."""
        if source.group_id is None or source.partitions:
            self._unassigned_since, self._warned = None, False
            return
        if self._unassigned_since is None:
            self._unassigned_since = now
            return
        waited = now - self._unassigned_since
        if self._warned or waited * 1000 < self.session_timeout_ms:
            return
        self._warned = True
        log.warning(
            "no partition assigned for %.0f s in group %r: it may have more members than %s "
            "has partitions (%d; the others wait as standbys: fine), or the broker has not "
            "rebalanced the group. The demo broker (Tansu 0.6) keeps a group whose leader left "
            "while it was forming without an assignment for good: restart the broker or serve "
            "with another --group-id (a member stopped within its first seconds no longer "
            "leaves that way)",
            waited,
            source.group_id,
            source.topics[0],
            source.partition_count,
        )

    def progress(
        self,
        tasks: dict[int, PartitionTask],
        lag: int | None,
        consumed: int,
        seconds: float,
        final: bool = False,
    ) -> None:
        states = [task.state for task in tasks.values()]
        scored = sum(state.scored for state in states)
        correct = sum(state.correct for state in states)
        log.info(
            "%s%d messages in %.1f s (%.0f/s); partitions %s: learned %d, prequential accuracy "
            "%s, pending examples %d, labels waiting %d, dead letters %d, expired %d; lag %s",
            "done: " if final else "",
            consumed,
            seconds,
            consumed / max(seconds, 1e-9),
            sorted(tasks),
            sum(state.learned for state in states),
            f"{correct / scored:.4f}" if scored else "n/a",
            sum(len(state.pending_examples) for state in states),
            sum(len(state.pending_labels) for state in states),
            sum(state.dead_letters for state in states),
            sum(state.expired for state in states),
            "unknown" if lag is None else lag,
        )
        after = self.config.stale_label_after
        for p, task in sorted(tasks.items()):
            stale = task.learner.stale_labels(after)
            if stale > task.stale_reported:
                log.warning(
                    "partition %d: %d labels have waited for their example while %d or more "
                    "examples came; are labels keyed by the same id as their examples (same "
                    "partition)?",
                    p,
                    stale,
                    after,
                )
            task.stale_reported = stale


def _total(lag: dict[int, int] | None) -> int | None:
    return None if lag is None else sum(lag.values())
