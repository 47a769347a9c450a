"""Two heavy dependencies imported without the parts steerable never uses (start-up).

``acp`` (the ACP SDK, ``agent-client-protocol``): importing it builds every pydantic model of
``acp.schema`` (some 270) at once, and the SDK's base model asks pydantic for
``use_attribute_docstrings``: each class's source is found and tokenised again to read its fields'
docstrings. That is about 0.35 s on a quiet 2-core machine (1.2 s measured in a host), the bulk of
``steerable acp``'s first ``session/new``. :func:`import_acp_sdk` imports it with two class options
of pydantic's own set on each model class ``acp.schema`` defines (``class M(BaseModel,
defer_build=True, use_attribute_docstrings=False)``): a model's validator and serializer are built
at its first use (a ``session/new`` uses a handful of the 270), and the field docstrings, which
only ever reach a JSON Schema (``description``), are not read. What the models accept, refuse and
write is unchanged (``tests/test_startup_imports.py`` compares both imports). The options are
passed by the ``__build_class__`` of that module alone (its ``__builtins__``, set by
:class:`_SchemaLoader`): no other module's classes, and no other thread, see a difference.

``httpx``: its package imports its command-line client (``httpx.main``) whenever ``click``,
``rich`` and ``pygments`` are installed, as they are beside steerable (the ``mcp`` SDK needs click,
steerable's terminal output rich): about 45 ms for a client steerable never runs.
:func:`import_httpx` imports it as without the optional ``httpx[cli]`` extra; httpx then defines
its own ``httpx.main``, which says the extra is missing. The HTTP client is the same.

Either import is the ordinary one when the package is imported already, or when it is not laid
out as expected (``acp.schema`` not a plain source module; an ``httpx`` that cannot do without its
client).
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Final

__all__ = ["ACP_SCHEMA_MODULE", "HTTPX_CLI_MODULE", "import_acp_sdk", "import_httpx"]

ACP_SCHEMA_MODULE: Final = "acp.schema"
"""The ACP SDK's generated models: the module whose classes are built at their first use."""

HTTPX_CLI_MODULE: Final = "httpx._main"
"""httpx's command-line client (click, rich, pygments), left out by :func:`import_httpx`."""

_FINDING = threading.Lock()  # one of these finders in sys.meta_path at a time (process-wide)


def import_acp_sdk() -> ModuleType:
    """Import ``acp`` with the models of ``acp.schema`` built at their first use.

    Returns:
        The ``acp`` package (imported the ordinary way when it already was).
    """
    loaded = sys.modules.get("acp")
    if loaded is not None:
        return loaded
    with _finding(_SchemaFinder()):
        return importlib.import_module("acp")


def import_httpx() -> ModuleType:
    """Import ``httpx`` without its command-line client (as without the ``httpx[cli]`` extra).

    Returns:
        The ``httpx`` package (imported the ordinary way when it already was).
    """
    loaded = sys.modules.get("httpx")
    if loaded is not None:
        return loaded
    with _finding(_WithoutHttpxCli()):
        try:
            return importlib.import_module("httpx")
        except ImportError as exc:
            if exc.name != HTTPX_CLI_MODULE:
                raise
    return importlib.import_module("httpx")  # a release that needs its client: the ordinary import


@contextmanager
def _finding(finder: importlib.abc.MetaPathFinder) -> Iterator[None]:
    """``finder`` first in ``sys.meta_path`` for the duration of one import."""
    with _FINDING:
        sys.meta_path.insert(0, finder)
        try:
            yield
        finally:
            sys.meta_path.remove(finder)


def _model_options(build_class: Callable[..., Any]) -> Callable[..., Any]:
    """``__build_class__`` with pydantic's lazy class options added for a model class."""
    from pydantic import BaseModel

    def build(func: Callable[..., Any], name: str, *bases: Any, **kwargs: Any) -> Any:
        if any(isinstance(base, type) and issubclass(base, BaseModel) for base in bases):
            kwargs.setdefault("defer_build", True)
            kwargs.setdefault("use_attribute_docstrings", False)
        return build_class(func, name, *bases, **kwargs)

    return build


class _SchemaLoader(importlib.machinery.SourceFileLoader):
    """Runs ``acp.schema``'s (cached) code with its own ``__build_class__``: :func:`_model_options`."""

    def exec_module(self, module: ModuleType) -> None:
        module.__dict__["__builtins__"] = {
            **builtins.__dict__,
            "__build_class__": _model_options(builtins.__build_class__),
        }
        try:
            super().exec_module(module)
        finally:
            # the functions it defined keep the builtins they were made with; later lookups through
            # the module see the real ones
            module.__dict__["__builtins__"] = builtins


class _SchemaFinder(importlib.abc.MetaPathFinder):
    """Finds ``acp.schema`` as the path finder does, and hands it to :class:`_SchemaLoader`."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != ACP_SCHEMA_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader:
            return None  # a zip, a compiled extension: imported the ordinary way
        spec.loader = _SchemaLoader(spec.loader.name, spec.loader.path)
        return spec


class _WithoutHttpxCli(importlib.abc.MetaPathFinder):
    """Answers the import of httpx's command-line client as a missing extra would."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == HTTPX_CLI_MODULE:
            raise ImportError("steerable does not load httpx's command-line client", name=fullname)
        return None
