"""One mechanism for packages whose public names load their module on first use.

Importing such a package (e.g. the CLI importing ``hetsched.srn`` for an unrelated
command) loads neither numba nor scipy; a name's module is imported when the name is
first read, and the value is then bound in the package (resolved once).

Usage, at the end of a package's ``__init__``::

    __getattr__, __dir__ = lazy_names(__name__, globals(), {"solve": "analysis", "Net": "net"})

A table entry is ``name -> "module"`` (the attribute of that name) or
``name -> "module:attr"``. Importing a submodule binds the submodule's name in the
package; where a public name equals a submodule's (``srn.solve``, ``traces.workload``),
the submodule is unbound again after each import, so the public value wins, as it
would with eager imports.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Callable, Iterable

__all__ = ["lazy_names"]


def lazy_names(package: str, namespace: dict, table: dict[str, str], submodules: Iterable[str] = ()
               ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` (see the module docstring)."""
    submodules = tuple(submodules)

    def resolve(name: str):
        mod, _, attr = table[name].partition(":")
        return getattr(importlib.import_module(f"{package}.{mod}"), attr or name)

    def __getattr__(name: str):
        if name in table:
            value = namespace[name] = resolve(name)
            for other in table:  # an import bound a submodule over a public name spelt the same: unbind it,
                if isinstance(namespace.get(other), ModuleType):  # the next read resolves the public value
                    del namespace[other]
            return value
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table) | set(submodules))

    return __getattr__, __dir__
