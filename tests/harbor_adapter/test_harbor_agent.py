"""steerable_sidecar.harbor.SteerableAgent against Harbor's own classes (issue 30 item 1).

Harbor loads the agent from its import path, as ``harbor run -a`` does; the model flags map to
steerable's variables; ``install`` and ``run`` run their real commands in a local stand-in for the
task container (the container's fixed paths mapped into a temporary folder, the commands executed
by bash); the run's record becomes a ``trajectory.json`` that Harbor's ATIF model accepts and the
trial's token counts. benchmarks/harbor_trials.py runs the same agent in real Docker trials.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from harbor.agents.factory import AgentFactory
from harbor.agents.installed.base import BaseInstalledAgent, NonZeroAgentExitCodeError
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories import Trajectory

from fake_openai import FakeOpenAI
from steerable_sidecar import harbor as adapter
from steerable_sidecar.harbor import SteerableAgent

IMPORT_PATH = "steerable_sidecar.harbor:SteerableAgent"


@dataclass
class ExecResult:
    return_code: int
    stdout: str
    stderr: str


@dataclass
class LocalEnvironment:
    """What the agent calls on a Harbor environment, run here: fixed container paths are mapped."""

    paths: dict[str, str]
    cwd: Path
    default_user: str | None = None
    commands: list[str] = field(default_factory=list)
    uploads: list[tuple[str, str]] = field(default_factory=list)

    def _map(self, text: str) -> str:
        for container, local in self.paths.items():
            text = text.replace(container, local)
        return text

    async def exec(
        self,
        command: str,
        user: str | int | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout_sec: int | None = None,
    ) -> ExecResult:
        self.commands.append(command)
        process = await asyncio.create_subprocess_exec(
            "bash", "-c", self._map(command),
            cwd=self._map(cwd) if cwd else self.cwd,
            env={**os.environ, **(env or {})},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await process.communicate()
        assert process.returncode is not None
        return ExecResult(process.returncode, out.decode(), err.decode())

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        self.uploads.append((str(source_path), target_path))
        target = Path(self._map(target_path))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_path, target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        self.uploads.append((str(source_dir), target_dir))


@pytest.fixture
def trial(tmp_path: Path) -> tuple[Path, LocalEnvironment]:
    """A trial's host logs folder (also the container's, as Docker's bind mount makes it) and env."""
    logs, workspace = tmp_path / "logs", tmp_path / "app"
    logs.mkdir()
    workspace.mkdir()
    paths = {adapter.VENV: sys.prefix, "/installed-agent": str(tmp_path / "installed-agent")}
    return logs, LocalEnvironment(paths=paths, cwd=workspace)


def make_agent(logs: Path, model: str = "openai/scripted", **kwargs: Any) -> SteerableAgent:
    return SteerableAgent(logs_dir=logs, model_name=model, environment_logs_dir=PurePosixPath(logs), **kwargs)


def test_harbor_loads_the_agent_from_its_import_path(tmp_path: Path) -> None:
    """``harbor run -a steerable_sidecar.harbor:SteerableAgent`` builds this class, a real installed agent."""
    agent = AgentFactory.create_agent_from_import_path(
        IMPORT_PATH, logs_dir=tmp_path, model_name="openai/gpt-4o", max_rounds=80, wheelhouse="/w"
    )
    assert isinstance(agent, SteerableAgent) and isinstance(agent, BaseInstalledAgent)
    assert agent.name() == "steerable" and agent.capabilities.atif
    assert agent.build_cli_flags() == "--max-rounds 80"
    schema = json.dumps(SteerableAgent.options_schema())
    for option in ("wheelhouse", "workdir", "harness", "max_rounds", "max_tokens", "temperature"):
        assert option in schema
    with pytest.raises(ValueError, match="max_round"):  # a misspelt option is refused by name
        AgentFactory.create_agent_from_import_path(IMPORT_PATH, logs_dir=tmp_path, max_round=3)


