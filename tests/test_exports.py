"""The public surface is listed once, sorted, and complete."""

import importlib
import types

import pytest

SPEC_NAMES = {
    "steerable_agent_runtime": {
        "ToolCall",
        "ToolResult",
        "ToolMode",
        "ToolExposure",
        "ToolRouter",
        "decide_tool_mode",
        "is_terminal_result",
        "tool",
        "workspace_tools_for_cwd",
        "read_file_state_from_messages",
        "SteerableError",
    },
    "steerable_sidecar": {"main"},
}


@pytest.mark.parametrize("module_name", sorted(SPEC_NAMES))
def test_all_is_sorted_and_matches_the_public_namespace(module_name):
    module = importlib.import_module(module_name)
    exported = module.__all__
    # RUF022 ("isort-style") order: CONSTANTS, then Classes, then functions, each alphabetical.
    assert exported == sorted(exported, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    public = {
        name
        for name, value in vars(module).items()
        if (not name.startswith("_") or name == "__version__") and not isinstance(value, types.ModuleType)
    }
    assert "__version__" in public
    assert public == set(exported)
    for name in exported:
        assert hasattr(module, name), name


@pytest.mark.parametrize("module_name", sorted(SPEC_NAMES))
def test_spec_names_are_importable_from_the_top_level(module_name):
    module = importlib.import_module(module_name)
    assert SPEC_NAMES[module_name] <= set(module.__all__)


def test_error_tree_has_one_root():
    from steerable_agent_runtime import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.SteerableError), name
