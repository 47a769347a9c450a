"""Cheap imports: lazy re-exports for a package's ``__init__`` (PEP 562), and a lazy ``Field``.

A package lists its public names per submodule, for type checkers in an ``if TYPE_CHECKING:``
block and for :func:`lazy_exports` in a table; each name is imported from its submodule on first
access and then bound as a module global, so importing the package costs nothing but the table.
Public: the runtime's packages, ``steerable_sidecar`` and a plugin package built on the runtime use
the same helper (``tests/test_exports.py`` checks each table against its ``TYPE_CHECKING`` block).

:func:`Field` is ``pydantic.Field`` for a tool function's constraints, imported when the
annotation is evaluated (when the tool's validator is built) rather than with the module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Field", "lazy_exports"]


def lazy_exports(
    package: str,
    exports: Mapping[str, tuple[str, ...]],
    namespace: dict[str, Any],
    *,
    submodules: bool = False,
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Build a package's ``__getattr__`` and ``__dir__``.

    Args:
        package: The package's ``__name__``.
        exports: Each module, relative to the package (``"._edit"``, ``"..errors"``; a name without
            a leading dot is a submodule), and the public names it provides.
        namespace: The package's ``globals()``: a name is bound there on first use.
        submodules: Also serve ``package.NAME`` for a name no submodule exports (importing the
            submodule ``NAME``), as an eager ``__init__`` that imported it would.

    Returns:
        ``(__getattr__, __dir__)``; ``__getattr__`` raises ``AttributeError`` for an unknown name.
    """
    # relative to the package: "._edit", "..errors" (a parent's module), or "_config" (= "._config")
    module_of = {
        name: module if module.startswith(".") else f".{module}"
        for module, names in exports.items()
        for name in names
    }

    def __getattr__(name: str) -> object:
        module = module_of.get(name)
        if module is None:
            if submodules:
                try:
                    return importlib.import_module(f"{package}.{name}")
                except ModuleNotFoundError as exc:
                    if exc.name != f"{package}.{name}":
                        raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__


def Field(*args: Any, **kwargs: Any) -> Any:  # pydantic's name: the annotations read the same
    """``pydantic.Field(*args, **kwargs)``, pydantic imported at the first call.

    For the constraints of a tool function's parameters, in a module that defers its annotations
    (``from __future__ import annotations``): ``limit: Annotated[int, Field(ge=1)]`` is evaluated
    only when the tool's validator is built from the signature (``Tool.from_function``, or the first
    call of a tool registered with its schema computed ahead of time), so importing the module
    and registering the tool load no pydantic. The value is pydantic's own ``FieldInfo``.
    """
    from pydantic import Field as field

    return field(*args, **kwargs)