@pytest.mark.parametrize(
    ("model", "extra", "want"),
    [
        (
            "openai/gpt-4o",
            {"base_url": "http://127.0.0.1:9/v1", "extra_env": {"OPENAI_API_KEY": "sk-a"}},
            {"STEERABLE_PROVIDER": "openai", "STEERABLE_MODEL": "gpt-4o",
             "STEERABLE_BASE_URL": "http://127.0.0.1:9/v1", "STEERABLE_API_KEY": "sk-a"},
        ),
        (
            "deepseek/deepseek-chat",
            {"extra_env": {"DEEPSEEK_API_KEY": "sk-d"}},
            {"STEERABLE_PROVIDER": "deepseek", "STEERABLE_MODEL": "deepseek-chat", "STEERABLE_API_KEY": "sk-d"},
        ),
        (
            "openrouter/anthropic/claude-sonnet-4",
            {"extra_env": {"OPENROUTER_API_KEY": "sk-o"}},
            {"STEERABLE_PROVIDER": "openrouter", "STEERABLE_MODEL": "anthropic/claude-sonnet-4",
             "STEERABLE_API_KEY": "sk-o"},
        ),
        (
            "hosted_vllm/qwen3-coder",
            {"base_url": "http://10.0.0.5:8000/v1"},
            {"STEERABLE_PROVIDER": "vllm", "STEERABLE_MODEL": "qwen3-coder",
             "STEERABLE_BASE_URL": "http://10.0.0.5:8000/v1"},
        ),
        (
            "together_ai/meta-llama/Llama-3",
            {"extra_env": {"TOGETHER_API_KEY": "tog-1"}},
            {"STEERABLE_PROVIDER": "together", "STEERABLE_MODEL": "meta-llama/Llama-3",
             "STEERABLE_API_KEY": "tog-1"},
        ),
        (
            "acme_cloud/coder",
            {"base_url": "http://10.0.0.6/v1"},
            {"STEERABLE_PROVIDER": "openai", "STEERABLE_MODEL": "coder", "STEERABLE_BASE_URL": "http://10.0.0.6/v1"},
        ),
    ],
)  # fmt: skip
def test_harbor_model_settings_become_steerables(
    tmp_path: Path, model: str, extra: dict[str, Any], want: dict[str, str]
) -> None:
    """``-m provider/model``, ``--base-url`` and the provider's key reach steerable's variables;
    the container posture and no configuration file are always set."""
    env = make_agent(tmp_path, model, **extra)._run_env()
    assert {key: env.get(key) for key in want} == want
    assert env["STEERABLE_SANDBOX"] == "container" and env["STEERABLE_CONFIG"] == "off"
    assert not [key for key in env if not key.startswith("STEERABLE_")]  # nothing else leaks in


async def test_install_is_offline_from_a_wheelhouse(
    trial: tuple[Path, LocalEnvironment], tmp_path: Path
) -> None:
    """With ``wheelhouse`` the wheels are uploaded and pip never reaches an index."""
    logs, env = trial
    env.paths[adapter.VENV] = str(tmp_path / "venv")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    agent = make_agent(logs, wheelhouse=str(wheels), version="0.1.0")
    with pytest.raises(NonZeroAgentExitCodeError, match="steerable==0.1.0"):  # no wheels in it: pip says so
        await agent.install(env)
    assert env.uploads == [(str(wheels), "/installed-agent/steerable-wheels")]
    assert "--no-index --find-links /installed-agent/steerable-wheels" in env.commands[-1]
    assert f"python3 -m venv {adapter.VENV} && " in env.commands[-1]


async def test_a_trial_run_writes_the_trajectory_and_token_counts(
    trial: tuple[Path, LocalEnvironment], fake_openai: FakeOpenAI
) -> None:
    """run() runs ``steerable run --no-web-tools`` for real; afterwards trajectory.json validates as
    ATIF and the context holds the scripted tokens."""
    logs, env = trial
    fake_openai.script(
        [
            {
                "tool_calls": [
                    {"id": "c1", "name": "bash", "arguments": {"command": "echo $JAVA_HOME | tee out.txt"}}
                ],
                "usage": {"prompt_tokens": 300, "completion_tokens": 30},
            },
            {"text": "Done.", "usage": {"prompt_tokens": 400, "completion_tokens": 5}},
        ]
    )
    agent = make_agent(
        logs, base_url=fake_openai.base_url, extra_env={"OPENAI_API_KEY": "sk-t"}, max_rounds=4
    )
    os.environ["JAVA_HOME"] = "/opt/jdk-21"  # the image's ENV, kept by the container posture
    try:
        await agent.run("Write JAVA_HOME into out.txt.", env, AgentContext())
    finally:
        del os.environ["JAVA_HOME"]
    assert (env.cwd / "out.txt").read_text() == "/opt/jdk-21\n"
    assert (logs / "steerable-exit-code.txt").read_text().strip() == "0"
    assert json.loads((logs / "steerable-summary.json").read_text())["outcome"] == "completed"
    body = fake_openai.requests[0].body
    assert body["model"] == "scripted"
    assert {t["function"]["name"] for t in body["tools"]}.isdisjoint({"web_search", "web_fetch"})  # WEB-2
    context = AgentContext()
    agent.populate_context_post_run(context)
    assert (context.n_input_tokens, context.n_output_tokens, context.n_cache_tokens) == (700, 35, None)
    trajectory = Trajectory.model_validate_json((logs / "trajectory.json").read_text())
    agent_steps = [s for s in trajectory.steps if s.source == "agent"]
    assert [c.function_name for c in agent_steps[0].tool_calls or []] == ["bash"]
    assert agent_steps[0].observation is not None
    assert "/opt/jdk-21" in str(agent_steps[0].observation.results[0].content)
    assert trajectory.final_metrics is not None and trajectory.final_metrics.total_prompt_tokens == 700


