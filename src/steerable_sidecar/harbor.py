"""steerable as a Harbor installed agent: ``harbor run -a steerable_sidecar.harbor:SteerableAgent``.

Harbor (PyPI ``harbor``, Python 3.12+) runs eval trials such as Terminal-Bench 2.x in containers,
locally under Docker or on cloud environments. This adapter installs steerable in the task
container (offline from a wheelhouse, or from the package index), runs ``steerable run
--no-web-tools`` in the task's working directory with the container posture
(``STEERABLE_SANDBOX=container``), and afterwards fills the trial's token counts and writes an ATIF
``trajectory.json`` converted from the session's durable record (:mod:`steerable_sidecar.run._atif`).

Importing this module needs Harbor (the ``harbor`` extra); nothing else in steerable imports it.
docs/harbor.md is the guide: a local trial, a TB 2.x run, fan-out on a cloud environment.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from typing import Annotated, Final

from harbor.agents.agent_auth_resolution import ModelConnectionSpec, ProviderAccess
from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
from harbor.agents.options import Cli, InstalledAgentOptions
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.model_api_format import ModelApiFormat
from harbor.models.trajectories import Trajectory
from pydantic import Field

from steerable_agent_runtime import __version__

from .providers._openai import PROVIDER_NAMES
from .run._atif import read_record, record_to_atif

__all__ = ["SESSION_ID", "VENV", "SteerableAgent", "SteerableOptions"]

VENV: Final = "/opt/steerable"
"""Where steerable is installed in the container (a virtual environment of the image's python3)."""
SESSION_ID: Final = "harbor"
"""The session id of the trial's run; its record is ``/logs/agent/steerable/sessions/harbor.jsonl``."""

_WHEELHOUSE: Final = "/installed-agent/steerable-wheels"
_INSTRUCTION: Final = "/installed-agent/steerable-instruction.md"
_STATE: Final = "steerable"  # under the agent logs folder, which Harbor brings back to the host
_EXIT_FILE: Final = "steerable-exit-code.txt"
_SUMMARY_FILE: Final = "steerable-summary.json"
_LOG_FILE: Final = "steerable.txt"
_TAIL_BYTES: Final = 65536
_GRADED_EXITS: Final = frozenset({0, 1, 3, 5, 6, 7})
"""Runs that ended on the model's account (done, failed, round limit, cut off, empty, refused): the
verifier grades the work. Anything else (provider, configuration, internal error, a signal) raises."""
_THINKING: Final = {
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "high",
    "minimal": "low",
    "none": "off",
    "off": "off",
    "on": "on",
}
"""Harbor's ``--effort`` (OpenAI's and LiteLLM's levels) as ``steerable run --thinking``."""
# LiteLLM's provider names (Harbor's -m) that steerable spells otherwise
_PROVIDER_ALIASES: Final = {
    "together_ai": "together",
    "fireworks_ai": "fireworks",
    "zai": "glm",
    "zhipuai": "glm",
    "dashscope": "qwen",
    "hosted_vllm": "vllm",
    "lm_studio": "lm-studio",
    "llamacpp": "llama-cpp",
    "llama_cpp": "llama-cpp",
    "azure_ai": "azure",
}


class SteerableOptions(InstalledAgentOptions):  # type: ignore[misc]  # Harbor is Any to mypy here
    """The ``--ak`` options (``harbor run --ak wheelhouse=DIR --ak max_rounds=80``)."""

    wheelhouse: str | None = Field(
        default=None,
        description="A host folder of wheels (steerable and its dependencies, built for the "
        "container's Python) to install from offline; default: the package index.",
    )
    python: str | None = Field(
        default=None,
        description="The container's Python 3.11+ to build steerable's venv with; default: python3.",
    )
    workdir: str | None = Field(
        default=None, description="The workspace in the container; default: its working directory."
    )
    harness: Annotated[str | None, Cli("--harness")] = Field(
        default=None, description="Offered tools: full (default), minimal or progressive."
    )
    max_rounds: Annotated[int | None, Cli("--max-rounds")] = Field(
        default=None, description="Model calls at most (steerable's default: 50)."
    )
    max_tokens: Annotated[int | None, Cli("--max-tokens")] = Field(
        default=None, description="Output bound per model call; 0 sends none."
    )
    temperature: Annotated[float | None, Cli("--temperature")] = Field(
        default=None, description="Sampling temperature, 0 to 2."
    )


class SteerableAgent(BaseInstalledAgent):  # type: ignore[misc]  # Harbor is Any to mypy here
    """steerable in a Harbor trial (installed agent); see the module docstring."""

    capabilities = AgentCapabilities(base_url=True, atif=True, reasoning_effort=True)
    MODEL_CONNECTION = ModelConnectionSpec(
        default_provider="openai",
        agent_provider_access=ProviderAccess(
            api_key_candidate_names=["STEERABLE_API_KEY", "OPENAI_API_KEY"],
            base_url_candidate_names=["STEERABLE_BASE_URL", "OPENAI_BASE_URL"],
        ),
        api_key_destination_names={"default": "STEERABLE_API_KEY"},
        base_url_destination_names={"default": "STEERABLE_BASE_URL"},
        supported_api_formats=[ModelApiFormat.OPENAI_CHAT_COMPLETIONS],
        default_api_format_by_provider={"default": ModelApiFormat.OPENAI_CHAT_COMPLETIONS},
    )
    options_model = SteerableOptions

    @staticmethod
    def name() -> str:
        """The agent's name in Harbor's records."""
        return "steerable"

    def get_version_command(self) -> str | None:
        """``steerable --version`` of the installed copy."""
        return f"{VENV}/bin/steerable --version"

    def parse_version(self, stdout: str) -> str:
        """The version number out of ``steerable X.Y.Z``."""
        return stdout.strip().split()[-1] if stdout.strip() else ""

    # -- install ---------------------------------------------------------------------------------

    async def install(self, environment: BaseEnvironment) -> None:
        """Install steerable into :data:`VENV` with the image's ``python3`` (3.11 or newer).

        Offline from the ``wheelhouse`` option when given (uploaded, then ``pip install
        --no-index``), else from the package index. A missing or old ``python3`` is installed with
        the image's package manager first (that needs the network); the ``python`` option names
        another interpreter.

        Raises:
            RuntimeError: No Python 3.11+ in the container, or a command failed (Harbor's error,
                with its output).
        """
        python = shlex.quote(self._options.python or "python3")
        probe = await environment.exec(command=_python_probe(python), user="root")
        if probe.return_code != 0 and not self._options.python:
            await self.ensure_system_dependencies(environment, ("python3", "python_venv"))
            probe = await environment.exec(command=_python_probe(python), user="root")
        if probe.return_code != 0:
            raise RuntimeError(
                f"steerable needs Python 3.11 or newer with venv in the container; {python} is "
                f"missing or older ({(probe.stdout or '').strip() or 'not found'}): pass "
                "--ak python=/path/to/python3.11 or use an image that has it"
            )
        requirement = f"steerable=={self._version}" if self._version else "steerable"
        source = "--no-cache-dir"
        if self._options.wheelhouse:
            await environment.upload_dir(Path(self._options.wheelhouse).expanduser(), _WHEELHOUSE)
            source = f"--no-index --find-links {_WHEELHOUSE}"
        await self.exec_as_root(
            environment,
            command=(
                f"{python} -m venv {VENV} && "
                f"{VENV}/bin/python -m pip install -q --disable-pip-version-check {source} "
                f"{shlex.quote(requirement)} && {VENV}/bin/steerable --version && "
                # `steerable jobs`, which bash results name, on PATH (not the venv's python3)
                f"{{ [ -e /usr/local/bin/steerable ] "
                f"|| ln -s {VENV}/bin/steerable /usr/local/bin/ 2>/dev/null || true; }}"
            ),
        )

    # -- run -------------------------------------------------------------------------------------

    @with_prompt_template  # type: ignore[untyped-decorator]
    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        """Run ``steerable run --no-web-tools`` on the instruction, in the container posture.

        The exit codes of a run that ended on the model's account (0 done, 1 failed, 3 round limit,
        5 cut off, 6 empty answers, 7 refused) let the verifier grade the work; the others (2
        configuration, 4 provider, 70 internal, 75 session busy, 128+n a signal) raise
        :class:`NonZeroAgentExitCodeError` (classified by Harbor's patterns), so its retry policy
        sees them.
        """
        with tempfile.TemporaryDirectory(prefix="steerable-harbor-") as folder:
            local = Path(folder) / "instruction.md"
            local.write_text(instruction, encoding="utf-8")
            await environment.upload_file(local, _INSTRUCTION)
        logs = PurePosixPath(self.environment_logs_dir)
        flags = self.build_cli_flags()
        thinking = _THINKING.get((self._options.reasoning_effort or "").lower())
        if thinking:
            flags += f" --thinking {thinking}"
        cd = f"cd {shlex.quote(self._options.workdir)} && " if self._options.workdir else ""
        command = (
            f"{cd}exec {VENV}/bin/steerable run --no-web-tools --ask-user off "
            f"--session-id {SESSION_ID} --state-dir {logs / _STATE} "
            f"--instruction-file {_INSTRUCTION} {flags} "
            f"> {logs / _SUMMARY_FILE} 2> {logs / _LOG_FILE}"
        )
        # `exec`: steerable replaces the shell, so no other process in the container holds the
        # key in its environment; steerable stars it out of its own (docs/sandbox.md)
        ran = await environment.exec(command=command, env=self._run_env())
        _write_host_file(Path(self.logs_dir) / _EXIT_FILE, f"{ran.return_code}\n")
        if ran.return_code in _GRADED_EXITS:
            return
        said = self._host_text(_SUMMARY_FILE) + self._host_text(_LOG_FILE)
        if not said:  # not mounted (a cloud environment): ask the container (a short `cat`)
            said = (await environment.exec(command=f"cat {logs / _SUMMARY_FILE} {logs / _LOG_FILE}")).stdout
        failed = SimpleNamespace(return_code=ran.return_code, stdout=said, stderr=ran.stderr)
        raise self._classify_exec_error(command, failed)

    def _host_text(self, name: str) -> str:
        """The last 64 KiB of a file in the agent's logs folder on the host.

        '' when it is absent, a link (the container may plant one) or unreadable.
        """
        try:
            fd = os.open(Path(self.logs_dir) / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return ""
        with os.fdopen(fd, "rb") as source:
            try:
                source.seek(max(0, os.fstat(fd).st_size - _TAIL_BYTES))
                return source.read(_TAIL_BYTES).decode("utf-8", "replace")
            except OSError:
                return ""

    def _run_env(self) -> dict[str, str]:
        access = self.model_connection
        env = {key: value for key, value in access.env.items() if key.startswith("STEERABLE_")}
        if access.api_key:
            env["STEERABLE_API_KEY"] = access.api_key
        base_url = access.execution_base_url or env.get("STEERABLE_BASE_URL")
        if base_url:
            env["STEERABLE_BASE_URL"] = base_url
        provider, model = _split_model(self.model_name or "", self.skip_model_parsing)
        provider = _PROVIDER_ALIASES.get(provider, provider)
        if provider not in PROVIDER_NAMES:
            if not base_url:  # never send this provider's key to another vendor's default URL
                raise ValueError(
                    f"steerable does not know the provider {provider!r} of model {self.model_name!r}: "
                    "pass its OpenAI-compatible endpoint with --base-url, or use one of "
                    f"{', '.join(sorted(PROVIDER_NAMES))}"
                )
            provider = "openai"
        env["STEERABLE_PROVIDER"] = provider
        if model:
            env["STEERABLE_MODEL"] = model
        env["STEERABLE_SANDBOX"] = "container"
        env["STEERABLE_CONFIG"] = "off"  # the trial's settings are these, not a file in the image
        return env

    # -- after the run ---------------------------------------------------------------------------

    def populate_context_post_run(self, context: AgentContext) -> None:
        """Fill token counts and write ``trajectory.json`` (ATIF) from the durable record.

        Nothing is filled when the record is missing, a link (the folder is the container's to
        write) or unreadable; token counts come from the record even when the trajectory does not
        validate as ATIF (logged, then not written). Never fatal to the trial.
        """
        record = Path(self.logs_dir) / _STATE / "sessions" / f"{SESSION_ID}.jsonl"
        try:
            if record.is_symlink() or not record.is_file():
                return
            entries = read_record(record)
        except OSError as exc:
            self.logger.warning(f"steerable: cannot read the session record {record}: {exc}")
            return
        data = record_to_atif(
            entries, session_id=SESSION_ID, agent_version=__version__, model_name=self.model_name
        )
        final = data["final_metrics"]
        if "total_prompt_tokens" in final:
            context.n_input_tokens = final["total_prompt_tokens"]
            context.n_output_tokens = final["total_completion_tokens"]
            context.n_cache_tokens = final.get("total_cached_tokens")
        try:
            trajectory = Trajectory.model_validate(data)
        except ValueError as exc:
            self.logger.warning(f"steerable: the trajectory does not validate as ATIF: {exc}")
            return
        _write_host_file(
            Path(self.logs_dir) / "trajectory.json", json.dumps(trajectory.to_json_dict(), indent=2)
        )

    @property
    def _options(self) -> SteerableOptions:
        options = self.options
        return options if isinstance(options, SteerableOptions) else SteerableOptions()


def _write_host_file(path: Path, text: str) -> None:
    """Write ``path`` whole, replacing (never following) a link the container may have put there."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.unlink(missing_ok=True)
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(partial, path)


def _python_probe(python: str) -> str:
    """A command that fails unless ``python`` is 3.11+ with venv; it prints the version."""
    check = "import sys, venv, ensurepip; print(sys.version.split()[0]); sys.exit(sys.version_info < (3, 11))"
    return f"command -v {python} >/dev/null && {python} -c {shlex.quote(check)}"


def _split_model(name: str, opaque: bool) -> tuple[str, str]:
    """``provider/model`` into its parts (``openai`` when there is no provider)."""
    if opaque or "/" not in name:
        return "openai", name
    provider, model = name.split("/", 1)
    return provider.lower(), model
