"""Harness strategies: which tools a model is offered each round.

Spec: the progressive harness strategy (docs/requirements.md HAR-1..3); what each of ``full``,
``minimal`` and ``progressive`` offers is tabled in docs/harness.md. ``progressive`` needs the
run's router: :meth:`AssembledHarness.wire_tools` registers ``tool_search`` (HAR-2), and a path
whose tools arrive over the wire (``host_tools=True``) refuses it (HAR-3). The offered list is
computed from the router at each :meth:`AssembledHarness.offered` call, so plugins enabled or
disabled mid-session show up in the next round.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from ._choice import enum_member
from .errors import UserError

if TYPE_CHECKING:  # imported where used, so the CLI's parser can read HarnessStrategy cheaply
    from .tools import Tool, ToolRouter

__all__ = ["MINIMAL_TOOLS", "AssembledHarness", "HarnessStrategy", "assemble_harness"]

MINIMAL_TOOLS: Final = frozenset(
    {
        "read_file",
        "write_file",
        "edit_file",
        "bash",
        "ask_user",
        "read_spilled",
    }
)
"""The ``minimal`` strategy's core: read, write and edit a file, a shell (which searches and lists
too), questions to the user, and ``read_spilled`` (without it an externalised result could not be
read back). Offered with compact descriptors (:meth:`Tool.describe_compact`): the smallest prompt
a coding model can work from, for small local models and tight context windows."""


class HarnessStrategy(StrEnum):
    """Which tools are offered to the model (see the module docstring)."""

    FULL = "full"
    """Direct and deferred tiers."""
    MINIMAL = "minimal"
    """:data:`MINIMAL_TOOLS` only, with compact descriptors."""
    PROGRESSIVE = "progressive"
    """Direct tier plus ``tool_search`` (HAR-1)."""


def _coerce(strategy: HarnessStrategy | str) -> HarnessStrategy:
    return enum_member(
        HarnessStrategy,
        strategy,
        lambda choices: f"unknown harness strategy {strategy!r}; choose one of: {choices}",
    )


class AssembledHarness:
    """A harness strategy bound (after :meth:`wire_tools`) to the run's router.

    Args:
        strategy: A :class:`HarnessStrategy` or its name.
        host_tools: ``True`` on paths whose tools arrive over the wire (the sidecar's host-tools
            chat): there is no router of the run's own to put ``tool_search`` on.

    Raises:
        UserError: On an unknown strategy name (the message lists the choices), or
            ``progressive`` with ``host_tools=True`` (use ``full`` or ``minimal``; HAR-3).
    """

    def __init__(self, strategy: HarnessStrategy | str, *, host_tools: bool = False) -> None:
        self.strategy = _coerce(strategy)
        self.host_tools = host_tools
        if host_tools and self.strategy is HarnessStrategy.PROGRESSIVE:
            raise UserError(
                "the progressive harness needs the run's own tool router to register tool_search; "
                "tools arriving over the wire (host tools) have none: use the full or minimal harness"
            )
        self._router: ToolRouter | None = None

    def __repr__(self) -> str:
        wired = "wired" if self._router is not None else "not wired"
        return f"AssembledHarness({self.strategy.value!r}, host_tools={self.host_tools}, {wired})"

    @property
    def router(self) -> ToolRouter | None:
        """The router bound by :meth:`wire_tools`, or ``None``."""
        return self._router

    def wire_tools(self, router: ToolRouter) -> None:
        """Bind the run's router; for ``progressive`` also register ``tool_search`` on it (HAR-2).

        Idempotent: wiring the same router again changes nothing (one ``tool_search``).

        Raises:
            DuplicateToolError: ``progressive`` on a router where a foreign tool is named
                ``tool_search``.
        """
        if self.strategy is HarnessStrategy.PROGRESSIVE:
            from .tool_search import register_tool_search

            register_tool_search(router)
        self._router = router

    def offered(self) -> list[dict[str, Any]]:
        """Return this round's offered tools as OpenAI function-tool descriptors.

        Computed from the router now, in registration order. Pass the bound method as
        ``AgentLoop(offered=harness.offered)``.

        Raises:
            UserError: Before :meth:`wire_tools`, or for ``progressive`` when the router no longer
                has the ``tool_search`` that ``wire_tools`` registered (the model is never offered
                a tool that cannot dispatch).
        """
        from .tools import Tool, ToolExposure

        router = self._router
        if router is None:
            raise UserError(
                f"the {self.strategy.value} harness is not wired: call AssembledHarness.wire_tools(router) "
                "before asking for the offered tools"
            )
        if self.strategy is HarnessStrategy.FULL:
            return [
                t.describe_model()
                for t in router
                # a plain Tool is never the tool_search (a subclass): its module is not loaded for them
                if t.exposure is not ToolExposure.HIDDEN
                and not (type(t) is not Tool and _is_tool_search(router, t))
            ]
        if self.strategy is HarnessStrategy.MINIMAL:
            return [
                t.describe_compact()
                for t in router
                if t.name in MINIMAL_TOOLS and t.exposure is not ToolExposure.HIDDEN
            ]
        from .tool_search import TOOL_SEARCH_TOOL_NAME, is_tool_search

        search = router.get(TOOL_SEARCH_TOOL_NAME)
        if search is None or not is_tool_search(router, search):
            raise UserError(
                "the progressive harness's tool_search is not registered on this router: "
                "call AssembledHarness.wire_tools(router) before asking for the offered tools"
            )
        offered = [t.describe_model() for t in router if t.exposure is ToolExposure.DIRECT]
        if search.exposure is not ToolExposure.DIRECT:
            offered.append(search.describe_model())
        return offered


def _is_tool_search(router: ToolRouter, tool: Tool) -> bool:
    from .tool_search import is_tool_search

    return is_tool_search(router, tool)


def assemble_harness(
    strategy: HarnessStrategy | str, router: ToolRouter | None = None, *, host_tools: bool = False
) -> AssembledHarness:
    """Build an :class:`AssembledHarness` and, when ``router`` is given, wire it.

    Args:
        strategy: A :class:`HarnessStrategy` or its name (``full``, ``minimal``, ``progressive``).
        router: The run's router; :meth:`AssembledHarness.wire_tools` is called with it.
        host_tools: See :class:`AssembledHarness`.

    Returns:
        The harness; its :meth:`~AssembledHarness.offered` is ready when ``router`` was given.

    Raises:
        UserError: See :class:`AssembledHarness`.
    """
    harness = AssembledHarness(strategy, host_tools=host_tools)
    if router is not None:
        harness.wire_tools(router)
    return harness
