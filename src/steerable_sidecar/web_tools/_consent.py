"""The first ``web_fetch`` of a host in an interactive session asks the person first (SAFE-4).

A page the model fetched can tell it to read ``.env`` and fetch ``https://<secret>.attacker.example/``:
the secret would leave in the DNS lookup and the request. Where a person can be asked (a sidecar
chat's ``approval.request``, ACP's ``session/request_permission``, an MCP client's elicitation),
:class:`FetchConsent` is the session's :class:`~steerable_agent_runtime.executor.ConsentQuestions`:
the :class:`~steerable_agent_runtime.executor.ApprovalGate` puts the first fetch of each host to
the person before any DNS or network work, and a yes covers that exact host for the rest of the
session. docs/web-tools.md, "Consent for a new host", has the whole rule and what it leaves open.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from steerable_agent_runtime.errors import WebError

from ._config import WebToolsConfig
from ._domains import ip_literal
from ._tools import WEB_FETCH_TOOL_NAME

if TYPE_CHECKING:  # the executor (with the wire types: pydantic) loads at the first question, not at attach
    from steerable_agent_runtime.executor import ConsentQuestion
    from steerable_agent_runtime.types import ToolCall

    from ._policy import DomainPolicy

__all__ = ["FetchConsent", "fetch_question_text"]


class FetchConsent:
    """One session's ``web_fetch`` hosts: which the person allowed, and which need the question.

    A ``web_fetch`` call gets a :class:`ConsentQuestion` (``reason="new_domain"``, the whole host,
    the URL) unless: its URL fails the URL checks, its host is refused by the domain policy or is
    an address the SSRF check refuses (the tool refuses all three without any network work), the
    host was allowed earlier in the session, or ``STEERABLE_WEB_FETCH_TRUSTED_DOMAINS`` covers it
    (an entry covers its host and every subdomain, the domain policy's rule). An allowed host is
    that exact host: allowing ``docs.example.com`` covers neither ``x.docs.example.com`` nor
    ``example.com``. No other tool gets a question.

    Args:
        config: The web tools' configuration: its trusted list and domain policy (default:
            :class:`WebToolsConfig` defaults, nothing trusted).
    """

    def __init__(self, config: WebToolsConfig | None = None) -> None:
        self._config = WebToolsConfig() if config is None else config
        self._allowed: set[str] = set()
        self._policies: tuple[DomainPolicy, DomainPolicy | None] | None = None

    @property
    def allowed(self) -> frozenset[str]:
        """The hosts the person allowed in this session."""
        return frozenset(self._allowed)

    def question(self, call: ToolCall) -> ConsentQuestion | None:
        """The question a ``web_fetch`` call needs before it runs, or ``None`` (see the class)."""
        if call.name != WEB_FETCH_TOOL_NAME:
            return None
        url = call.arguments.get("url") if isinstance(call.arguments, Mapping) else None
        if not isinstance(url, str):
            return None  # the tool's own validation answers it
        from ._policy import address_refusal, url_host, validate_url  # httpx: at the first web_fetch

        try:
            host = url_host(validate_url(url))
        except WebError:
            return None  # refused as invalid_url before any network work
        policy, trusted = self._policy()
        if host in self._allowed or not policy.allows(host):
            return None  # allowed already, or refused by the domain policy before any DNS
        if ip_literal(host) is not None and address_refusal(host) is not None:
            return None  # a loopback or private address: refused by the SSRF check, no network work
        if trusted is not None and trusted.allows(host):
            return None
        from steerable_agent_runtime.executor import ConsentQuestion

        return ConsentQuestion("new_domain", host, url.strip())

    def granted(self, question: ConsentQuestion) -> None:
        """The person allowed ``question.domain``: later fetches of that host ask no more."""
        self._allowed.add(question.domain)

    def restore(self, hosts: Iterable[str]) -> None:
        """Allow ``hosts`` again, as :attr:`allowed` gave them (a session booted again)."""
        self._allowed.update(hosts)

    def _policy(self) -> tuple[DomainPolicy, DomainPolicy | None]:
        """The domain policy, and the trusted list as a policy of its own (``None`` when empty)."""
        if self._policies is None:
            from ._policy import DomainPolicy

            trusted = self._config.fetch_trusted_domains
            self._policies = (
                DomainPolicy.from_config(self._config),
                DomainPolicy(allowed=trusted) if trusted else None,  # an empty allow-list allows all
            )
        return self._policies


def fetch_question_text(question: ConsentQuestion) -> str:
    """What a person is asked about a new host: the whole host, the URL, what a yes means.

    Shown by ``steerable acp`` (the permission request's title) and ``steerable mcp`` (the
    elicitation's message); the sidecar's host writes its own from ``approval.request``'s fields.
    """
    return (
        f"Allow web_fetch to reach {question.domain}? It asks for {question.url} (the host name, "
        f"path and query reach that server and DNS). Yes allows {question.domain} for the rest of "
        "this session."
    )
