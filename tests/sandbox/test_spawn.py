"""``SandboxSpawner``: ``bash``, ``run_code`` and ``web_fetch``'s HTML converter start their children one way.

Each test drives the three for real (bubblewrap, or Landlock) through a backend that records, or
refuses, every plan it is asked for: what the spawner builds is what each of them runs under, and
a refusal reads the same from each.
"""

from __future__ import annotations

import asyncio
import logging
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from steerable_agent_runtime import ToolCall, ToolResult, ToolRouter
from steerable_agent_runtime.errors import SandboxUnavailableError
from steerable_agent_runtime.sandbox import (
    LaunchPlan,
    ResourceLimits,
    SandboxBackend,
    SandboxConfig,
    SandboxInfo,
    SandboxPolicy,
    SandboxSpawner,
    bash_tool,
)
from steerable_sidecar.run_code._tool import RunCodeConfig, run_code_tool
from steerable_sidecar.web_tools._converter import HtmlConverter

REFUSAL = "this test's backend refuses every plan"


@dataclass
class Recording:
    """A real backend that keeps the policy of every plan it makes, or refuses them all."""

    inner: SandboxBackend
    refuse: bool = False
    policies: list[SandboxPolicy] = field(default_factory=list)

    @property
    def info(self) -> SandboxInfo:
        return self.inner.info

    def unavailable_reason(self) -> str | None:
        return self.inner.unavailable_reason()

    def plan(self, argv: Sequence[str], policy: SandboxPolicy, *, private_tmp: Path) -> LaunchPlan:
        if self.refuse:
            raise SandboxUnavailableError(REFUSAL, tried={"test": "refuses every plan"})
        self.policies.append(policy)
        return self.inner.plan(argv, policy, private_tmp=private_tmp)


async def three_calls(
    workspace: Path, config: SandboxConfig, backend: SandboxBackend
) -> tuple[ToolResult, ToolResult, str | None, str]:
    """One bash call, one run_code call, one conversion: their results (the conversion's fallback, text)."""
    router = ToolRouter()
    router.register(bash_tool(workspace, config=config, backend=backend))
    router.register(
        run_code_tool(workspace, router=router, config=RunCodeConfig(), sandbox=config, backend=backend)
    )
    bash = await router.dispatch(ToolCall(id="1", name="bash", arguments={"command": "echo hi"}))
    code = textwrap.dedent("return 6 * 7")
    run_code = await router.dispatch(
        ToolCall(id="2", name="run_code", arguments={"code": code, "description": "x"})
    )
    converter = HtmlConverter(sandbox=config, backend=backend)
    try:
        deadline = asyncio.get_running_loop().time() + 30
        rendered = await converter.convert(
            "<p>hi <b>there</b></p>", base_url=None, max_chars=1000, deadline=deadline
        )
    finally:
        await converter.aclose()
    return bash, run_code, rendered.fallback, rendered.text


async def test_each_child_runs_under_the_policy_the_spawner_builds(workspace: Path, backend: SandboxBackend):
    limits = ResourceLimits(max_output_bytes=4096)
    config = SandboxConfig(network=True, limits=limits)
    recording = Recording(backend)
    bash, run_code, fallback, text = await three_calls(workspace, config, recording)
    assert bash.success and bash.data is not None and bash.data["stdout"] == "hi\n", bash
    assert run_code.success and run_code.data is not None and run_code.data["value"] == 42, run_code
    assert fallback is None and text == "hi **there**\n"
    bash_policy, run_code_policy, converter_policy = recording.policies
    spawner = SandboxSpawner(config)
    root = workspace.resolve()
    # the workspace writable, the configured network and limits; read-only: what the guard found
    assert bash_policy == spawner.policy((root,), read_only=bash_policy.read_only)
    assert run_code_policy == spawner.policy((root,), read_only=run_code_policy.read_only)
    assert bash_policy.network and run_code_policy.network and bash_policy.limits == limits
    # the converter: no writable root, at /, the network off whatever the configuration says
    assert converter_policy == spawner.policy(
        (), cwd="/", network=False, limits=converter_policy.limits, read_only=None
    )
    assert not converter_policy.network and converter_policy.limits.max_processes == 4


async def test_a_refused_plan_reads_the_same_from_bash_run_code_and_the_converter(
    workspace: Path, backend: SandboxBackend, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING, logger="steerable_sidecar.web_tools._converter")
    refusing = Recording(backend, refuse=True)
    bash, run_code, fallback, text = await three_calls(workspace, SandboxConfig(), refusing)
    for result in (bash, run_code):
        assert not result.success and result.error == "sandbox_unavailable", result
        assert result.message == REFUSAL
        assert result.data == {"code": "sandbox_unavailable", "tried": {"test": "refuses every plan"}}
    assert fallback == "the converter could not start" and text == "hi there"
    warned = [r.getMessage() for r in caplog.records if r.name == "steerable_sidecar.web_tools._converter"]
    assert len(warned) == 1 and warned[0].endswith(
        f"sandbox_unavailable: {REFUSAL}; HTML pages are returned as plain text"
    )


async def test_select_returns_the_given_backend_or_refuses_as_select_backend_does(backend: SandboxBackend):
    assert await SandboxSpawner(SandboxConfig(), backend=backend).select() is backend
    with pytest.raises(SandboxUnavailableError) as refused:
        await SandboxSpawner(SandboxConfig(backend="none")).select()
    message = refused.value.message
    assert refused.value.tried and message is not None and "STEERABLE_SANDBOX=none" in message
