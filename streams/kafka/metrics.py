"""Prometheus metrics of a server, and its health and readiness, over HTTP (`serve --metrics-port`).

`MetricsServer(server, port, host)` answers `/metrics` (the Prometheus text format), `/health` (200
while the serving loop runs: it went round within `max_poll_interval_ms`, the bound after which
Kafka evicts a member; 503 otherwise) and `/ready` (200 once the member owns partitions and has
restored every one of them; 503 before, and while a rebalance moves them).

Most numbers are read from the partitions' states when scraped, so serving pays nothing for
them; a partition's counters are its totals since it was first served (they move with it to
its new owner). Per owned partition (label `partition`):

=========================================== ===============================================
`river_cw_messages_total`                   records handled (the offset reached), by `topic`
`river_cw_predictions_total`                predictions written
`river_cw_learned_total`                    examples learned
`river_cw_dead_letters_total`               records dead-lettered since this process started,
                                            by `reason` (invalid, predict, learn, too_large)
`river_cw_skipped_updates_total`            pending examples or labels dropped past
                                            --max-pending (their update never made)
`river_cw_prequential_accuracy`             right predictions among the learned (running)
`river_cw_prequential_accuracy_recent`      the same over the last `recent` learned examples
`river_cw_consumer_lag`                     records behind the end of the input topics
`river_cw_restore_seconds`                  how long its last restore took
`river_cw_mixing_rounds_total`              mixing rounds adopted (with --mix; a round
                                            skipped is adopted too: see below)
`river_cw_mixing_staleness_examples`        examples learned since the mix it serves from
=========================================== ===============================================

and for the member: `river_cw_assigned_partitions`, `river_cw_commit_seconds` (a histogram of
the time to commit a partition's batch: state, outputs and offsets), and
`river_cw_rejected_records_total` (by `topic` and `partition`: records of the state or models
topic ignored since this process started because they are malformed or do not verify under the
state keys, `streams.kafka.envelope`; any is a sign of tampering or a wrong key) and
`river_cw_refused_states_total` (by `partition`: restored states refused since this process
started because they had read less of the input than the group's committed offsets, a rollback:
`streams.kafka.takeover`; the partition is not served, and `/ready` answers 503). With --mix,
`river_cw_mixing_rounds_failed_total` counts the rounds this member could not mix since this
process started (`river_cw.combine` refused the contributions: every partition kept its own
model and mixing resumed at the next round; `streams.models.mixing`). Every member computes
each round, so every member counts the same failure: take the maximum over members, not the sum.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["Metrics", "MetricsServer"]

COMMIT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """What the server records as it goes (the rest is read from its states when scraped)."""

    def __init__(self):
        self.registry = CollectorRegistry()
        self.commit_seconds = Histogram(
            "river_cw_commit_seconds",
            "Time to commit a partition's batch (state, outputs, offsets)",
            buckets=COMMIT_BUCKETS,
            registry=self.registry,
        )
        self.dead_letters: dict[tuple[int, str], int] = {}
        self.rejected: dict[tuple[str, int], int] = {}
        self.restore_seconds: dict[int, float] = {}
        self.rounds: dict[int, int] = {}
        self.failed_rounds = 0
        self.refused: dict[int, int] = {}

    def dead_letter(self, partition: int, reason: str) -> None:
        key = (partition, reason)
        self.dead_letters[key] = self.dead_letters.get(key, 0) + 1

    def reject(self, topic: str, partition: int) -> None:
        """A record of the state or models topic was ignored (it does not verify)."""
        key = (topic, partition)
        self.rejected[key] = self.rejected.get(key, 0) + 1

    def refuse(self, partition: int) -> None:
        """A restored state of `partition` was refused: older than the group's offsets."""
        self.refused[partition] = self.refused.get(partition, 0) + 1

    def watch(self, server) -> None:
        """Read the rest from `server` (a `streams.kafka.server.ModelServer`) when scraped."""
        self.registry.register(_Collector(server, self))


