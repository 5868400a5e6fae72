"""The ``flink_agents`` ``RunnerContext`` an adapted action receives (spec FA-2, FA-5, FA-6).

Every method drives the reference runtime's own context: durable calls, memory and events are recorded
and replayed exactly as for a ``reference_runtime`` agent.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

from flink_agents.api.configuration import ConfigOption, ReadableConfiguration
from flink_agents.api.events.event import Event as FlinkEvent
from flink_agents.api.memory_object import MemoryObject as FlinkMemoryObject
from flink_agents.api.memory_object import MemoryType
from flink_agents.api.memory_reference import MemoryRef as FlinkMemoryRef
from flink_agents.api.metric_group import Counter, Gauge, Histogram, Meter, MetricGroup
from flink_agents.api.resource import ResourceType
from flink_agents.api.runner_context import RunnerContext as FlinkRunnerContext
from pydantic import PrivateAttr

from ..config import parse_bool
from ..context import RunnerContext
from ..errors import ConfigError, UnsupportedFeatureError
from ..events import Event
from ..limits import safe_repr
from ..memory import MemoryObject, MemoryRef
from .events import check_schema_modules, wrap
from .resources import HOOK, RunResources

#: Resource-map key under which a test supplies a long-term memory fake.
LONG_TERM_MEMORY = "long_term_memory"

#: Told of every ``ToolRequestEvent`` an action sends (in its runtime form), while set: how the local
#: environment's ``get_tool_request_events`` sees them (spec FA-11).
TOOL_REQUESTS: ContextVar[Callable[[Event], None] | None] = ContextVar("flink_agents_tool_requests", default=None)


class Memory(FlinkMemoryObject):
    """A ``flink_agents`` ``MemoryObject`` over the runtime's memory object."""

    _inner: MemoryObject = PrivateAttr()
    _kind: MemoryType = PrivateAttr()

    @classmethod
    def over(cls, inner: MemoryObject, kind: MemoryType) -> Memory:
        memory = cls()
        memory._inner = inner
        memory._kind = kind
        return memory

    def _wrap(self, value: Any) -> Any:
        if isinstance(value, MemoryObject):
            return Memory.over(value, self._kind)
        check_schema_modules(value, f"a {self._kind.value} memory value")
        return value

    def get(self, path_or_ref: str | FlinkMemoryRef | dict[str, Any]) -> Any:
        if isinstance(path_or_ref, dict) and "path" in path_or_ref:
            # A MemoryRef sent in an event arrives as its JSON data; a cluster's memory reads it as a ref.
            path_or_ref = FlinkMemoryRef.model_validate(path_or_ref)
        if isinstance(path_or_ref, FlinkMemoryRef):
            sensory = path_or_ref.memory_type == MemoryType.SENSORY
            return self._wrap(self._inner.get(MemoryRef("sensory" if sensory else "short_term", path_or_ref.path)))
        return self._wrap(self._inner.get(path_or_ref))  # type: ignore[arg-type]  # the runtime refuses a non-path

    def set(self, path: str, value: Any) -> FlinkMemoryRef:
        ref = self._inner.set(path, value)
        return FlinkMemoryRef.create(self._kind, ref.path)

    def new_object(self, path: str, *, overwrite: bool = False) -> Memory:
        return Memory.over(self._inner.new_object(path, overwrite=overwrite), self._kind)

    def is_exist(self, path: str) -> bool:
        return self._inner.is_exist(path)

    def get_field_names(self) -> list[str]:
        return self._inner.get_field_names()

    def get_fields(self) -> dict[str, Any]:
        return self._inner.get_fields()


