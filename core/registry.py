"""Names to classes, each class registering itself with a decorator (dolma's `@TaggerRegistry.add`).

A plugin point is one `Registry`: `@FILTERS.add("clip")` on a class files it under that name and sets the
class's `name`, so the name is written once, on the class. On the first lookup the registry imports every
module of its package, so a new plugin is a new file there, found without a list to edit; until then
nothing is imported, so a registry costs nothing to define and loads no model library (no plugin module
imports one at module level).

Iteration follows each entry's `order`, then its name, never the order modules happen to be imported in:
the built-ins keep the order the outputs have always listed them in, and a plugin that gives no order
follows them alphabetically.
"""

from __future__ import annotations

import difflib
import pkgutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import import_module
from typing import Any, Generic, TypeVar

from hardneg.core.errors import ConfigError

T = TypeVar("T")
LAST = 1000  # the order of a plugin that names none: after every built-in


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class UnknownName(ConfigError, ValueError):
    """A name the config gives that no class registered (a ValueError too, so a config validator that looks
    it up reports it under the config key)."""


class Registry(Generic[T]):
    """The classes of one kind by name. `what` names the kind in errors ("filter"); `package` is the
    dotted package whose modules (subpackages included) hold the plugins."""

    def __init__(self, what: str, package: str) -> None:
        self.what = what
        self.package = package
        self._entries: dict[str, tuple[int, type[T]]] = {}
        self._lock = threading.RLock()
        self._discovered = False
        self._discovering = False

    def add(self, name: str, order: int = LAST) -> Callable[[type[T]], type[T]]:
        """Class decorator: register the class under `name` (its `name` attribute), iterated by `order`."""

        def register(cls: type[T]) -> type[T]:
            known = self._entries.get(name)
            if known is not None and _qualname(known[1]) != _qualname(cls):
                raise ValueError(f"{self.what} {name!r} is registered twice: {_qualname(known[1])}, {_qualname(cls)}")
            cls.name = name  # type: ignore[attr-defined]
            self._entries[name] = (order, cls)
            return cls

        return register

    def _discover(self) -> None:
        """Import every module of the package once (a lookup made while it runs sees what is there so far)."""
        if self._discovered:
            return
        with self._lock:
            if self._discovered or self._discovering:
                return
            self._discovering = True
            try:
                package = import_module(self.package)
                for info in pkgutil.walk_packages(package.__path__, f"{self.package}."):
                    import_module(info.name)
                self._discovered = True
            finally:
                self._discovering = False

    def get(self, name: str, where: str = "") -> type[T]:
        """The class registered as `name`; an unknown name is an error naming the closest known one."""
        self._discover()
        entry = self._entries.get(name)
        if entry is None:
            close = difflib.get_close_matches(str(name), list(self._entries), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            prefix = f"{where}: " if where else ""
            raise UnknownName(f"{prefix}unknown {self.what} {name!r}{hint}; known: {', '.join(self.names())}")
        return entry[1]

    def items(self) -> list[tuple[str, type[T]]]:
        """(name, class) of every entry, by order then name."""
        self._discover()
        ranked = sorted(self._entries.items(), key=lambda kv: (kv[1][0], kv[0]))
        return [(name, cls) for name, (_, cls) in ranked]

    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.items())

    def __contains__(self, name: Any) -> bool:
        self._discover()
        return name in self._entries

    @contextmanager
    def scoped(self) -> Iterator[Registry[T]]:
        """Registrations made inside are undone on leaving: how a test registers a throwaway plugin."""
        self._discover()
        saved = dict(self._entries)
        try:
            yield self
        finally:
            self._entries = saved
