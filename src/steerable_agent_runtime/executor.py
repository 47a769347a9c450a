"""The executor chain: what sits between the agent loop and the tools.

Spec: ToolMode ("approval gating is the executor wrapper's job on interactive paths, not the
registry's"). A :class:`ToolExecutor` is an async callable ``(ToolCall, CallContext | None) ->
ToolResult`` that never raises for a bad call and passes the context on; the innermost one is a
router's ``dispatch``, wrappers compose around it::

    executor = ApprovalGate(router.dispatch, approve=ask_the_user, mode_of=mode_lookup(router))

Host forwarding (``toolsViaHost``) is not a wrapper: host tools are schema-only router tools
whose handlers call the host. How the loop's per-call context carries the executor to nested calls
and the consent decision back: docs/agent-loop.md, "The executor chain"; docs/runtime.md,
"The call context".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection

from ._codes import ToolErrorCode
from ._executor_shape import AnyExecutor, taking_context
from .context import CallContext, ToolExecutor
from .modes import ToolMode, decide_tool_mode, requires_consent
from .tools import ToolRouter
from .types import ToolCall, ToolResult

__all__ = [
    "ApprovalHandler",
    "ApprovalGate",
    "ToolExecutor",
    "approve_all",
    "mode_lookup",
]


_UNASKED = " and needs the user's consent, which nobody can give here"

ApprovalHandler = Callable[[ToolCall, ToolMode], Awaitable[bool]]
"""Asks for consent for one call of the given mode; ``True`` (exactly: ``is True``) runs it."""


async def approve_all(call: ToolCall, mode: ToolMode) -> bool:
    """An :data:`ApprovalHandler` that consents to everything (headless runs in a jailed workspace)."""
    return True


def mode_lookup(router: ToolRouter) -> Callable[[str], ToolMode | None]:
    """Return ``name -> mode``: the registered tool's mode, or ``None`` for a name not registered.

    An unregistered name needs no consent prompt: the router answers it as an unknown tool.
    """

    def mode_of(name: str) -> ToolMode | None:
        spec = router.get(name)
        return spec.mode if spec is not None else None

    return mode_of


class ApprovalGate:
    """Decide consent for every call (the one place that does): run it, ask, or refuse.

    Spec: ToolMode (``local`` requires consent). A call needing consent is checked, then put to
    ``approve``: only exactly ``True`` is consent; a refusal or a raising prompt gives
    ``consent_denied``, ``approve=None`` gives ``consent_required`` (both ``needsFollowup``), and
    the decision lands in ``context.approved``. The rules and which entry point uses which gate:
    docs/runtime.md, "Consent: which gate each entry point uses".

    Args:
        inner: The executor that runs approved calls (a one-argument one still works; it does
            not see the call's context).
        approve: The consent prompt (a host reverse call, a terminal prompt, :func:`approve_all`),
            or ``None`` when nobody can be asked.
        mode_of: ``name -> mode`` (see :func:`mode_lookup`); ``None`` runs the call without a prompt.
        consent_modes: Modes that need consent (default: those
            :func:`~steerable_agent_runtime.modes.requires_consent` names, i.e. ``local``).
        check: ``call -> the failed result it would get without running, or None`` (see
            :meth:`ToolRouter.check`); ``None`` asks without checking first.
        unasked: With ``approve=None``, the end of the refusal's error after "<name> is a
            <mode>-mode tool" (what the caller should do instead); ``None``: "and needs the
            user's consent, which nobody can give here".
    """

    def __init__(
        self,
        inner: AnyExecutor,
        *,
        approve: ApprovalHandler | None,
        mode_of: Callable[[str], ToolMode | None] = decide_tool_mode,
        consent_modes: Collection[ToolMode] | None = None,
        check: Callable[[ToolCall], ToolResult | None] | None = None,
        unasked: str | None = None,
    ) -> None:
        self.inner = taking_context(inner)
        self.approve = approve
        self.mode_of = mode_of
        self.check = check
        self.unasked = _UNASKED if unasked is None else unasked
        self.consent_modes = (
            frozenset(consent_modes)
            if consent_modes is not None
            else frozenset(m for m in ToolMode if requires_consent(m))
        )

    @classmethod
    def for_router(
        cls, router: ToolRouter, *, approve: ApprovalHandler | None, unasked: str | None = None
    ) -> ApprovalGate:
        """The gate over ``router.dispatch``: the router's modes, its validation before any prompt."""
        return cls(
            router.dispatch, approve=approve, mode_of=mode_lookup(router), check=router.check, unasked=unasked
        )

    async def __call__(self, call: ToolCall, context: CallContext | None = None, /) -> ToolResult:
        """Run ``call`` if its mode needs no consent or ``approve`` grants it."""
        mode = self.mode_of(call.name)
        if mode is None or mode not in self.consent_modes:
            return await self.inner(call, context)
        problem = self.check(call) if self.check is not None else None
        if problem is not None:  # an invalid call never reaches a human
            return problem
        if self.approve is None:
            return ToolResult.retry(
                f"{call.name} is a {mode.value}-mode tool{self.unasked}",
                data={"code": ToolErrorCode.CONSENT_REQUIRED, "mode": mode.value},
            )
        try:
            approved = await self.approve(call, mode) is True  # only a plain True is consent
        except Exception as exc:  # fail closed: no answer is no consent
            approved = False
            reason = f" (the consent prompt failed: {type(exc).__name__})"
        else:
            reason = ""
        if context is not None:
            context.record_approval(approved)
        if approved:
            return await self.inner(call, context)
        return ToolResult.retry(
            f"The user did not allow {call.name}{reason}. Do not retry the same call; "
            "continue another way or ask the user.",
            data={"code": ToolErrorCode.CONSENT_DENIED, "mode": mode.value},
        )
