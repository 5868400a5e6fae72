"""What a stored record may name (spec EVT-3, EVT-4): classes are looked up by ``module`` and ``qualname`` in
modules this process has already imported, and a record never makes it import anything else, unless the user
allowed that module with :func:`set_record_imports`.

Store contents are untrusted. Importing a module runs its code (a record naming ``unittest.__main__`` would
run ``unittest.main()`` and exit the process), and so can looking an attribute up (a module ``__getattr__``, a
metaclass hook, a descriptor). The lookup here reads the modules' and classes' own dictionaries only.
"""

from __future__ import annotations

import importlib
import re
import sys
import types
from collections.abc import Iterable
from typing import TypeGuard

__all__ = ["find_named", "is_class", "record_imports", "set_record_imports"]

_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_allowed: frozenset[str] = frozenset()
# The real dictionaries, read through the base types' own descriptors: a module subclass or a metaclass that
# defines ``__dict__`` is not asked.
_module_dict = vars(types.ModuleType)["__dict__"].__get__
_class_dict = vars(type)["__dict__"].__get__


def record_imports() -> frozenset[str]:
    """The modules a stored record may make this process import (empty by default)."""
    return _allowed


def set_record_imports(modules: Iterable[str]) -> frozenset[str]:
    """Let stored records name classes of these modules (exact module names) even before anything imported
    them; returns the modules allowed before. ``set_record_imports([])`` allows none again.

    Needed only when a process reads records whose event classes live in a module it does not import itself
    (an agent importing its events lazily): importing the agent's module first is the usual way."""
    global _allowed
    names = [modules] if isinstance(modules, str) else list(modules)
    bad = [m for m in names if not isinstance(m, str) or not _MODULE.fullmatch(m)]
    if bad:
        raise ValueError(f"set_record_imports takes module names such as 'myapp.events', got {bad!r}")
    previous, _allowed = _allowed, frozenset(names)
    return previous


def find_named(module: str, qualname: str) -> object:
    """What ``module:qualname`` names (``qualname`` walks through classes only). Raises ``LookupError`` saying
    why when the module is neither imported nor allowed by :func:`set_record_imports`, or it has no such
    attribute; nothing named is called, and the caller checks what it got."""
    mod = sys.modules.get(module)
    if mod is None:
        if module not in _allowed:
            raise LookupError(
                f"module {module!r} is not imported, and a stored record never imports a module: import it "
                "first (e.g. from the agent's module), or allow it with reference_runtime.set_record_imports"
            )
        mod = importlib.import_module(module)
    if not isinstance(mod, types.ModuleType):
        raise LookupError(f"sys.modules[{module!r}] is not a module")
    namespace = _module_dict(mod)
    obj: object = None
    for n, part in enumerate(qualname.split(".")):
        if n:
            if not is_class(obj):
                raise LookupError(f"{module}:{'.'.join(qualname.split('.')[:n])} is not a class")
            namespace = _class_dict(obj)
        if part not in namespace:
            raise LookupError(f"{module} has no attribute {qualname!r}")
        obj = namespace[part]
    return obj


def is_class(obj: object) -> TypeGuard[type]:
    """``isinstance(obj, type)`` without asking ``obj`` for its ``__class__`` (which a property can answer)."""
    return issubclass(type(obj), type)
