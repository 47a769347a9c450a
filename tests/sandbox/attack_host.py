"""A stand-in sidecar for the attack table: it holds canary secrets and runs attacks through ``bash``.

The canaries are in this process's *exec* environment (what ``/proc/<pid>/environ`` shows), just
as a real sidecar's API keys are. ``tests/sandbox/test_attacks.py`` starts it with the workspace
as the only argument and a JSON object ``{name: command}`` on stdin; ``{host_pid}`` in a command
becomes this process's pid. It prints ``{name: ToolResult}`` as JSON, then a last ``alive`` call
made after every attack, to show the sidecar is still serving.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from steerable_agent_runtime import ToolCall, workspace_tools_for_cwd


async def main() -> None:
    router = workspace_tools_for_cwd(sys.argv[1])
    attacks: dict[str, str] = json.load(sys.stdin)
    results = {}
    for name, command in attacks.items():
        arguments = {"command": command.replace("{host_pid}", str(os.getpid())), "timeout_ms": 8000}
        result = await router.dispatch(ToolCall(id=name, name="bash", arguments=arguments))
        results[name] = result.model_dump(by_alias=True, exclude_none=True)
    alive = await router.dispatch(ToolCall(id="alive", name="bash", arguments={"command": "echo alive"}))
    results["alive"] = alive.model_dump(by_alias=True, exclude_none=True)
    print(json.dumps(results))


if __name__ == "__main__":
    asyncio.run(main())
