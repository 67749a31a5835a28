"""What a server serves and how: its topics (one name each, resolved once), mixing, commits.

>>> from streams.kafka.envelope import StateKeys
>>> topics = Topics("sms", labels="sms.labels")
>>> topics.predictions, topics.dead_letters, topics.state, topics.models
('sms.predictions', 'sms.dead-letters', 'sms.state', 'sms.models')
>>> topics.inputs
('sms', 'sms.labels')
>>> ServeConfig(topics, StateKeys.insecure(), mixing=Mixing("kl", every=100)).offsets_group
'river-cw.sms'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from streams.kafka.envelope import KEY_HINT, StateKeys

__all__ = [
    "COMMITTED_READS",
    "ENVIRONMENT_PREFIX",
    "GUARANTEES",
    "MIXES",
    "Mixing",
    "ServeConfig",
    "Topics",
]

GUARANTEES = ("exactly-once", "at-least-once")
MIXES = ("kl", "l2")
COMMITTED_READS = ("auto", "broker", "client")
"""How records of committed transactions are read back (`streams.kafka.committed`)."""
ENVIRONMENT_PREFIX = "RIVER_CW_KAFKA_"
"""The prefix of the variables that override a client property (`streams.kafka.security`)."""


@dataclass(frozen=True)
class Topics:
    """The topics of one served stream, named after the examples topic unless given.

    Parameters
    ----------
    examples
        The topic of the examples, keyed by their id.
    predictions
        Where the predictions go (default: ``EXAMPLES.predictions``).
    dead_letters
        Where the records that cannot be decoded, predicted or learned go, with the reason
        (default: ``EXAMPLES.dead-letters``).
    labels
        The topic of delayed labels, co-partitioned with the examples (none by default).
    state
        The compacted topic of the partitions' states (`streams.kafka.state_topic`; default:
        ``EXAMPLES.state``).
    models
        The mixing rounds' contributions (`streams.kafka.models_topic`, used only when mixing;
        default: ``EXAMPLES.models``).

    Examples
    --------

    >>> Topics("sms", labels="sms.labels").inputs
    ('sms', 'sms.labels')
    >>> Topics("sms").dead_letters
    'sms.dead-letters'

    """

    examples: str
    predictions: str = ""
    dead_letters: str = ""
    labels: str | None = None
    state: str = ""
    models: str = ""

    def __post_init__(self):
        for name, suffix in (
            ("predictions", "predictions"),
            ("dead_letters", "dead-letters"),
            ("state", "state"),
            ("models", "models"),
        ):
            if not getattr(self, name):
                object.__setattr__(self, name, f"{self.examples}.{suffix}")

    @property
    def inputs(self) -> tuple[str, ...]:
        """The co-partitioned topics the server reads: examples, then labels if any."""
        return (self.examples,) + ((self.labels,) if self.labels else ())


@dataclass(frozen=True)
class Mixing:
    """One model for the whole group (`streams.models.mixing`; ``river-cw serve --mix``).

    Parameters
    ----------
    method
        The combination, ``"kl"`` or ``"l2"`` (see `river_cw.combine`).
    every
        A partition publishes what it learned every `every` examples.
    seconds
        ... or after `seconds` when it learned something or others wait for it (None: never).
    lag
        A partition waits when it is that many examples past an unmixed publication (bounded
        staleness; None: it never waits).

    Examples
    --------

    >>> from streams.kafka.envelope import StateKeys
    >>> mixing = Mixing("kl", every=500)
    >>> config = ServeConfig(Topics("sms"), StateKeys.insecure(), group_id="g", mixing=mixing)
    >>> config.mixing
    Mixing(method='kl', every=500, seconds=10.0, lag=None)

    """

    method: str = "kl"
    every: int = 1000
    seconds: float | None = 10.0
    lag: int | None = None

    def __post_init__(self):
        if self.method not in MIXES:
            raise ValueError(f"mix must be one of {MIXES}, got {self.method!r}")
        if self.every < 1:
            raise ValueError(f"mix every must be >= 1, got {self.every!r}")


@dataclass(frozen=True)
class ServeConfig:
    """What `streams.kafka.server.ModelServer` serves and how.

    The options of ``river-cw serve``, whose ``--help`` says the same at more length.

    Parameters
    ----------
    topics
        The topics served (`Topics`).
    state_keys
        The keys that seal and verify what the server reads back from its state and models
        topics (`streams.kafka.envelope.StateKeys`), or `StateKeys.insecure()` to trust those
        topics' bytes (anyone who can produce to them then runs code in the server).
    group_id
        The consumer group, which shares the partitions among its members; None with
        `partitions`.
    partitions
        Static partitions to serve, without a group (default: all of them).
    processing_guarantee
        ``"exactly-once"`` (outputs, state and offsets committed in one Kafka transaction) or
        ``"at-least-once"`` (outputs sent at once, repeated after a crash).
    checkpoint_every
        Commit a batch every `checkpoint_every` messages ...
    checkpoint_seconds
        ... or every `checkpoint_seconds`.
    checkpoint_dir
        A local cache of the partitions' states (optional: the state topic holds them),
        refreshed at each snapshot.
    snapshot_every
        Each commit writes the state's changes since the previous one; a whole snapshot at
        least every `snapshot_every` commits ...
    snapshot_share
        ... or once the changes since the last snapshot exceed this share of its size
        (`streams.kafka.store`): a restore reads a snapshot and at most that much more.
    max_pending
        Unlabelled examples (and early labels) kept per partition for delayed labels.
    stale_label_after
        Report a label still waiting for its example after that many examples of its
        partition (keyed differently from its example?).
    model_spec
        The model's name in the stored state (default: its repr on one line); a stored state
        with another spec stops the server.
    discard_state
        Start new models from the stored offsets instead of stopping on another `model_spec`.
    restore_timeout
        Seconds allowed to restore a partition's state from the state topic.
    mixing
        One model for the whole group (`Mixing`); None: a model per partition.
    idle_timeout
        Stop after that many seconds without a message (None: run until stopped).
    log_seconds
        The period of the progress line.
    poll_timeout_ms
        How long a poll of the consumer waits for records.
    owner_check_seconds
        With exactly-once, a partition without a commit for that long checks that no newer
        owner has fenced its producer (an empty transaction of its offsets), so that a fenced
        member stops serving within seconds.
    replication_factor
        The replicas of each topic the server creates (the state topic, and the models topic
        when mixing); -1: the broker's default (`default.replication.factor`). With 3 or more,
        those topics also take ``min.insync.replicas=2``: a commit then returns once two
        replicas hold it.

    Examples
    --------

    >>> from streams.kafka.envelope import StateKeys
    >>> keys = StateKeys([b"an operator's key of 32 bytes or more"])
    >>> config = ServeConfig(Topics("sms", labels="sms.labels"), keys, group_id="river-cw")
    >>> config.exactly_once, config.offsets_group
    (True, 'river-cw')

    """

    topics: Topics
    state_keys: StateKeys
    group_id: str | None = None
    partitions: tuple[int, ...] | None = None
    processing_guarantee: str = "exactly-once"
    checkpoint_every: int = 1000
    checkpoint_seconds: float = 5.0
    checkpoint_dir: str | Path | None = None
    snapshot_every: int = 1000
    snapshot_share: float = 1.0
    max_pending: int = 100_000
    stale_label_after: int = 10_000
    model_spec: str | None = None
    discard_state: bool = False
    restore_timeout: float = 120.0
    mixing: Mixing | None = None
    idle_timeout: float | None = None
    log_seconds: float = 10.0
    poll_timeout_ms: int = 200
    owner_check_seconds: float = 2.0
    replication_factor: int = -1

    def __post_init__(self):
        if not isinstance(self.state_keys, StateKeys):
            raise TypeError(
                "state_keys must be StateKeys (StateKeys.from_file(path), or "
                f"StateKeys.insecure() to trust the topics' bytes), got {self.state_keys!r}; "
                + KEY_HINT
            )
        if self.processing_guarantee not in GUARANTEES:
            raise ValueError(
                f"processing_guarantee must be one of {GUARANTEES}, "
                f"got {self.processing_guarantee!r}"
            )
        if self.mixing is not None and not self.exactly_once:
            raise ValueError("mixing needs exactly-once processing (its rounds are transactional)")
        if not (isinstance(self.snapshot_every, int) and self.snapshot_every >= 1):
            raise ValueError(f"snapshot_every must be an integer >= 1, got {self.snapshot_every!r}")
        if not 0.0 <= self.snapshot_share < math.inf:
            raise ValueError(
                f"snapshot_share must be a finite number >= 0, got {self.snapshot_share!r}"
            )
        if not (isinstance(self.replication_factor, int) and self.replication_factor != 0) or (
            self.replication_factor < -1
        ):
            raise ValueError(
                "replication_factor must be -1 (the broker's default) or an integer >= 1, got "
                f"{self.replication_factor!r}"
            )
        if self.partitions is not None:
            object.__setattr__(self, "partitions", tuple(self.partitions))

    @property
    def offsets_group(self) -> str:
        """The consumer group whose offsets the transactions commit."""
        return self.group_id or f"river-cw.{self.topics.examples}"

    def topic_config(self, configs: dict[str, str] | None = None) -> dict[str, str]:
        """`configs` of a topic the server creates, and ``min.insync.replicas=2`` when it is
        created with 3 replicas or more (the broker's own default otherwise).

        >>> from streams.kafka.envelope import StateKeys
        >>> config = ServeConfig(Topics("sms"), StateKeys.insecure(), replication_factor=3)
        >>> config.topic_config({"cleanup.policy": "compact"})
        {'cleanup.policy': 'compact', 'min.insync.replicas': '2'}

        Parameters
        ----------
        configs
            The topic's own configuration.
        """
        durable = {"min.insync.replicas": "2"} if self.replication_factor >= 3 else {}
        return {**(configs or {}), **durable}

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == "exactly-once"

    def checkpoint_path(self, partition: int) -> Path | None:
        """The local cache file of a partition's state (None without `checkpoint_dir`).

        Parameters
        ----------
        partition
            The partition of the examples topic.
        """
        if self.checkpoint_dir is None:
            return None
        return Path(self.checkpoint_dir) / f"{self.topics.examples}-{partition}.ckpt"