async def test_graded_endings_pass_and_provider_failures_raise(
    trial: tuple[Path, LocalEnvironment], fake_openai: FakeOpenAI
) -> None:
    """The round limit (exit 3) leaves the verdict to the verifier; a provider failure (exit 4)
    raises so Harbor's retry policy sees it, with steerable's own message."""
    logs, env = trial
    call = {"tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]}
    fake_openai.script([call, call])
    agent = make_agent(logs, base_url=fake_openai.base_url, extra_env={"OPENAI_API_KEY": "k"}, max_rounds=1)
    await agent.run("loop", env, AgentContext())
    assert (logs / "steerable-exit-code.txt").read_text().strip() == "3"
    fake_openai.reset()
    fake_openai.script([{"status": 401, "body": {"error": {"message": "Incorrect API key provided"}}}])
    with pytest.raises(NonZeroAgentExitCodeError, match="Incorrect API key provided"):
        await agent.run("again", env, AgentContext())
    assert (logs / "steerable-exit-code.txt").read_text().strip() == "4"


def test_no_record_leaves_the_context_empty(tmp_path: Path) -> None:
    """A run that never started writes no trajectory and invents no token counts."""
    context = AgentContext()
    make_agent(tmp_path).populate_context_post_run(context)
    assert context.n_input_tokens is None and not (tmp_path / "trajectory.json").exists()


async def test_install_without_a_python_311_says_what_to_do(trial: tuple[Path, LocalEnvironment]) -> None:
    """An image without Python 3.11+ fails the install with the fix, before pip runs."""
    logs, env = trial
    agent = make_agent(logs, python="/usr/bin/python3.9")
    with pytest.raises(RuntimeError) as raised:
        await agent.install(env)
    assert str(raised.value) == (
        "steerable needs Python 3.11 or newer with venv in the container; /usr/bin/python3.9 is missing "
        "or older (not found): pass --ak python=/path/to/python3.11 or use an image that has it"
    )
    assert len(env.commands) == 1  # the probe only


def test_an_unknown_provider_without_an_endpoint_is_refused(tmp_path: Path) -> None:
    """Its key never goes to another vendor's default URL."""
    agent = make_agent(tmp_path, "acme_cloud/coder", extra_env={"ACME_CLOUD_API_KEY": "k"})
    with pytest.raises(ValueError, match="steerable does not know the provider 'acme_cloud'"):
        agent._run_env()


@pytest.mark.parametrize(
    ("effort", "flag"),
    [("xhigh", "--thinking high"), ("minimal", "--thinking low"), ("none", "--thinking off")],
)
async def test_effort_levels_become_thinking(
    trial: tuple[Path, LocalEnvironment], fake_openai: FakeOpenAI, effort: str, flag: str
) -> None:
    """Harbor's ``--effort`` (OpenAI's and LiteLLM's levels) reaches ``steerable run --thinking``,
    which checks it against the endpoint's profile: a loopback server's generic profile has no
    thinking switch, so steerable refuses the setting (exit 2) before any model call."""
    logs, env = trial
    agent = make_agent(
        logs, base_url=fake_openai.base_url, extra_env={"OPENAI_API_KEY": "k"}, reasoning_effort=effort
    )
    with pytest.raises(
        NonZeroAgentExitCodeError, match="STEERABLE_THINKING is set, but the openai-compatible"
    ):
        await agent.run("nothing", env, AgentContext())
    assert f" {flag} " in env.commands[-1]
    assert fake_openai.requests == []


async def test_links_the_container_planted_in_the_logs_folder_are_replaced_not_followed(
    trial: tuple[Path, LocalEnvironment], fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """The agent's logs folder is the host's (Docker's bind mount) and the container's to write: a
    link planted there never makes the host write through it, and a linked record is not read."""
    logs, env = trial
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (logs / "steerable-exit-code.txt").symlink_to(victim)
    (logs / "trajectory.json").symlink_to(victim)
    fake_openai.script([{"text": "Done.", "usage": {"prompt_tokens": 9, "completion_tokens": 1}}])
    agent = make_agent(logs, base_url=fake_openai.base_url, extra_env={"OPENAI_API_KEY": "k"})
    await agent.run("nothing", env, AgentContext())
    agent.populate_context_post_run(AgentContext())
    assert victim.read_text() == "precious\n"
    assert not (logs / "steerable-exit-code.txt").is_symlink()
    assert (logs / "steerable-exit-code.txt").read_text() == "0\n"
    assert not (logs / "trajectory.json").is_symlink()
    record = logs / "steerable" / "sessions" / "harbor.jsonl"
    record.unlink()
    record.symlink_to(victim)
    context = AgentContext()
    agent.populate_context_post_run(context)
    assert context.n_input_tokens is None
