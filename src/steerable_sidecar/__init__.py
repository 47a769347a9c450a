"""steerable_sidecar: the process half of steerable (CLI, line session, MCP server).

Importing the package is cheap: its public names are imported from their modules on first use
(PEP 562 ``__getattr__``), so ``steerable mcp`` can answer a host's ``initialize`` before the
tools, pydantic or the ``mcp`` SDK are loaded (docs/mcp.md: Start-up).
"""

import importlib as _importlib
import typing as _typing

from steerable_agent_runtime._version import __version__

if _typing.TYPE_CHECKING:
    from .cli import build_parser, main
    from .session import handle_line, run_session

_EXPORTS: dict[str, tuple[str, ...]] = {
    "cli": ("build_parser", "main"),
    "session": ("handle_line", "run_session"),
}
"""Each submodule and the public names it provides (the block above, for type checkers)."""

_MODULE_OF: dict[str, str] = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = ["__version__", "build_parser", "handle_line", "main", "run_session"]


if not _typing.TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there

    def __getattr__(name: str) -> object:
        """Import a public name (or a submodule) on first access, then keep it as a module global."""
        module = _MODULE_OF.get(name)
        if module is None:
            try:
                return _importlib.import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{__name__}.{name}":
                    raise
                raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        value = getattr(_importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
