"""The one registry of store URL schemes (spec STORE-17, STORE-18).

The built-in schemes (``memory``, ``sqlite``, ``redis``, ``kafka``; :mod:`.builtin`) are registered when
this module is imported, without importing a client library. A third-party distribution adds a scheme by
declaring an entry point in the group ``pytest_durable.stores`` whose name is the scheme and whose object is a
:class:`~.scheme.StoreScheme` (or a function returning one)::

    [project.entry-points."pytest_durable.stores"]
    mystore = "mystore.durable:SCHEME"

Entry points are read on the first lookup of a scheme that is not registered yet, and only the one named
by the URL is imported: a broken plugin breaks its own scheme, with one :class:`StoreSchemeError` naming
the entry point, its distribution and the fix. :func:`register_scheme` registers a scheme in-process.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib import metadata

from ..errors import StoreSchemeError, StoreUrlError
from .builtin import BUILTIN
from .scheme import StoreScheme

#: The entry-point group third-party stores register their schemes in.
ENTRY_POINT_GROUP = "pytest_durable.stores"

_LOCK = threading.Lock()
BUILT_IN = "built-in"
_SCHEMES: dict[str, StoreScheme] = {s.name: dataclasses.replace(s, origin=BUILT_IN) for s in BUILTIN}


def register_scheme(scheme: StoreScheme, *, replace: bool = False) -> StoreScheme:
    """Register ``scheme`` under ``scheme.name`` and return the registered record (``origin`` filled in).
    A name already taken raises :class:`StoreSchemeError` unless ``replace`` (a built-in scheme cannot be
    replaced)."""
    if not isinstance(scheme, StoreScheme):
        raise StoreSchemeError(
            f"register_scheme takes a reference_runtime.stores.StoreScheme, got {type(scheme).__name__}"
        )
    with _LOCK:
        taken = _SCHEMES.get(scheme.name)
        if taken is not None and (taken.origin == BUILT_IN or not replace):
            raise StoreSchemeError(
                f"store scheme {scheme.name!r} is already registered ({taken.origin}); "
                + ("built-in schemes cannot be replaced" if taken.origin == BUILT_IN else "pass replace=True")
            )
        if not scheme.origin or scheme.origin == BUILT_IN:
            scheme = dataclasses.replace(scheme, origin="registered in this process")
        _SCHEMES[scheme.name] = scheme
    return scheme


def unregister_scheme(name: str) -> None:
    """Forget the registered scheme ``name`` (a built-in scheme stays); unknown names are ignored."""
    with _LOCK:
        taken = _SCHEMES.get(name)
        if taken is not None and taken.origin != BUILT_IN:
            del _SCHEMES[name]


def get_scheme(name: str, url: str | None = None) -> StoreScheme:
    """The scheme ``name``: registered, or loaded from its entry point. Unknown: :class:`StoreUrlError`
    quoting ``url`` (or the name) and listing the known schemes."""
    scheme = _SCHEMES.get(name)
    if scheme is not None:
        return scheme
    found = [ep for ep in _entry_points() if ep.name == name]
    if not found:
        where = f"store URL {url!r}" if url is not None else f"store scheme {name!r}"
        raise StoreUrlError(
            f"{where}: unknown scheme {name!r}; expected one of {', '.join(known_schemes(usage=True))} (a "
            f"third-party store registers its scheme in the entry-point group {ENTRY_POINT_GROUP!r})"
        )
    if len({ep.value for ep in found}) > 1:
        raise StoreSchemeError(
            f"store scheme {name!r} is declared by several entry points: "
            f"{'; '.join(_describe(ep) for ep in found)}; uninstall all but one"
        )
    return _load(found[0])


def known_schemes(*, usage: bool = False) -> list[str]:
    """Every scheme name: the built-in and registered ones, then those declared by entry points (not
    loaded). ``usage=True`` gives each registered scheme's URL form instead (``redis://HOST:PORT/DB``) and
    ``NAME:…`` for a declared one."""
    with _LOCK:
        registered = dict(_SCHEMES)
    declared = sorted({ep.name for ep in _entry_points()} - set(registered))
    if usage:
        return [s.usage for s in registered.values()] + [f"{name}:…" for name in declared]
    return list(registered) + declared


def _entry_points() -> list[metadata.EntryPoint]:
    from importlib import metadata  # scanning installed distributions is only needed for an unknown scheme

    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def _describe(ep: metadata.EntryPoint) -> str:
    dist = ep.dist
    owner = f"distribution {dist.name} {dist.version}" if dist is not None else "an unknown distribution"
    return f"entry point {ep.name} = {ep.value} ({owner})"


def _load(ep: metadata.EntryPoint) -> StoreScheme:
    dist = ep.dist.name if ep.dist is not None else None
    fix = f"fix or uninstall {dist} (pip uninstall {dist})" if dist else "fix or remove the entry point"
    try:
        target: Any = ep.load()
        scheme = target() if callable(target) else target
    except Exception as exc:  # the plugin's own import or factory failed: one line, not its traceback
        reason = " ".join(str(exc).split())
        raise StoreSchemeError(
            f"store scheme {ep.name!r}: {_describe(ep)} cannot be loaded: {type(exc).__name__}: {reason}; {fix}"
        ) from None
    if not isinstance(scheme, StoreScheme):
        raise StoreSchemeError(
            f"store scheme {ep.name!r}: {_describe(ep)} gave a {type(scheme).__name__}, not a "
            f"reference_runtime.stores.StoreScheme; {fix}"
        )
    if scheme.name != ep.name:
        raise StoreSchemeError(
            f"store scheme {ep.name!r}: {_describe(ep)} gave the scheme {scheme.name!r}; the entry point's "
            f"name must be the scheme's name; {fix}"
        )
    with _LOCK:
        return _SCHEMES.setdefault(ep.name, dataclasses.replace(scheme, origin=_describe(ep)))
