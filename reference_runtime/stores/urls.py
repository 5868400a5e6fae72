"""The front door to stores: store URLs parsed, checked and opened through the one scheme registry (spec
KSTORE-6, KSTORE-7, STORE-10, STORE-19, STORE-20).

:func:`parse_store_url` is the one parser every entry point uses (``open_store``, the stores' own
``from_url``, the pytest plugin's ``--durable-store``, ``durable sweep``, ``durable certify --store``, the store
factory, ``durable inspect``): it splits off the scheme, finds the scheme in the registry (built-in, registered,
or from an entry point), lets the scheme parse the rest and hands back a :class:`StoreUrl` that carries its
scheme record (``store_scheme``), so no caller looks the scheme up again. Whatever the text, it returns one or
raises :class:`~reference_runtime.errors.StoreUrlError` quoting the URL. What a caller needs beyond parsing
(``needs``: the client package, isolated stores, a reader) is refused here too, each with its one message.
:func:`check_store` goes one step further without opening a store: the server answers a TCP connection within
``timeout`` seconds and the scheme's own checks pass. :func:`open_store` opens one.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Iterable
from typing import Literal, NoReturn

from ..errors import StoreError, StoreSchemeError, StoreUrlError
from .base import ActionStateStore
from .registry import BUILT_IN, get_scheme, known_schemes
from .scheme import SCHEME_NAME, StoreScheme, StoreUrl, bad_url

__all__ = ["Need", "StoreUrl", "check_store", "open_store", "parse_store_url"]

#: What a caller needs of a store URL beyond parsing it: its client package installed (``client``), fresh
#: isolated stores (``isolated``: the pytest plugin, ``durable sweep``, ``durable certify``), a reader
#: (``inspect``: ``durable inspect``).
Need = Literal["client", "isolated", "inspect"]


def _expected() -> str:
    return ", ".join(known_schemes(usage=True))


def _scheme_of(url: object) -> StoreScheme:
    """``url`` checked as text and its scheme looked up. ``NAME`` alone is read as ``NAME:`` (``memory`` is
    ``memory:``)."""
    if not isinstance(url, str):
        raise StoreUrlError(f"store URL must be a string, got {type(url).__name__}; expected one of {_expected()}")
    if not url:
        raise StoreUrlError(f"store URL is empty; expected one of {_expected()}")
    if "\x00" in url:
        raise bad_url(url, "contains a NUL character")
    name, sep, _ = url.partition(":")
    # A bare path is the likeliest slip (``durable inspect run.db``): say how to name it as a SQLite store.
    hint = f"; a SQLite file is 'sqlite:{url}'" if not sep and any(c in url for c in "./") else ""
    if not SCHEME_NAME.match(name):
        what = f"unknown scheme {name!r}" if sep and name else "no scheme"
        raise bad_url(url, f"{what}; expected one of {_expected()}{hint}")
    try:
        return get_scheme(name, url)
    except StoreUrlError as exc:
        if not hint:
            raise
        raise StoreUrlError(f"{exc}{hint}") from None


def parse_store_url(url: object, *, needs: Iterable[Need] = ()) -> StoreUrl:
    """Check and split ``url`` without touching the network; every problem is a :class:`StoreUrlError`
    that quotes the URL and says what is expected. The result carries its scheme record (``store_scheme``).
    Each of ``needs`` the scheme cannot meet is refused (:class:`StoreError`, one message per refusal).
    A :class:`StoreUrl` this function made is taken as it is (its needs checked), not parsed again."""
    if isinstance(url, StoreUrl) and url.store_scheme is not None:
        parsed = url
    else:
        text = url.text if isinstance(url, StoreUrl) else url
        scheme = _scheme_of(text)
        assert isinstance(text, str)  # _scheme_of refuses anything else
        given = scheme.parse_url(text)
        if not isinstance(given, StoreUrl) or given.scheme != scheme.name:
            raise StoreSchemeError(
                f"store URL {text!r}: the parser of scheme {scheme.name!r} ({scheme.origin}) returned "
                f"{given!r}, not a StoreUrl of that scheme"
            )
        parsed = dataclasses.replace(given, store_scheme=scheme)
    for need in needs:
        _refuse_unless(parsed, need)
    return parsed


def _refuse_unless(parsed: StoreUrl, need: Need) -> None:
    """The one place each refusal of a parsed URL is worded: a missing client package (with its install
    line), a scheme without isolated stores, a scheme without a reader."""
    scheme = parsed.store_scheme
    assert scheme is not None
    where = f"store URL {parsed.text!r}: scheme {scheme.name!r} ({scheme.origin})"
    if need == "client":
        if scheme.client is not None and importlib.util.find_spec(scheme.client) is None:
            extra = f"'pytest-durable[{scheme.extra}]'" if scheme.extra and scheme.origin == BUILT_IN else scheme.extra
            raise StoreError(
                f"store URL {parsed.text!r} needs the {scheme.client} package: pip install {extra or scheme.client}"
            )
    elif need == "isolated":
        if scheme.isolated is None:
            raise StoreSchemeError(
                f"{where} cannot make isolated stores: its StoreScheme has no isolated=, which the pytest plugin, "
                "durable sweep and durable certify need (a fresh, empty store per test or check)"
            )
    elif need == "inspect":
        if scheme.inspect is None:
            raise StoreSchemeError(f"{where} has no reader: its StoreScheme has no inspect=")
    else:
        raise ValueError(f"unknown need {need!r}; one of client, isolated, inspect")


def check_store(url: str | StoreUrl, *, timeout: float = 5.0, needs: Iterable[Need] = ()) -> StoreUrl:
    """Parse ``url`` and check, without opening a store where the scheme allows, that it can be opened: the
    client package is installed, a server accepts a TCP connection within ``timeout`` seconds, and the
    scheme's own checks pass (a SQLite path is a file in an existing directory; Redis answers PING on the
    database); and ``needs``, as :func:`parse_store_url`. Raises :class:`StoreUrlError` or
    :class:`StoreError` naming the URL and the fix."""
    parsed = parse_store_url(url, needs=("client", *needs))
    scheme = parsed.store_scheme
    assert scheme is not None
    if scheme.server:
        import socket

        try:
            with socket.create_connection((parsed.host, parsed.port), timeout=timeout):
                pass
        except OSError as exc:
            raise StoreError(f"cannot reach store {parsed.text}: {exc} (is the server running?)") from None
    if scheme.check is not None:
        scheme.check(parsed, timeout)
    return parsed


def open_store(url: str | StoreUrl, *, timeout: float = 5.0, isolated: bool = False) -> ActionStateStore:
    """Open the store ``url`` names. ``isolated`` gives a fresh, empty store on shared storage (a unique
    Redis namespace, Kafka topic or SQLite table prefix in the one file), as the test fixtures need; deleting
    it afterwards is the caller's (:class:`~reference_runtime.stores.factory.StoreFactory` does it)."""
    parsed = parse_store_url(url, needs=("client", "isolated") if isolated else ("client",))
    scheme = parsed.store_scheme
    assert scheme is not None
    make = scheme.isolated
    if not isolated or make is None:  # None only when not isolated: parse_store_url refused it otherwise
        return scheme.open(parsed, timeout)

    def no_scratch() -> NoReturn:
        raise bad_url(parsed.text, f"{scheme.name}: needs a file path ({scheme.usage})")

    return make(parsed, timeout, no_scratch)[0]
