"""The front door to stores: store URLs parsed, checked and opened through the one scheme registry (spec
KSTORE-6, KSTORE-7, STORE-10, STORE-19).

:func:`parse_store_url` is the one parser every entry point uses (``open_store``, the stores' own
``from_url``, the pytest plugin's ``--durable-store``, ``durable certify --store``, the store factory,
``durable inspect``): it splits off the scheme, finds the scheme in the registry (built-in, registered, or
from an entry point) and lets the scheme parse the rest. Whatever the text, it returns a :class:`StoreUrl`
or raises :class:`~reference_runtime.errors.StoreUrlError` quoting the URL. :func:`check_store` goes one
step further without opening a store: the client package is installed (else the ``pip install`` line) and
the server answers a TCP connection within ``timeout`` seconds.
"""

from __future__ import annotations

import importlib.util
from typing import NoReturn

from ..errors import StoreError, StoreSchemeError, StoreUrlError
from .base import ActionStateStore
from .builtin import unique_namespace
from .redis_url import MAX_REDIS_DB
from .registry import BUILT_IN, get_scheme, known_schemes
from .scheme import SCHEME_NAME, StoreScheme, StoreUrl, bad_url

__all__ = [
    "MAX_REDIS_DB",
    "StoreUrl",
    "check_store",
    "open_store",
    "parse_store_url",
    "require_client",
    "unique_namespace",
]


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


def parse_store_url(url: object) -> StoreUrl:
    """Check and split ``url`` without touching the network; every problem is a :class:`StoreUrlError`
    that quotes the URL and says what is expected."""
    scheme = _scheme_of(url)
    assert isinstance(url, str)  # _scheme_of refuses anything else
    text = url
    parsed = scheme.parse_url(text)
    if not isinstance(parsed, StoreUrl) or parsed.scheme != scheme.name:
        raise StoreSchemeError(
            f"store URL {text!r}: the parser of scheme {scheme.name!r} ({scheme.origin}) returned "
            f"{parsed!r}, not a StoreUrl of that scheme"
        )
    return parsed


def require_client(parsed: StoreUrl) -> None:
    """Raise :class:`StoreError` with the install line when the client package of ``parsed`` is missing."""
    scheme = get_scheme(parsed.scheme)
    if scheme.client is not None and importlib.util.find_spec(scheme.client) is None:
        install = f"'pytest-durable[{scheme.extra}]'" if scheme.extra and scheme.origin == BUILT_IN else scheme.extra
        raise StoreError(
            f"store URL {parsed.text!r} needs the {scheme.client} package: pip install {install or scheme.client}"
        )


def check_store(url: str, *, timeout: float = 5.0) -> StoreUrl:
    """Parse ``url`` and check, without opening a store where the scheme allows, that it can be opened: the
    client package is installed, a server accepts a TCP connection within ``timeout`` seconds, and the
    scheme's own checks pass (a SQLite path is a file in an existing directory; Redis answers PING on the
    database). Raises :class:`StoreUrlError` or :class:`StoreError` naming the URL and the fix."""
    parsed = parse_store_url(url)
    scheme = get_scheme(parsed.scheme)
    require_client(parsed)
    if scheme.server:
        import socket

        try:
            with socket.create_connection((parsed.host, parsed.port), timeout=timeout):
                pass
        except OSError as exc:
            raise StoreError(f"cannot reach store {url}: {exc} (is the server running?)") from None
    if scheme.check is not None:
        scheme.check(parsed, timeout)
    return parsed


def open_store(url: str, *, timeout: float = 5.0, isolated: bool = False) -> ActionStateStore:
    """Open the store ``url`` names. ``isolated`` gives a fresh, empty store on shared storage (a unique
    Redis namespace, Kafka topic or SQLite table prefix in the one file), as the test fixtures need; deleting
    it afterwards is the caller's (:class:`~reference_runtime.stores.factory.StoreFactory` does it)."""
    parsed = parse_store_url(url)
    scheme = get_scheme(parsed.scheme)
    require_client(parsed)
    if not isolated:
        return scheme.open(parsed, timeout)
    if scheme.isolated is None:
        raise StoreSchemeError(
            f"store URL {url!r}: scheme {scheme.name!r} ({scheme.origin}) cannot make isolated stores "
            "(its StoreScheme has no isolated=)"
        )

    def no_scratch() -> NoReturn:
        raise bad_url(url, f"{scheme.name}: needs a file path ({scheme.usage})")

    return scheme.isolated(parsed, timeout, no_scratch)[0]
