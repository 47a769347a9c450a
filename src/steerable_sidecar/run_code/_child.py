"""The child side of ``run_code``: the model's program runs here, in a sandboxed interpreter.

:mod:`steerable_sidecar.run_code._tool` starts it as ``python -S -P -c <this file's text>`` under the
layer-2 sandbox; the sidecar never imports it. It uses only modules a ``-S`` interpreter has
loaded plus ``_json`` and ``_ast`` (docs/run-code.md, "Speed"). The frames travel on private
duplicates of fds 0 and 1, and the import guard is a convenience, not the boundary
(docs/run-code.md, "The child and its boundary").

Protocol: JSON lines, one ASCII object per line.

* parent -> child, first: ``{"code": str, "limits": {"output": int, "value": int}}``
* child -> parent: ``{"t": "log", "text": str}`` (what the program printed, a line or more)
* child -> parent: ``{"t": "call", "id": n, "tool": str, "arguments": {...}}``; the child then
  blocks until the parent answers ``{"t": "result", "id": n, "result": ToolResult}``
* child -> parent, last: ``{"t": "done", "ok": true, "value": ..., "repr": bool}`` or
  ``{"t": "done", "ok": false, "error": {"type", "message", "line", "column", "traceback", "phase"}}``
  (``phase``: ``syntax``, ``runtime`` or ``value``)
"""

from __future__ import annotations

import _json
import _thread
import builtins
import io
import sys

if sys.platform == "win32":  # reachable only confined: Windows has no layer-2 backend
    import nt as _os

    _DEVNULL = "nul"
else:
    import posix as _os

    _DEVNULL = "/dev/null"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import CodeType, TracebackType
    from typing import Any

FILENAME = "<run_code>"
"""The file name of the program in tracebacks and syntax errors."""
PROGRAM = "__program__"
"""The name of the function the program's body becomes."""

BLOCKED = frozenset(
    {
        # processes, signals, the interpreter and its import machinery
        "os",
        "posix",
        "nt",
        "sys",
        "subprocess",
        "_posixsubprocess",
        "multiprocessing",
        "_multiprocessing",
        "concurrent",
        "signal",
        "_signal",
        "_thread",
        "pty",
        "tty",
        "termios",
        "fcntl",
        "resource",
        "mmap",
        "gc",
        "faulthandler",
        "importlib",
        "_imp",
        "imp",
        "zipimport",
        "pkgutil",
        "runpy",
        "_frozen_importlib",
        "_frozen_importlib_external",
        "code",
        "codeop",
        "pdb",
        "bdb",
        "platform",
        "sysconfig",
        "shutil",
        # native code
        "ctypes",
        "_ctypes",
        "cffi",
        # the network
        "socket",
        "_socket",
        "ssl",
        "_ssl",
        "select",
        "selectors",
        "asyncio",
        "socketserver",
        "http",
        "urllib",
        "ftplib",
        "smtplib",
        "imaplib",
        "poplib",
        "telnetlib",
        "xmlrpc",
        "webbrowser",
    }
)
"""Modules the program may not import (by top-level name): the escape hatches of a sandboxed program."""

_MAX_TEXT = 2000  # longest exception message / source line kept in an error frame
_MAX_FRAMES = 30  # traceback lines kept (the first 10 and the last 20)
_LOG_CHUNK = 8192  # buffered log characters that force a frame even without a newline
_LOG_FRAME = 262_144  # characters per log frame (at most 12 bytes each once escaped: 3 MiB)


class ToolCallError(Exception):
    """A nested tool call failed; the program may catch it.

    Attributes:
        tool: The tool's name.
        arguments: The arguments it was called with.
        result: The failed ToolResult as a dict (``success``, ``error``, ``data``, ...).
        code: ``result["data"]["code"]`` when the tool gave one (``consent_denied``, ``not_found``...).
    """

    def __init__(self, tool: str, arguments: dict[str, Any], result: dict[str, Any]) -> None:
        self.tool = tool
        self.arguments = arguments
        self.result = result
        data = result.get("data")
        self.code = data.get("code") if isinstance(data, dict) else None
        error = result.get("error") or result.get("message") or "the call failed"
        super().__init__(f"{tool}: {error}")


