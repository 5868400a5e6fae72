"""The trust boundary of pickled payloads (spec PAY-3, PAY-4, LIM-4, LIM-6): which globals a stored pickle
may name, and the two restricted loaders that admit only those.

A pickle whose globals are only exception classes and inert value types, and that has no ``BUILD``, is
loaded by the C unpickler (:class:`InertUnpickler`); every other one goes through the pure-Python
:class:`RestrictedUnpickler`, which checks each call it makes. Loading arbitrary objects is the codec's
explicit opt-in (``trusted=True`` or ``allowed_classes``), never this module's.
"""

from __future__ import annotations

import copyreg
import io
import pickle
import sys
import types
from typing import Any

from .class_lookup import find_named, is_class
from .errors import PayloadDecodeError, PayloadLimitError, UntrustedPayloadError
from .limits import DecodeLimits, safe_repr
from .pickle_limits import PickleShape

SAFE_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    {
        ("builtins", name)
        for name in (
            "list",
            "dict",
            "set",
            "frozenset",
            "tuple",
            "bytes",
            "bytearray",
            "str",
            "int",
            "float",
            "complex",
            "bool",
            "slice",
            "range",
            "NoneType",
            "object",
        )
    }
    | {
        ("collections", "OrderedDict"),
        ("collections", "deque"),
        ("collections", "defaultdict"),
        ("datetime", "datetime"),
        ("datetime", "date"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        ("decimal", "Decimal"),
        ("uuid", "UUID"),
        ("fractions", "Fraction"),
        # copyreg helpers only rebuild instances of classes that passed find_class themselves.
        ("copyreg", "_reconstructor"),
        ("copyreg", "__newobj__"),
    }
)

# Globals that cannot build anything larger than their arguments: a pickle naming only these (and no BUILD)
# is loaded by the C unpickler; any other admitted global goes through the guarded loader below.
_INERT: frozenset[tuple[str, str]] = frozenset(
    {("builtins", n) for n in ("int", "float", "complex", "bool", "NoneType", "slice", "object", "str")}
    | {("datetime", n) for n in ("datetime", "date", "time", "timedelta", "timezone")}
    | {("decimal", "Decimal"), ("fractions", "Fraction"), ("uuid", "UUID")}
)


class _NeedsGuard(Exception):
    """The payload names a global that may allocate when called: load it with the guarded loader."""


def admitted_exception(module: str, name: str) -> type[Exception] | None:
    """The exception class ``module.name`` if a payload may name it: an ``Exception`` subclass of a module
    that is already imported (resolving it must not import, and so execute, anything new). Only Exception
    subclasses: a SystemExit or KeyboardInterrupt replayed from a record would stop the recovering process
    (spec PAY-6)."""
    if "." in name:
        return None
    obj = _named(module, name)
    return obj if is_class(obj) and issubclass(obj, Exception) else None


def _named(module: str, qualname: str) -> object:
    """What a payload names, looked up without importing or calling anything (spec EVT-4); None if nothing."""
    try:
        return find_named(module, qualname)
    except (LookupError, ImportError):
        return None


def exception_class(name: str) -> type[BaseException] | None:
    """The exception class a Java-style payload names (``module.qualname``, or a builtin's bare name) among
    the modules already imported; None when there is none."""
    module, _, attr = name.rpartition(".")
    obj = _named(module or "builtins", attr)
    return obj if is_class(obj) and issubclass(obj, BaseException) else None


def _refuse(module: str, name: str) -> UntrustedPayloadError:
    return UntrustedPayloadError(
        f"payload refers to {module}.{name}, which the restricted loader does not admit "
        "(allow it with allowed_classes=, or opt in to trusted=True)"
    )


