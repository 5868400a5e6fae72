"""What a store holds, decoded and never written to (spec INS-1..INS-8): the reading half of ``durable
inspect`` (the command renders what this returns: ``pytest_durable.cli.inspect``).

For each state (business key, sequence number, action): completed or not, the triggering event, every call
record (index, function id, args digest, status, the decoded result or an exception summary), memory updates
and output events. Result payloads are decoded with the restricted loader only (plain data and already
imported exception classes; nothing from the store is imported or run). A record that cannot be decoded is
shown with its location and the reason, never a traceback.

Stores: ``sqlite:PATH`` (opened read-only), ``redis://HOST:PORT/DB`` (namespace ``--namespace``, default
``durable``), ``kafka://HOST:PORT/TOPIC`` in either format (``?format=flink-agents``; replays the whole topic with
a group-less consumer, creates nothing), and any registered scheme whose ``StoreScheme`` has ``inspect``.
``memory:`` lives inside one process and cannot be inspected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reference_runtime.codecs import CloudpickleCodec, JavaStyleCodec
from reference_runtime.errors import CorruptRecordError, DurableError, Location, PayloadDecodeError
from reference_runtime.events import Event
from reference_runtime.records import ActionState, CallResult

if TYPE_CHECKING:
    from reference_runtime.stores.scheme import StoreScheme

#: The longest result preview ``durable inspect`` shows, in characters.
PREVIEW = 200


@dataclass
class CallView:
    """One call record as ``durable inspect`` shows it: ``result`` and ``exception`` are previews decoded by
    the restricted loader, ``decode_error`` says why a payload could not be decoded."""

    index: int
    function_id: str
    args_digest: str
    status: str
    #: ``"legacy"`` when the record has no status (written before status existed).
    status_written: str | None
    result: str | None = None
    exception: str | None = None
    decode_error: str | None = None


@dataclass
class StateView:
    """One action state as ``durable inspect`` shows it (events and memory as JSON data); ``error`` says why
    a record could not be read, the other fields then hold what could."""

    key: str | None
    seq: int | None
    action: str | None
    state_key: str
    completed: bool | None = None
    format: str | None = None
    task_event: dict[str, Any] | None = None
    calls: list[CallView] = field(default_factory=list)
    short_term_memory: list[dict[str, Any]] = field(default_factory=list)
    sensory_memory: list[dict[str, Any]] = field(default_factory=list)
    output_events: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    #: For a Flink Agents topic: whether the engine version owning it reads this record (INS-8): ``owner``,
    #: ``how``, ``topic``, ``readable``, ``readers``, ``reason``; set by the store's reader.
    engine: dict[str, Any] | None = None


class InspectError(DurableError):
    """The store cannot be inspected (bad URL, missing file or topic, unreachable server)."""


# -- decoding ---------------------------------------------------------------------------------------------


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"


def _decode_payload(data: bytes, exception: bool) -> Any:
    """The restricted cloudpickle loader for Python payloads, JSON for Java ones; never trusted loading."""
    if data[:1] == b"\x80" or data[:4] == b"DHM1":
        codec: CloudpickleCodec | JavaStyleCodec = CloudpickleCodec()
        if data[:4] == b"DHM1":
            raise PayloadDecodeError("payload is HMAC-signed; its key is not available to inspect")
    else:
        codec = JavaStyleCodec()
    return codec.decode_exception(data) if exception else codec.decode_result(data)


def call_view(index: int, call: CallResult, location: Location) -> CallView:
    view = CallView(
        index,
        call.function_id,
        call.args_digest,
        call.effective_status.value,
        "legacy" if call.status is None else call.status.value,
    )
    try:
        if call.exception_payload is not None:
            exc = _decode_payload(call.exception_payload, exception=True)
            view.exception = f"{type(exc).__name__}: {exc}"
        elif call.result_payload is not None:
            view.result = _preview(_decode_payload(call.result_payload, exception=False))
    except PayloadDecodeError as exc:
        view.decode_error = f"{exc.reason} [{Location(location.key, location.seq, location.action, index)}]"
    return view


def _event(event: Event) -> dict[str, Any]:
    return {"type": event.type, "id": None if event.id is None else str(event.id), "attributes": event.attributes}


def _updates(updates: list[Any]) -> list[dict[str, Any]]:
    out = []
    for u in updates:
        item: dict[str, Any] = {"path": u.path, "value": u.value}
        if u.object_creation:
            item["new_object"] = True
        out.append(item)
    return out


def state_view(view: StateView, decode: Callable[[], ActionState]) -> StateView:
    """Fill ``view`` from ``decode()``; a decode failure becomes ``view.error`` with its location."""
    location = Location(view.key, view.seq, view.action)
    try:
        state = decode()
    except CorruptRecordError as exc:
        view.error = str(exc)
        return view
    view.completed = state.completed
    view.task_event = None if state.task_event is None else _event(state.task_event)
    view.calls = [call_view(i, c, location) for i, c in enumerate(state.call_results)]
    view.short_term_memory = _updates(state.short_term_memory_updates)
    view.sensory_memory = _updates(state.sensory_memory_updates)
    view.output_events = [_event(e) for e in state.output_events]
    return view


# -- stores -----------------------------------------------------------------------------------------------


def _decoded(
    decode: Callable[[], tuple[ActionState, str]], scheme: StoreScheme, view: StateView
) -> tuple[ActionState, str]:
    """A third-party scheme's ``decode()``: whatever it raises or returns other than ``(ActionState, format
    name)`` makes this one record unreadable, reported on its line like any corrupt record (INS-4, INS-7)."""
    where = Location(view.key, view.seq, view.action)
    try:
        result = decode()
    except CorruptRecordError:
        raise
    except Exception as exc:
        raise CorruptRecordError(
            f"decode() of scheme {scheme.name!r} ({scheme.origin}) raised {type(exc).__name__}: {exc}", where
        ) from None
    if not (
        isinstance(result, tuple)
        and len(result) == 2
        and isinstance(result[0], ActionState)
        and isinstance(result[1], str)
    ):
        raise CorruptRecordError(
            f"decode() of scheme {scheme.name!r} ({scheme.origin}) returned {type(result).__name__}, not "
            "(ActionState, format name)",
            where,
        )
    return result


def inspect_store(
    url: str, *, key: str | None = None, namespace: str = "durable", timeout: float = 10.0
) -> list[StateView]:
    """Every state ``url`` holds (only business key ``key``'s when given), sorted by key, seq and action.
    The store is read by its scheme's ``inspect`` (spec STORE-19): built-in or registered, the same way."""
    from reference_runtime.stores import parse_store_url
    from reference_runtime.stores.registry import BUILT_IN

    parsed = parse_store_url(url, needs=("inspect", "client"))
    scheme = parsed.store_scheme
    assert scheme is not None and scheme.inspect is not None  # given by parse_store_url, or refused there
    third_party = scheme.origin != BUILT_IN
    views = []
    try:
        for sk, k, seq, action, decode in scheme.inspect(parsed, timeout, namespace):
            view = StateView(k, seq, action, sk)
            engine = getattr(decode, "engine", None)
            view.engine = engine if isinstance(engine, dict) else None

            def state(decode: Callable[[], tuple[ActionState, str]] = decode, view: StateView = view) -> ActionState:
                decoded, view.format = _decoded(decode, scheme, view) if third_party else decode()
                return decoded

            views.append(state_view(view, state))
    except DurableError:
        raise
    except Exception as exc:
        if not third_party:
            raise  # a bug of the built-in readers shows its traceback
        # A third-party reader is code we do not control: its failure is bad input, one line (INS-7).
        raise InspectError(
            f"store URL {url!r}: the reader of scheme {scheme.name!r} ({scheme.origin}) failed: "
            f"{type(exc).__name__}: {exc} (a store plugin's inspect should raise StoreError for a store "
            "it cannot read)"
        ) from None
    if key is not None:
        views = [v for v in views if v.key == key]
    return sorted(views, key=lambda v: (v.key is None, v.key or "", v.seq or 0, v.action or "", v.state_key))