class Config(ReadableConfiguration):
    """The runner's config with the ``flink_agents`` option defaults."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = values

    def _typed(self, key: str, kind: type, default: Any) -> Any:
        value = self._values.get(key, default)
        return _coerce(value, kind, key)

    def get_int(self, key: str, default: int | None = None) -> int:
        return self._typed(key, int, default)  # type: ignore[no-any-return]

    def get_float(self, key: str, default: float | None = None) -> float:
        return self._typed(key, float, default)  # type: ignore[no-any-return]

    def get_bool(self, key: str, default: bool | None = None) -> bool:
        return self._typed(key, bool, default)  # type: ignore[no-any-return]

    def get_str(self, key: str, default: str | None = None) -> str:
        return self._typed(key, str, default)  # type: ignore[no-any-return]

    def get(self, option: ConfigOption | str) -> Any:
        if isinstance(option, str):
            return self._values.get(option)
        return self._typed(option.get_key(), option.get_type(), option.get_default_value())


def _coerce(value: Any, kind: Any, key: str) -> Any:
    if value is None or (isinstance(value, kind) and not (kind is int and isinstance(value, bool))):
        return value
    if kind is bool:
        return parse_bool(value, key)  # the runtime's one boolean parser (spec CFG-3)
    try:
        if isinstance(kind, type) and issubclass(kind, enum.Enum):
            return kind(value) if not isinstance(value, str) or value not in kind.__members__ else kind[value]
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"config {key!r} must be a {kind.__name__}, got {safe_repr(value)}; fix the value in the runner's config",
            key=key,
            value=value,
            expected=f"a {kind.__name__}",
        ) from None


class _Counter(Counter):
    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int = 1) -> None:
        self.count += n

    def dec(self, n: int = 1) -> None:
        self.count -= n

    def get_count(self) -> int:
        return self.count


class _Meter(Meter):
    def __init__(self) -> None:
        self.events = 0

    def mark(self, n: int = 1) -> None:
        self.events += n

    def get_rate(self) -> float:
        return 0.0  # no wall clock in tests: the count is kept, the rate is not measured


class _Gauge(Gauge):
    def __init__(self) -> None:
        self.value = 0.0

    def update(self, value: float) -> None:
        self.value = value

    def get_value(self) -> float:
        return self.value


class _Histogram(Histogram):
    def __init__(self, window_size: int) -> None:
        self.window_size = window_size
        self.values: list[int] = []

    def update(self, value: int) -> None:
        self.values = [*self.values, value][-self.window_size :]

    def get_mean(self) -> float:
        return sum(self.values) / len(self.values) if self.values else 0.0

    def get_max(self) -> int:
        return max(self.values, default=0)

    def get_min(self) -> int:
        return min(self.values, default=0)


class Metrics(MetricGroup):
    """In-memory metrics: recorded, never exported (no Flink metric system runs in a test)."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str | None], Metrics] = {}
        self.metrics: dict[str, Any] = {}

    def get_sub_group(self, name: str, value: str | None = None) -> Metrics:
        return self.groups.setdefault((name, value), Metrics())

    def _metric(self, name: str, make: Callable[[], Any]) -> Any:
        return self.metrics.setdefault(name, make())

    def get_counter(self, name: str) -> Counter:
        return self._metric(name, _Counter)  # type: ignore[no-any-return]

    def get_meter(self, name: str) -> Meter:
        return self._metric(name, _Meter)  # type: ignore[no-any-return]

    def get_gauge(self, name: str) -> Gauge:
        return self._metric(name, _Gauge)  # type: ignore[no-any-return]

    def get_histogram(self, name: str, window_size: int = 100) -> Histogram:
        return self._metric(name, lambda: _Histogram(window_size))  # type: ignore[no-any-return]


class FlinkContext(FlinkRunnerContext):
    """What an adapted action receives as ``ctx``: a real ``flink_agents`` ``RunnerContext``."""

    def __init__(
        self,
        inner: RunnerContext,
        action_config: Mapping[str, Any] | None,
        resources: RunResources,
        agent_metrics: Metrics,
    ) -> None:
        self._inner = inner
        self._action_config = dict(action_config or {})
        self._resources = resources
        self._agent_metrics = agent_metrics
        self._action_metrics = agent_metrics.get_sub_group("action", inner.action_name)
        self._config = Config(inner.config)

    # -- what the reference context knows as well --------------------------------------------------------
    @property
    def key(self) -> str:
        return self._inner.key

    @property
    def seq(self) -> int:
        return self._inner.seq

    @property
    def action_name(self) -> str:
        return self._inner.action_name

    def send_event(self, event: FlinkEvent | Event) -> None:
        sent: Event = (
            wrap(event, f" sent by action {self.action_name!r} (key={self.key!r}, seq={self.seq})")
            if isinstance(event, FlinkEvent)
            else event
        )
        self._inner.send_event(sent)
        observe = TOOL_REQUESTS.get()
        if observe is not None and sent.type == "_tool_request_event":
            observe(sent)

    @property
    def short_term_memory(self) -> Memory:
        return Memory.over(self._inner.short_term_memory, MemoryType.SHORT_TERM)

    @property
    def sensory_memory(self) -> Memory:
        return Memory.over(self._inner.sensory_memory, MemoryType.SENSORY)

    @property
    def long_term_memory(self) -> Any:
        fake = self._inner.resources.get(LONG_TERM_MEMORY)
        if fake is None:
            raise UnsupportedFeatureError(
                f"long-term memory is not available in-process (it needs a vector store); "
                f"{HOOK.replace('name', repr(LONG_TERM_MEMORY))}"
            )
        return fake

    @property
    def config(self) -> Config:
        return self._config

    @property
    def action_config(self) -> dict[str, Any]:
        return dict(self._action_config)

    def get_action_config_value(self, key: str) -> Any:
        return self._action_config.get(key)

    def get_resource(self, name: str, type: ResourceType, metric_group: MetricGroup | None = None) -> Any:
        resource = self._resources.get_resource(name, type)
        bind = getattr(resource, "set_metric_group", None)
        if callable(bind):
            bind(metric_group or self._action_metrics)
        return resource

    @property
    def agent_metric_group(self) -> Metrics:
        return self._agent_metrics

    @property
    def action_metric_group(self) -> Metrics:
        return self._action_metrics

    # Only ``reconciler`` is reserved, as in flink_agents 0.3.1: every other keyword reaches ``func``.
    def durable_execute(
        self, func: Callable[..., Any], *args: Any, reconciler: Callable[[], Any] | None = None, **kwargs: Any
    ) -> Any:
        return self._inner.durable_call(func, args, kwargs, reconciler=reconciler)

    def durable_execute_async(
        self, func: Callable[..., Any], *args: Any, reconciler: Callable[[], Any] | None = None, **kwargs: Any
    ) -> Any:
        return self._inner.durable_call_async(func, args, kwargs, reconciler=reconciler)

    def close(self) -> None:
        return None
