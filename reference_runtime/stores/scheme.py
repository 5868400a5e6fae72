"""What a store scheme is (spec STORE-17): the parsed form of a store URL, :class:`StoreUrl`, and the record a
scheme registers, :class:`StoreScheme`, with the URL helpers the schemes share.

This module is the bottom of the store layer: it imports no store and no client library, so a store module
and the registry can both import it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, parse_qs, urlsplit

from ..errors import StoreUrlError
from .base import ActionStateStore, Capability

if TYPE_CHECKING:
    from ..records import ActionState

#: A scheme name as RFC 3986 spells one; the registry keeps lower-case names.
SCHEME_NAME = re.compile(r"^[a-z][a-z0-9+.-]{0,31}$")
#: ``(state key, business key, seq, action, decode)``: one stored state as ``durable inspect`` reads it;
#: ``decode()`` returns the state and the name of its record format.
InspectedState = tuple[str, "str | None", "int | None", "str | None", "Callable[[], tuple[ActionState, str]]"]
#: Gives a directory the caller owns and removes (for a file-backed store whose URL names no file).
Scratch = Callable[[], Path]


@dataclass(frozen=True)
class StoreUrl:
    """A parsed store URL. ``path`` is the SQLite file (empty: a temporary one) or the Kafka topic;
    ``options`` holds the query options a scheme keeps for itself (a third-party scheme's settings).

    :func:`~reference_runtime.stores.parse_store_url` fills in ``store_scheme``, the registered
    :class:`StoreScheme` the URL names, and with it what the URL can do (open, isolated stores, inspect);
    a scheme's own parser leaves it None."""

    text: str
    scheme: str
    host: str = ""
    port: int = 0
    path: str = ""
    db: int = 0
    partitions: int | None = None
    timeout: float | None = None
    format: str | None = None
    options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), compare=False)
    store_scheme: StoreScheme | None = field(default=None, compare=False, repr=False)

    @property
    def bootstrap(self) -> str:
        """``HOST:PORT`` (an IPv6 literal in brackets), as a client library takes a server address."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class StoreScheme:
    """Everything the store layer knows about one URL scheme (spec STORE-17). Only ``name``, ``usage`` and
    ``open`` are required; a scheme without ``isolated`` can be opened but not used by the pytest plugin or
    ``durable certify``, which need a fresh, empty store per test or check.

    ``parse(text)`` returns a :class:`StoreUrl` or raises :class:`StoreUrlError` quoting ``text`` (the
    default: ``SCHEME:REST`` with ``REST`` as ``path``). ``open(url, timeout)`` opens the store the URL
    names. ``isolated(url, timeout, scratch)`` makes a fresh, empty store on the same storage and returns it
    with a handle (a table prefix, namespace or topic) that ``cleanup(url, handles, timeout)`` deletes;
    ``scratch()`` is a directory the caller owns, for a file-backed store whose URL names no file.
    ``reopen(store)`` returns a new store object over the same data (a process restart) and closes the old.
    ``client``/``extra`` name the module the scheme needs and the extra that installs it; ``server`` means
    the URL has ``host``/``port`` to probe; ``check(url, timeout)`` adds checks of the scheme's own (without
    opening a store if it can). ``inspect(url, timeout, namespace)`` lists what a store holds, read-only,
    for ``durable inspect``. ``capabilities`` is what its stores claim under ``durable certify``.
    ``origin`` says where the record came from, for messages; the registry sets it (``built-in``, the entry
    point and its distribution, or ``registered in this process``).
    """

    name: str
    usage: str
    open: Callable[[StoreUrl, float], ActionStateStore]
    parse: Callable[[str], StoreUrl] | None = None
    isolated: Callable[[StoreUrl, float, Scratch], tuple[ActionStateStore, str]] | None = None
    cleanup: Callable[[StoreUrl, list[str], float], None] | None = None
    reopen: Callable[[ActionStateStore], ActionStateStore] | None = None
    client: str | None = None
    extra: str | None = None
    server: bool = False
    check: Callable[[StoreUrl, float], None] | None = None
    inspect: Callable[[StoreUrl, float, str], Iterable[InspectedState]] | None = None
    capabilities: frozenset[Capability] = frozenset({Capability.CORE})
    origin: str = ""

    def __post_init__(self) -> None:
        if not SCHEME_NAME.match(self.name):
            raise ValueError(
                f"store scheme name {self.name!r}: a lower-case letter, then letters, digits, '+', '-' or '.'"
            )
        caps = frozenset(Capability(c) for c in self.capabilities) | {Capability.CORE}
        if Capability.RESTART in caps and self.reopen is None:
            raise ValueError(f"store scheme {self.name!r} declares {Capability.RESTART.value!r} but has no reopen")
        object.__setattr__(self, "capabilities", caps)

    def parse_url(self, text: str) -> StoreUrl:
        """``text`` parsed by the scheme's own parser (or as ``SCHEME:REST``)."""
        if self.parse is not None:
            return self.parse(text)
        return StoreUrl(text, self.name, path=text.partition(":")[2])


def bad_url(url: str, why: str) -> StoreUrlError:
    """The one shape of a refused URL: it quotes the URL and says what is wrong and what is expected."""
    return StoreUrlError(f"store URL {url!r}: {why}")


def split_server_url(url: str, usage: str) -> tuple[SplitResult, int | None]:
    """``SCHEME://HOST[:PORT]/…`` split and checked the same way for every server scheme: ASCII only, a
    host, no credentials or fragment. Returns the parts and the port (None when absent). A store's own
    ``from_url`` calls its parser directly, so the checks every URL gets are repeated here."""
    if "\x00" in url:
        raise bad_url(url, "contains a NUL character")
    if not url.isascii():
        bad = next(c for c in url if not c.isascii())
        raise bad_url(url, f"character {bad!r} at position {url.index(bad)} is not ASCII; type the URL in ASCII")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise bad_url(url, f"{exc}; expected {usage}") from None
    if parts.username is not None or parts.password is not None or parts.fragment:
        raise bad_url(url, "credentials and fragments are not supported")
    if not parts.hostname or not parts.hostname.strip() or not parts.hostname.isprintable():
        raise bad_url(url, f"no host; expected {usage}")
    if any(c.isspace() for c in parts.hostname):
        raise bad_url(url, f"the host {parts.hostname!r} contains a space or control character")
    return parts, port


def query_options(url: str, query: str, known: tuple[str, ...]) -> dict[str, str]:
    """The ``?name=value&…`` options of ``url``, each given at most once and each in ``known``."""
    try:
        fields = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError as exc:
        raise bad_url(url, f"bad query: {exc}") from None
    values: dict[str, str] = {}
    for name, given in fields.items():
        if name not in known:
            raise bad_url(url, f"unknown option {name!r} (known: {', '.join(known) or 'none'})")
        if len(given) != 1:
            raise bad_url(url, f"{name} given {len(given)} times")
        values[name] = given[0]
    return values
