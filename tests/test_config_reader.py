"""Every integer variable of every config is read by one reader, with one set of rules.

``steerable_agent_runtime.config``: ``(variable, default, floor, ceiling)`` declared on the field;
below the floor, above the ceiling, not a number: refused naming the variable; blank: the default
(docs/configuration.md, "How values are read").
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steerable_agent_runtime.config import EnvInt, env_flag, env_text, int_field, int_fields
from steerable_agent_runtime.errors import ConfigError, UserError
from steerable_agent_runtime.sandbox import ResourceLimits, SandboxConfig
from steerable_sidecar._boot import mcp_sources_for
from steerable_sidecar.providers._openai import LLMConfig
from steerable_sidecar.run_code._tool import RunCodeConfig
from steerable_sidecar.web_tools import WebToolsConfig

_LLM_BASE = {"STEERABLE_MODEL": "m", "STEERABLE_API_KEY": "sk-test"}

# each config: the class declaring the fields, how it resolves an environment, and where the value lands
CONFIGS: dict[str, tuple[type[Any], Callable[[dict[str, str]], Any], Callable[[Any, str], int]]] = {
    "sandbox": (
        ResourceLimits,
        lambda env: SandboxConfig.from_env(env),
        lambda config, name: getattr(config.limits, name),
    ),
    "run_code": (RunCodeConfig, lambda env: RunCodeConfig.from_env(env), getattr),
    "web_tools": (WebToolsConfig, lambda env: WebToolsConfig.from_env(env), getattr),
    "llm": (LLMConfig, lambda env: LLMConfig.from_env({**_LLM_BASE, **env}), getattr),
}
CASES = [
    (label, name, spec)
    for label, (cls, _resolve, _value) in CONFIGS.items()
    for name, spec in int_fields(cls).items()
]
IDS = [spec.variable for _label, _name, spec in CASES]


def test_every_config_declares_its_integer_fields_on_the_field() -> None:
    assert {label: len(int_fields(cls)) for label, (cls, _r, _v) in CONFIGS.items()} == {
        "sandbox": 4,
        "run_code": 5,
        "web_tools": 7,
        "llm": 2,  # request_timeout_ms, max_tokens
    }
    for cls, _resolve, _value in CONFIGS.values():
        defaults = cls(**({"model": "m", "api_key": None, "provider": "ollama"} if cls is LLMConfig else {}))
        for name, spec in int_fields(cls).items():
            assert getattr(defaults, name) == spec.default


@pytest.mark.parametrize(("label", "name", "spec"), CASES, ids=IDS)
@pytest.mark.parametrize(
    "raw",
    [
        "below_floor",
        "above_ceiling",
        "garbage",
        "fraction",
        "lone_separator",
        "double_separator",
        "leading_separator",
        "fullwidth_digits",
        "arabic_indic_digit",
        "exponent",
    ],
)
def test_a_bad_value_is_refused_naming_the_variable(label: str, name: str, spec: EnvInt, raw: str) -> None:
    value = {
        "below_floor": str(spec.floor - 1),
        "above_ceiling": str(spec.ceiling + 1),
        "garbage": "lots",
        "fraction": "1.5",
        "lone_separator": "_",
        "double_separator": "1__0",
        "leading_separator": "_1",
        "fullwidth_digits": "\uff11\uff12",
        "arabic_indic_digit": "\u0663",
        "exponent": "1e3",
    }[raw]
    _cls, resolve, _get = CONFIGS[label]
    with pytest.raises(ConfigError) as caught:
        resolve({spec.variable: value})
    assert (
        str(caught.value)
        == f"{spec.variable}={value!r} must be an integer from {spec.floor} to {spec.ceiling}"
    )


@pytest.mark.parametrize(("label", "name", "spec"), CASES, ids=IDS)
@pytest.mark.parametrize("blank", ["", "   ", "\t"])
def test_a_blank_value_is_the_default(label: str, name: str, spec: EnvInt, blank: str) -> None:
    _cls, resolve, get = CONFIGS[label]
    assert get(resolve({spec.variable: blank}), name) == spec.default


@pytest.mark.parametrize(("label", "name", "spec"), CASES, ids=IDS)
def test_the_bounds_are_inclusive_and_separators_allowed(label: str, name: str, spec: EnvInt) -> None:
    _cls, resolve, get = CONFIGS[label]
    assert get(resolve({spec.variable: f" {spec.floor} "}), name) == spec.floor
    assert get(resolve({spec.variable: f"{spec.ceiling:_}"}), name) == spec.ceiling


def test_direct_construction_names_the_field_or_the_variable() -> None:
    with pytest.raises(
        ConfigError, match=r"^RunCodeConfig\.max_calls=-1 must be an integer from 0 to 100000$"
    ):
        RunCodeConfig(max_calls=-1)
    with pytest.raises(ConfigError, match=r"^ResourceLimits\.cpu_seconds=True must be an integer"):
        ResourceLimits(cpu_seconds=True)
    with pytest.raises(ConfigError, match=r"^STEERABLE_REQUEST_TIMEOUT_MS=0 must be an integer from 1 to"):
        LLMConfig(provider="ollama", model="m", request_timeout_ms=0)


def test_a_field_description_with_its_default_out_of_bounds_is_a_programming_error() -> None:
    with pytest.raises(UserError, match="STEERABLE_NOPE"):
        int_field("STEERABLE_NOPE", 0, floor=1, ceiling=2)


def test_text_and_flag_values_are_trimmed_and_blank_is_unset() -> None:
    assert env_text("V", {"V": "  a b  "}) == "a b"
    assert env_text("V", {"V": "   "}) is None
    assert env_text("V", {}) is None
    assert env_flag("V", True, environ={"V": " \t"}) is True
    assert env_flag("V", False, environ={"V": " On "}) is True
    with pytest.raises(ConfigError, match="^V='maybe' is not a boolean"):
        env_flag("V", False, environ={"V": "maybe"})


def test_a_blank_mcp_config_variable_means_no_servers(tmp_path: Path) -> None:
    from steerable_agent_runtime import ToolRouter

    for blank in ("", "  ", "\n"):
        assert mcp_sources_for(ToolRouter(), None, {"STEERABLE_MCP_CONFIG": blank}) is None
    with pytest.raises(ConfigError, match="STEERABLE_MCP_CONFIG"):
        mcp_sources_for(ToolRouter(), None, {"STEERABLE_MCP_CONFIG": str(tmp_path / "missing.json")})


def test_a_blank_state_dir_variable_is_the_default_directory(tmp_path: Path) -> None:
    from steerable_sidecar.shared._state_dir import default_state_dir

    default = default_state_dir({"XDG_STATE_HOME": str(tmp_path)})
    assert default == tmp_path / "steerable"
    for blank in ("", "  ", "\t"):
        assert default_state_dir({"XDG_STATE_HOME": str(tmp_path), "STEERABLE_STATE_DIR": blank}) == default
    chosen = default_state_dir({"STEERABLE_STATE_DIR": f"  {tmp_path / 'mine'}  "})
    assert chosen == tmp_path / "mine"


def test_a_blank_plugin_dir_variable_means_no_plugin_directory(tmp_path: Path) -> None:
    from steerable_agent_runtime.plugins import DirectorySource
    from steerable_sidecar._boot import boot_tools

    env = {"STEERABLE_PLUGIN_DIR": "   ", "STEERABLE_RUN_CODE": "0"}
    assert DirectorySource.from_env(env) is None
    booted = boot_tools(tmp_path, environ=env, web_tools=False)  # not "inside the workspace"
    assert "read_file" in booted.router.names()
    (tmp_path / "plugins").mkdir()
    assert DirectorySource.from_env({"STEERABLE_PLUGIN_DIR": f" {tmp_path / 'plugins'} "}) is not None


def test_every_config_is_frozen(tmp_path: Path) -> None:
    import dataclasses

    from steerable_sidecar.mcp_sources._sources import McpServerConfig
    from steerable_sidecar.sidecar._server import SidecarConfig

    configs: list[Any] = [
        SandboxConfig(),
        ResourceLimits(),
        RunCodeConfig(),
        WebToolsConfig(),
        LLMConfig(provider="ollama", model="m"),
        McpServerConfig(name="s", command="c"),
        SidecarConfig(workspace=tmp_path, state_dir=tmp_path),
    ]
    for config in configs:
        field = dataclasses.fields(config)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(config, field, getattr(config, field))
