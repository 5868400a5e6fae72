"""The plugin sweeps an agent on the Kafka store in Flink Agents' topic format (PLG-1, WIRE-8)."""

from __future__ import annotations

import pytest

from tests.plugin.test_plugin import project

pytest_plugins = ["pytester"]


def test_sweep_on_the_flink_agents_kafka_format(pytester: pytest.Pytester, tansu: str) -> None:
    """PLG-1, WIRE-8: --durable-store 'kafka://…?format=flink-agents' runs the whole sweep, one topic per
    store, and a crash at every fault point recovers from the Flink Agents records."""
    project(pytester, 'ctx.durable_execute(notify, "refund sent")')
    url = f"kafka://{tansu}/sweep?format=flink-agents"
    result = pytester.runpytest_subprocess("--durable-store", url)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"durable: store {url}, seed *", "durable: * fault points swept, * crashes injected"])


def test_sweep_on_the_flink_agents_kafka_format_catches_a_repeated_effect(
    pytester: pytest.Pytester, tansu: str
) -> None:
    """PLG-1: on the same store, an effect outside durable calls is caught (the sweep really recovers from
    the topic, it does not pass vacuously)."""
    project(pytester, 'ctx.send_event(OutputEvent(notify("refund sent")))')
    result = pytester.runpytest_subprocess("--durable-store", f"kafka://{tansu}/sweep?format=flink-agents")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*REC-6: outputs differ after a crash at *"])
