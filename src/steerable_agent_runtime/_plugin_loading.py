"""What the plugin sources and the registry share: the ``register`` type and how messages name plugins."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import TypeAlias

from .errors import PluginLoadError
from .tools import ToolRegistrar

__all__ = ["RegisterFunction", "checked_register", "describe_error", "plugin_label", "put_module"]

RegisterFunction: TypeAlias = Callable[[ToolRegistrar], object]
"""A plugin's ``register(router)``; what it returns is ignored (a coroutine is refused)."""


def plugin_label(plugin: str, source: str) -> str:
    """``plugin 'name' from source``: how every message names a plugin."""
    return f"plugin {plugin!r} from {source}"


def describe_error(exc: BaseException) -> str:
    """``Type: message`` (the type alone when the message is empty)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def checked_register(target: object, what: str, label: str, plugin: str) -> RegisterFunction:
    """``target`` when callable; else :class:`PluginLoadError` naming ``what`` and the plugin."""
    if not callable(target):
        raise PluginLoadError(
            f"{label}: {what} is not callable (it is {type(target).__name__}); "
            "a plugin needs a function register(router)",
            plugin=plugin,
        )
    return target


def put_module(name: str, module: ModuleType | None) -> None:
    """Put ``module`` back under ``name`` in ``sys.modules`` (``None``: remove the name)."""
    if module is None:
        sys.modules.pop(name, None)
    else:
        sys.modules[name] = module
