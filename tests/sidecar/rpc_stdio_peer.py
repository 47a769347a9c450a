"""A JSON-RPC peer on this process's real stdin/stdout, for tests/sidecar/rpc/test_rpc.py.

Methods: ``echo`` returns its params after writing stray output every way a plugin could (a
``print()``, a raw write to fd 1, a child process that inherits stdout); ``ask_host`` forwards its
params to the host's ``host.add`` and returns the answer.
"""

import asyncio
import os
import subprocess
import sys

from steerable_sidecar.rpc._peer import JsonRpcPeer, open_stdio_streams


async def main() -> None:
    reader, writer = await open_stdio_streams()
    peer = JsonRpcPeer(reader, writer, name="child")

    async def echo(params):
        print("stray print from a handler")
        os.write(1, b"stray bytes on fd 1\n")
        subprocess.run([sys.executable, "-c", "print('stray output from a child process')"], check=True)
        return params

    async def ask_host(params):
        return await peer.request("host.add", params)

    peer.add_method("echo", echo)
    peer.add_method("ask_host", ask_host)
    await peer.serve()
    print("served until EOF")


asyncio.run(main())
