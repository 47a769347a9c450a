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

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Literal, Protocol, cast

from ._codes import ToolErrorCode
from ._executor_shape import AnyExecutor, taking_context
from .context import CallContext, ToolExecutor
from .modes import ConsentPolicy, ConsentVerdict, ToolMode, decide_tool_mode, policy_mode, requires_consent
from .tools import ToolRouter
from .types import ToolCall, ToolResult

__all__ = [
    "ApprovalGate",
    "ApprovalHandler",
    "ConsentQuestion",
    "ConsentQuestions",
    "ToolExecutor",
    "approve_all",
    "mode_lookup",
    "takes_question",
]


_UNASKED = " and needs the user's consent, which nobody can give here"

ApprovalHandler = Callable[[ToolCall, ToolMode], Awaitable[bool]]
"""Asks for consent for one call of the given mode; ``True`` (exactly: ``is True``) runs it.

A handler that also accepts a keyword argument ``question`` (:func:`takes_question`) is given the
:class:`ConsentQuestion` when the prompt is about more than the call's mode (the first
``web_fetch`` of a host, SAFE-4), else ``question=None``; one that does not is called with the
two arguments only, and sees that call with its own mode (``read``)."""


@dataclass(frozen=True, slots=True)
class ConsentQuestion:
    """Why a call whose mode runs unasked is put to the user all the same (SAFE-4).

    Attributes:
        reason: ``"new_domain"``: the first ``web_fetch`` of ``domain`` in the session.
        domain: The whole host the call would reach, as it is connected to (lowercase, IDNA
            A-labels, no trailing dot), e.g. ``"a1b2c3.attacker.example"``.
        url: The URL the call asks for, as the model wrote it (surrounding spaces dropped).
    """

    reason: Literal["new_domain"]
    domain: str
    url: str

    def to_wire(self) -> dict[str, str]:
        """``{"reason", "domain", "url"}``, as ``approval.request`` carries them."""
        return {"reason": self.reason, "domain": self.domain, "url": self.url}


class ConsentQuestions(Protocol):
    """A session's questions about calls whose mode needs no consent (an :class:`ApprovalGate`'s).

    The web tools' ``FetchConsent`` is one: the first ``web_fetch`` of each host in a session.
    """

    def question(self, call: ToolCall) -> ConsentQuestion | None:
        """The question ``call`` needs before it runs, or ``None``: it runs (or not) by its mode."""
        ...

    def granted(self, question: ConsentQuestion) -> None:
        """The user said yes to ``question``: the calls it covers ask no more in this session."""
        ...


class _AskingHandler(Protocol):
    def __call__(
        self, call: ToolCall, mode: ToolMode, *, question: ConsentQuestion | None
    ) -> Awaitable[bool]: ...


def takes_question(handler: Callable[..., object]) -> bool:
    """Whether ``handler(a, b, question=...)`` binds: the handler wants the :class:`ConsentQuestion`.

    Read from the signature (never by calling it); a callable whose signature cannot be read is
    taken to want two arguments.
    """
    try:
        inspect.signature(handler).bind(None, None, question=None)
    except (TypeError, ValueError):
        return False
    return True


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


def _refused(call: ToolCall, mode: ToolMode, policy: ConsentPolicy) -> ToolResult:
    """``consent_denied`` by the session's policy: the user's standing choice, nobody is asked."""
    judged = policy_mode(mode, call.name)
    article = "an" if judged.value[0] in "aeiou" else "a"
    return ToolResult.retry(
        f"The session is in {policy.name} mode, which does not allow {call.name} ({article} "
        f"{judged.value}-mode tool). Continue with the tools it allows, or ask the user to switch the mode.",
        data={"code": ToolErrorCode.CONSENT_DENIED, "mode": judged.value, "policy": policy.name},
    )