# key, kind, name, help of the metrics with a `partition` label only
_PER_PARTITION = [
    ("predictions", CounterMetricFamily, "predictions", "Predictions written"),
    ("learned", CounterMetricFamily, "learned", "Examples learned"),
    ("skipped", CounterMetricFamily, "skipped_updates", "Pending entries dropped past max-pending"),
    ("accuracy", GaugeMetricFamily, "prequential_accuracy", "Right predictions before learning"),
    ("recent", GaugeMetricFamily, "prequential_accuracy_recent", "The same, recent examples"),
    ("lag", GaugeMetricFamily, "consumer_lag", "Records behind the input topics' end"),
    ("restore", GaugeMetricFamily, "restore_seconds", "Duration of the last restore"),
    ("rounds", CounterMetricFamily, "mixing_rounds", "Mixing rounds adopted"),
    ("staleness", GaugeMetricFamily, "mixing_staleness_examples", "Learned since the mix"),
]


class _Collector:
    def __init__(self, server, metrics: Metrics):
        self.server, self.metrics = server, metrics

    def describe(self):
        return []

    def collect(self):
        server, metrics = self.server, self.metrics
        tasks = dict(server.tasks)
        lag = server.lag() or {}
        families = {
            key: kind(f"river_cw_{name}", text, labels=["partition"])
            for key, kind, name, text in _PER_PARTITION
        }
        families["messages"] = CounterMetricFamily(
            "river_cw_messages", "Records handled (offset reached)", labels=["partition", "topic"]
        )
        for p, task in sorted(tasks.items()):
            state, label = task.state, [str(p)]
            for topic, offset in state.offsets.items():
                families["messages"].add_metric([label[0], topic], offset)
            families["predictions"].add_metric(label, state.predicted)
            families["learned"].add_metric(label, state.learned)
            families["skipped"].add_metric(label, state.expired)
            if state.accuracy is not None:
                families["accuracy"].add_metric(label, state.accuracy)
            recent = task.learner.recent_accuracy
            if recent is not None:
                families["recent"].add_metric(label, recent)
            if p in lag:
                families["lag"].add_metric(label, lag[p])
            if p in metrics.restore_seconds:
                families["restore"].add_metric(label, metrics.restore_seconds[p])
            if state.mixing is not None:
                families["rounds"].add_metric(label, metrics.rounds.get(p, 0))
                mixing = state.mixing
                families["staleness"].add_metric(label, mixing.learned - mixing.learned_at_anchor)
        letters = CounterMetricFamily(
            "river_cw_dead_letters", "Records dead-lettered", labels=["partition", "reason"]
        )
        for (p, reason), count in sorted(metrics.dead_letters.items()):
            letters.add_metric([str(p), reason], count)
        rejected = CounterMetricFamily(
            "river_cw_rejected_records",
            "State or models records ignored: malformed or not verified",
            labels=["topic", "partition"],
        )
        for (topic, p), count in sorted(metrics.rejected.items()):
            rejected.add_metric([topic, str(p)], count)
        refused = CounterMetricFamily(
            "river_cw_refused_states",
            "Restored states refused: behind the group's committed offsets",
            labels=["partition"],
        )
        for p, count in sorted(metrics.refused.items()):
            refused.add_metric([str(p)], count)
        assigned = GaugeMetricFamily("river_cw_assigned_partitions", "Partitions owned")
        assigned.add_metric([], len(tasks))
        yield from families.values()
        yield letters
        yield rejected
        yield refused
        yield assigned
        if server.config.mixing is not None:
            yield CounterMetricFamily(
                "river_cw_mixing_rounds_failed",
                "Mixing rounds skipped: the contributions could not be mixed",
                value=metrics.failed_rounds,
            )


class MetricsServer:
    """`/metrics`, `/health` and `/ready` of `server` on `host:port` (port 0: a free one; host
    ``"0.0.0.0"``: every interface, ``"127.0.0.1"``: this machine only), in a daemon thread."""

    def __init__(self, server, port: int, host: str = "0.0.0.0"):
        self.server = server
        server.metrics.watch(server)
        handler = _handler(server)
        self.http = ThreadingHTTPServer((host, port), handler)
        self.http.daemon_threads = True
        self.port = self.http.server_address[1]
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def _handler(server):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            path = self.path.split("?")[0]
            if path == "/metrics":
                self._reply(200, generate_latest(server.metrics.registry), CONTENT_TYPE_LATEST)
            elif path == "/health":
                live = server.live()
                self._reply(200 if live else 503, b"live\n" if live else b"stalled\n")
            elif path == "/ready":
                ready = server.ready()
                self._reply(200 if ready else 503, b"ready\n" if ready else b"not ready\n")
            else:
                self._reply(404, b"/metrics, /health or /ready\n")

        def _reply(self, status: int, body: bytes, content_type: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):  # scrapes are not events
            return None

    return Handler