class BlockedImportError(ImportError):
    """Raised for ``import`` of a module in :data:`BLOCKED`."""


# -- JSON through the C accelerators only ----------------------------------------------------------
class _DecodeContext:
    """What ``_json.make_scanner`` reads from a ``json.JSONDecoder``: the defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity


_scan = _json.make_scanner(_DecodeContext())  # type: ignore[arg-type]  # it reads these attributes


def _decode(line: bytes) -> Any:
    value, _end = _scan(line.decode("ascii", "replace"), 0)
    return value


def _not_json(value: object) -> object:
    raise TypeError(f"an object of type {type(value).__name__} is not JSON")


def _encode(value: object) -> str:
    """Compact ASCII JSON; raises ``TypeError`` / ``ValueError`` for what JSON cannot hold."""
    encoder = _json.make_encoder(
        {}, _not_json, _json.encode_basestring_ascii, None, ":", ",", False, False, False
    )
    return "".join(encoder(value, 0))


# -- the channel to the parent ---------------------------------------------------------------------
class _Channel:
    def __init__(self, inbound: int, outbound: int) -> None:
        self._reader = open(inbound, "rb")  # buffered: readline() blocks until a whole frame is in
        self._out = outbound
        self._write_lock = _thread.allocate_lock()
        self._call_lock = _thread.allocate_lock()
        self._next_id = 0

    def read(self) -> Any:
        line = self._reader.readline()
        if not line:  # the parent is gone: nothing left to do
            _os._exit(3)
        return _decode(line)

    def send(self, text: str) -> None:
        data = memoryview((text + "\n").encode("ascii"))
        with self._write_lock:
            while data:
                data = data[_os.write(self._out, data) :]

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        with self._call_lock:  # one call at a time, even from threads: replies come in order
            self._next_id += 1
            frame = {"t": "call", "id": self._next_id, "tool": tool, "arguments": arguments}
            try:
                text = _encode(frame)
            except (TypeError, ValueError, RecursionError) as exc:
                raise TypeError(f"the arguments of tools.{tool} must be JSON values: {exc}") from None
            self.send(text)
            reply = self.read()
        result = reply.get("result") if isinstance(reply, dict) else None
        return result if isinstance(result, dict) else {"success": False, "error": "no result"}


class _Output(io.TextIOBase):
    """``sys.stdout`` and ``sys.stderr`` of the program: lines go to the parent as log frames.

    At most ``cap + 1`` characters are ever sent (the parent stops a program that goes past its cap);
    the rest is dropped.
    """

    def __init__(self, channel: _Channel, cap: int) -> None:
        self._channel = channel
        self._cap = cap
        self._parts: list[str] = []
        self._pending = 0  # characters buffered
        self._counted = 0  # characters sent or buffered

    encoding = "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        room = self._cap + 1 - self._counted
        if room <= 0:
            return len(text)
        kept = text if len(text) <= room else text[:room]
        self._parts.append(kept)
        self._pending += len(kept)
        self._counted += len(kept)
        if "\n" in kept or len(kept) >= room or self._pending >= _LOG_CHUNK:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self._parts:
            text = "".join(self._parts)
            self._parts.clear()
            self._pending = 0
            for start in range(0, len(text), _LOG_FRAME):  # frames stay far below the parent's line limit
                self._channel.send(_encode({"t": "log", "text": text[start : start + _LOG_FRAME]}))


# -- what the program sees -------------------------------------------------------------------------
def _unwrap(result: dict[str, Any]) -> Any:
    """A successful result as the program gets it: ``data``, or the plain value a tool returned."""
    data = result.get("data")
    if data is None:
        return result.get("message")
    if isinstance(data, dict) and len(data) == 1 and "value" in data:
        return data["value"]
    return data


class _ToolFunction:
    __slots__ = ("_name", "_tools")

    def __init__(self, tools: Tools, name: str) -> None:
        self._tools = tools
        self._name = name

    def __call__(self, *args: object, **arguments: Any) -> Any:
        if args:
            raise TypeError(
                f"tools.{self._name}() takes keyword arguments only, e.g. tools.{self._name}(path=...)"
            )
        return self._tools.call(self._name, **arguments)

    def __repr__(self) -> str:
        return f"<tool {self._name}>"


class Tools:
    """The ``tools`` object of a program: ``tools.call(name, **arguments)`` or ``tools.<name>(...)``.

    A call blocks until the tool answers. It returns the tool's ``data`` (the plain value, when
    the tool returned one), and raises :class:`ToolCallError` when the call fails.
    """

    __slots__ = ("_channel", "_flush")

    def __init__(self, channel: _Channel, flush: Callable[[], None]) -> None:
        self._channel = channel
        self._flush = flush

    def call(self, name: str, /, **arguments: Any) -> Any:
        """Call the tool ``name`` with ``arguments``; return its data or raise ToolCallError."""
        if not isinstance(name, str):
            raise TypeError(f"tools.call() needs the tool's name as a string, not {type(name).__name__}")
        self._flush()  # what was printed before the call comes before it in the logs
        result = self._channel.call(name, arguments)
        if result.get("success") is not True:
            raise ToolCallError(name, arguments, result)
        return _unwrap(result)

    def __getattr__(self, name: str) -> _ToolFunction:
        if name.startswith("_"):
            raise AttributeError(name)
        return _ToolFunction(self, name)

    def __repr__(self) -> str:
        return "<tools: tools.<name>(**arguments) or tools.call(name, **arguments)>"


# -- the import guard ------------------------------------------------------------------------------
def _install_import_guard() -> None:
    real_import = builtins.__import__
    modules = sys.modules

    def trusted(globals_: object) -> bool:
        # an import made by a loaded module (the standard library's own lazy imports) passes; one
        # made by the program (its namespace is no module's) or with no globals is checked
        if type(globals_) is not dict:
            return False
        name = globals_.get("__name__")
        module = modules.get(name) if type(name) is str and name != "__main__" else None
        return module is not None and getattr(module, "__dict__", None) is globals_

    def guarded_import(
        name: str,
        globals: Any = None,  # the signature of builtins.__import__
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> Any:
        if not trusted(globals):
            top = str(name).partition(".")[0]
            if top in BLOCKED:
                raise BlockedImportError(
                    f"import of {top!r} is blocked in run_code: the program runs in a sandbox without "
                    "processes, sockets or the interpreter's internals; call tools through `tools` instead",
                    name=top,
                )
        return real_import(name, globals, locals, fromlist, level)

    builtins.__import__ = guarded_import


# -- compiling and running -------------------------------------------------------------------------
def _compile(source: str, namespace: dict[str, Any]) -> Callable[[], Any]:
    """Make the program's body the body of a function (so ``return`` gives the result).

    The body is parsed as a module and its statements moved into a function in the tree, so line
    numbers (and multi-line strings) stay exactly as the model wrote them.
    """
    import _ast

    tree = compile(source, FILENAME, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
    if not isinstance(tree, _ast.Module):  # what PyCF_ONLY_AST gives in "exec" mode
        raise SyntaxError("the program is not a module")
    body = tree.body or [_ast.Pass(lineno=1, col_offset=0, end_lineno=1, end_col_offset=0)]
    arguments = _ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    function = _ast.FunctionDef(
        name=PROGRAM,
        args=arguments,
        body=body,
        decorator_list=[],
        returns=None,
        type_comment=None,
        lineno=1,
        col_offset=0,
        end_lineno=max(getattr(body[-1], "end_lineno", 1) or 1, 1),
        end_col_offset=0,
    )
    module = _ast.Module(body=[function], type_ignores=[])
    code: CodeType = compile(module, FILENAME, "exec", dont_inherit=True)
    exec(code, namespace)  # defines the function; the model's statements run when it is called
    program: Callable[[], Any] = namespace.pop(PROGRAM)
    return program


def _clip(text: str, limit: int = _MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


def _describe(exc: BaseException) -> str:
    try:
        return _clip(str(exc))
    except Exception:
        return "<the exception cannot be shown>"


def _program_frames(tb: TracebackType | None, lines: list[str]) -> tuple[list[str], int | None]:
    """``line N, in NAME: source`` for each frame of the program's own code, and the last line."""
    frames: list[str] = []
    last: int | None = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == FILENAME:
            last = tb.tb_lineno
            name = "<program>" if code.co_name == PROGRAM else code.co_name
            text = lines[last - 1].strip() if last is not None and 0 < last <= len(lines) else ""
            frames.append(f"line {last}, in {name}: {_clip(text, 200)}")
        tb = tb.tb_next
    if len(frames) > _MAX_FRAMES:
        frames = [*frames[:10], f"... {len(frames) - 30} more frames ...", *frames[-20:]]
    return frames, last