class InertUnpickler(pickle.Unpickler):
    """The C unpickler for payloads without BUILD whose globals are exception classes or inert value types:
    nothing it can call allocates beyond its arguments, so no call needs checking (benchmark P4)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _INERT:
            return super().find_class(module, name)
        exc = admitted_exception(module, name)
        if exc is not None:
            return exc
        if (module, name) in SAFE_GLOBALS:
            raise _NeedsGuard
        raise _refuse(module, name)


def _allocating_base(func: Any) -> type | None:
    return func if isinstance(func, type) and issubclass(func, bytes | bytearray) else None


# The pure-Python unpickler: its opcode table can be overridden per class, the C one's cannot.
_PyUnpickler: Any = vars(pickle)["_Unpickler"]
_newobj: Any = vars(copyreg)["__newobj__"]
_newobj_ex: Any = vars(copyreg)["__newobj_ex__"]
_reconstructor: Any = vars(copyreg)["_reconstructor"]


class RestrictedUnpickler(_PyUnpickler):  # type: ignore[misc]
    """The pure-Python unpickler with every call it makes guarded: only admitted globals are resolved,
    their arguments are checked against the memory budget before the call (``bytearray(600000000)``,
    ``list(range(20000000))``), what they build is counted, and BUILD cannot set state on a class or
    module (spec PAY-3, LIM-4, LIM-6)."""

    def __init__(self, data: bytes, allowed: frozenset[str], limits: DecodeLimits) -> None:
        super().__init__(io.BytesIO(data))
        self._allowed = allowed
        self._limits = limits
        self._spent = 0

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in SAFE_GLOBALS or f"{module}.{name}" in self._allowed:
            return super().find_class(module, name)
        exc = admitted_exception(module, name)
        if exc is not None:
            return exc
        raise _refuse(module, name)

    def _check_args(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        limits = self._limits
        target = func
        if func is _reconstructor and len(args) == 3:
            target = args[1]
        elif func is _newobj and args:
            target = args[0]
        base = _allocating_base(target)
        for arg in (*args, *kwargs.values()):
            if isinstance(arg, range) and len(arg) > limits.max_container_len:
                raise PayloadLimitError(
                    f"{_name(func)}(range of {len(arg)} items) exceeds max_container_len={limits.max_container_len}"
                )
            if base is not None and isinstance(arg, int) and arg > limits.max_memory_bytes - self._spent:
                raise PayloadLimitError(
                    f"{_name(func)}({arg}) exceeds the memory budget max_memory_bytes={limits.max_memory_bytes}"
                )

    def _call(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not callable(func):
            raise PayloadDecodeError(f"payload calls a {type(func).__name__}, which is not callable")
        self._check_args(func, args, kwargs)
        value = func(*args, **kwargs)
        self._spent += sys.getsizeof(value, 64)
        if self._spent > self._limits.max_memory_bytes:
            raise PayloadLimitError(f"payload would use more than max_memory_bytes={self._limits.max_memory_bytes}")
        return value

    def _load_reduce(self) -> None:
        stack = self.stack
        args = stack.pop()
        func = stack[-1]
        if not isinstance(args, tuple):
            raise PayloadDecodeError("REDUCE arguments are not a tuple")
        stack[-1] = self._call(func, args, {})

    def _load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        if not isinstance(cls, type) or not isinstance(args, tuple):
            raise PayloadDecodeError("NEWOBJ needs a class and an argument tuple")
        self.append(self._call(_newobj, (cls, *args), {}))

    def _load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        if not isinstance(cls, type) or not isinstance(args, tuple) or not isinstance(kwargs, dict):
            raise PayloadDecodeError("NEWOBJ_EX needs a class, an argument tuple and a keyword dict")
        self.append(self._call(_newobj_ex, (cls, args, kwargs), {}))

    def _load_build(self) -> None:
        state = self.stack[-1]
        inst = self.stack[-2] if len(self.stack) > 1 else None
        # No payload may set state on a class or module (setting fractions.Fraction.__repr__ would
        # change the whole process), nor replace an instance's class or special attributes.
        if isinstance(inst, type | types.ModuleType) or (callable(inst) and not isinstance(inst, BaseException)):
            raise UntrustedPayloadError(f"payload sets state on {_name(inst)}, which the loader refuses")
        setstate = getattr(type(inst), "__setstate__", None)
        if setstate is not None and setstate is not BaseException.__setstate__:
            # The allow-listed class restores its own instance (pydantic models name '__dict__' and their
            # field sets in the state they hand it): its __setstate__ decides, on this instance only.
            super().load_build()
            return
        parts = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
        for part in parts:
            if isinstance(part, dict):
                for name in part:
                    if not isinstance(name, str) or (name.startswith("__") and name != "__notes__"):
                        raise UntrustedPayloadError(
                            f"payload sets attribute {safe_repr(name)} of a "
                            f"{type(inst).__name__}, which the loader refuses"
                        )
        super().load_build()

    def _refuse_old_style(self) -> None:
        raise UntrustedPayloadError("payload uses INST/OBJ opcodes, which the restricted loader does not admit")


RestrictedUnpickler.dispatch = {
    **_PyUnpickler.dispatch,
    pickle.REDUCE[0]: RestrictedUnpickler._load_reduce,
    pickle.NEWOBJ[0]: RestrictedUnpickler._load_newobj,
    pickle.NEWOBJ_EX[0]: RestrictedUnpickler._load_newobj_ex,
    pickle.BUILD[0]: RestrictedUnpickler._load_build,
    pickle.INST[0]: RestrictedUnpickler._refuse_old_style,
    pickle.OBJ[0]: RestrictedUnpickler._refuse_old_style,
}


def _name(obj: Any) -> str:
    return str(getattr(obj, "__qualname__", None) or type(obj).__name__)


def load_restricted(body: bytes, shape: PickleShape, allowed: frozenset[str], limits: DecodeLimits) -> Any:
    """Load an untrusted pickle that names globals: by the C unpickler when its shape and globals allow it,
    else by the guarded loader."""
    if not shape.build and not allowed:
        try:
            return InertUnpickler(io.BytesIO(body)).load()
        except _NeedsGuard:
            pass
    return RestrictedUnpickler(body, allowed, limits).load()