class ApprovalGate:
    """Decide consent for every call (the one place that does): run it, ask, or refuse.

    Spec: ToolMode (``local`` requires consent). A call needing consent is checked, then put to
    ``approve``: only exactly ``True`` is consent; a refusal or a raising prompt gives
    ``consent_denied``, ``approve=None`` gives ``consent_required`` (both ``needsFollowup``), and
    the decision lands in ``context.approved``. A call ``questions`` has a question about (the
    first ``web_fetch`` of a host, SAFE-4) needs consent whatever its mode: the question goes to
    ``approve`` with the call, one question at a time, and a yes is handed back to
    ``questions.granted``. The rules and which entry point uses which gate: docs/runtime.md,
    "Consent: which gate each entry point uses".

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
        questions: The session's questions about calls their mode lets run (see
            :class:`ConsentQuestions`); ``None``: none, consent goes by mode alone.
        policy: The session's consent policy, or a callable giving the current one (a policy
            the user switches mid-session, e.g. an editor's mode picker): its ``ask`` modes
            replace ``consent_modes``, and a call of one of its ``refuse`` modes gets
            ``consent_denied`` without a prompt. ``None``: ``consent_modes`` alone.
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
        questions: ConsentQuestions | None = None,
        policy: ConsentPolicy | Callable[[], ConsentPolicy] | None = None,
    ) -> None:
        self.inner = taking_context(inner)
        self.approve = approve
        self.mode_of = mode_of
        self.check = check
        self.unasked = _UNASKED if unasked is None else unasked
        self.questions = questions
        self.consent_modes = (
            frozenset(consent_modes)
            if consent_modes is not None
            else frozenset(m for m in ToolMode if requires_consent(m))
        )
        self._policy = (lambda: policy) if isinstance(policy, ConsentPolicy) else policy
        self._asks_questions = approve is not None and takes_question(approve)
        self._one_question = asyncio.Lock()  # a batch's fetches of one new host share one answer

    @classmethod
    def for_router(
        cls,
        router: ToolRouter,
        *,
        approve: ApprovalHandler | None,
        unasked: str | None = None,
        questions: ConsentQuestions | None = None,
        policy: ConsentPolicy | Callable[[], ConsentPolicy] | None = None,
    ) -> ApprovalGate:
        """The gate over ``router.dispatch``: the router's modes, its validation before any prompt."""
        return cls(
            router.dispatch,
            approve=approve,
            mode_of=mode_lookup(router),
            check=router.check,
            unasked=unasked,
            questions=questions,
            policy=policy,
        )

    async def __call__(self, call: ToolCall, context: CallContext | None = None, /) -> ToolResult:
        """Run ``call`` if neither its mode nor a question needs consent, or ``approve`` grants it."""
        mode = self.mode_of(call.name)
        verdict = self._verdict(mode, call.name)
        if verdict == "refuse":
            return self._refuse(call, mode, context)
        by_mode = verdict == "ask"
        question = self.questions.question(call) if self.questions is not None else None
        if not by_mode and question is None:
            return await self.inner(call, context)
        problem = self.check(call) if self.check is not None else None
        if problem is not None:  # an invalid call never reaches a human
            return problem
        shown = mode if mode is not None else decide_tool_mode(call.name)
        if self.approve is None:
            return self._unasked(call, shown, question)
        asked = await self._consent(call, shown, question, by_mode=by_mode)
        if asked is None:
            return await self.inner(call, context)  # allowed while it waited: no prompt ran
        approved, failure, question = asked
        if approved and self._verdict(mode, call.name) == "refuse":  # the mode changed while it asked
            return self._refuse(call, mode, context)
        if context is not None:
            context.record_approval(approved)
        if approved:
            return await self.inner(call, context)
        target = call.name if question is None else f"{call.name} to reach {question.domain}"
        data: dict[str, str] = {"code": ToolErrorCode.CONSENT_DENIED, "mode": shown.value}
        if question is not None:
            data["domain"] = question.domain
        return ToolResult.retry(
            f"The user did not allow {target}{failure}. Do not retry the same call; "
            "continue another way or ask the user.",
            data=data,
        )

    async def _consent(
        self, call: ToolCall, shown: ToolMode, question: ConsentQuestion | None, *, by_mode: bool
    ) -> tuple[bool, str, ConsentQuestion | None] | None:
        """Ask ``approve``: ``(consent, why the prompt failed, the question asked)``.

        ``None``: a question answered meanwhile covers the call, and its mode needs no consent.
        """
        if question is None:
            approved, failure = await self._ask(call, shown, None)
            return approved, failure, None
        async with self._one_question:  # the answer to a question asked meanwhile may cover it
            question = self.questions.question(call) if self.questions is not None else None
            if question is None and not by_mode:
                return None
            approved, failure = await self._ask(call, shown, question)
            if approved and question is not None and self.questions is not None:
                self.questions.granted(question)
        return approved, failure, question

    def _refuse(self, call: ToolCall, mode: ToolMode | None, context: CallContext | None) -> ToolResult:
        """The policy's refusal, recorded as no consent."""
        assert mode is not None and self._policy is not None
        if context is not None:
            context.record_approval(False)
        return _refused(call, mode, self._policy())

    def _verdict(self, mode: ToolMode | None, name: str) -> ConsentVerdict:
        """What the policy (else ``consent_modes``) says of a call of ``mode``; ``None``: run."""
        if mode is None:
            return "run"
        if self._policy is not None:
            return self._policy().verdict(mode, name)
        return "ask" if mode in self.consent_modes else "run"

    async def _ask(
        self, call: ToolCall, mode: ToolMode, question: ConsentQuestion | None
    ) -> tuple[bool, str]:
        """Put the call to ``approve``: ``(consent, why the prompt failed or "")``; fails closed."""
        assert self.approve is not None
        try:
            if self._asks_questions:
                answer = await cast(_AskingHandler, self.approve)(call, mode, question=question)
            else:
                answer = await self.approve(call, mode)
        except Exception as exc:  # fail closed: no answer is no consent
            return False, f" (the consent prompt failed: {type(exc).__name__})"
        return answer is True, ""  # only a plain True is consent

    def _unasked(self, call: ToolCall, mode: ToolMode, question: ConsentQuestion | None) -> ToolResult:
        """``consent_required``: the call needs consent and nobody can be asked here."""
        if question is None:
            return ToolResult.retry(
                f"{call.name} is a {mode.value}-mode tool{self.unasked}",
                data={"code": ToolErrorCode.CONSENT_REQUIRED, "mode": mode.value},
            )
        return ToolResult.retry(
            f"{call.name} would reach {question.domain} for the first time in this session{self.unasked}",
            data={"code": ToolErrorCode.CONSENT_REQUIRED, "mode": mode.value, "domain": question.domain},
        )