def _error_frame(
    phase: str, kind: str, message: str, line: int | None, traceback: list[str], column: int | None = None
) -> str:
    error = {"type": kind, "message": message, "line": line, "column": column, "traceback": traceback}
    error["phase"] = phase
    return _encode({"t": "done", "ok": False, "error": error})


def _value_frame(value: Any, limit: int) -> str:
    try:
        text, as_repr = _encode(value), False
    except (TypeError, ValueError, RecursionError):
        try:
            shown = repr(value)
        except Exception as exc:
            shown = f"<{type(value).__name__} object; repr() raised {type(exc).__name__}>"
        text, as_repr = _encode(shown), True
    if len(text) > limit:
        message = (
            f"the return value is {len(text)} bytes of JSON, over the limit of {limit} "
            "(STEERABLE_RUN_CODE_MAX_VALUE_BYTES); return less, or write it to a file"
        )
        return _error_frame("value", "ValueTooLarge", message, None, [])
    return '{"t":"done","ok":true,"repr":' + ("true" if as_repr else "false") + ',"value":' + text + "}"


def main() -> None:
    """Take over stdio, read the program, run it, send the final frame, exit at once."""
    inbound, outbound = _os.dup(0), _os.dup(1)
    null = _os.open(_DEVNULL, _os.O_RDWR)
    _os.dup2(null, 0)
    _os.dup2(2, 1)
    _os.close(null)
    if sys.platform != "win32" and b"PWD" in _os.environ:  # set by bwrap's --chdir, not inherited
        _os.unsetenv(b"PWD")  # the environment stays exactly the spec's allowlist
        del _os.environ[b"PWD"]
    channel = _Channel(inbound, outbound)
    init = channel.read()
    source = init.get("code") if isinstance(init, dict) else None
    limits = init.get("limits", {}) if isinstance(init, dict) else {}
    if not isinstance(source, str):
        channel.send(_error_frame("syntax", "ProtocolError", "no program was sent", None, []))
        _os._exit(2)
    output = _Output(channel, int(limits.get("output", 30_000)))
    sys.stdout = sys.stderr = output
    sys.stdin = io.StringIO()
    tools = Tools(channel, output.flush)
    namespace: dict[str, Any] = {
        "__name__": "__run_code__",
        "__builtins__": builtins,
        "tools": tools,
        "ToolCallError": ToolCallError,
    }
    lines = source.splitlines()
    try:
        program = _compile(source, namespace)
    except SyntaxError as exc:
        source_line = lines[exc.lineno - 1].strip() if exc.lineno and 0 < exc.lineno <= len(lines) else ""
        trace = [f"line {exc.lineno}: {_clip(source_line, 200)}"] if exc.lineno else []
        frame = _error_frame("syntax", type(exc).__name__, str(exc.msg), exc.lineno, trace, exc.offset)
    except (ValueError, MemoryError, RecursionError) as exc:  # a NUL byte, nesting too deep
        frame = _error_frame("syntax", type(exc).__name__, _describe(exc), None, [])
    else:
        _install_import_guard()
        try:
            value = program()
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the program's end
            trace, line = _program_frames(exc.__traceback__, lines)
            frame = _error_frame("runtime", type(exc).__name__, _describe(exc), line, trace)
        else:
            frame = _value_frame(value, int(limits.get("value", 1_000_000)))
    try:
        output.flush()
    except Exception:
        pass
    channel.send(frame)
    _os._exit(0)  # no interpreter teardown: threads the program left running do not hold us


if __name__ == "__main__":
    main()
