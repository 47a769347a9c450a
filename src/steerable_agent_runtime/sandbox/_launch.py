"""The sandbox launcher: what every sandboxed command but a bubblewrap one starts through.

``python -I -S _launch.py [options] -- command...``, from its cached bytecode, standard library
only (no ``site``, ``typing``, ``json`` or ``re``: a bare interpreter start plus about 1 ms). In
order: the resource limits (``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_NPROC``, no core files); the
run's cgroups (``--cgroup PROCS_FILE``, once per hierarchy); then either an exec of the command
(for a bubblewrap plan, with the seccomp filter on a pipe: ``--seccomp-fd-at``) or, with
``--supervise``, a fork of it while the launcher stays as its child subreaper, killing what it
left when it exits or on ``SIGTERM`` (``--pid-ns``: in a PID namespace of its own, with its own
``/proc``, and each ``--ro-bind PATH`` bound read-only in its mount namespace). ``--drop-caps``,
``--landlock`` and ``--seccomp-deny net,ipc,setid,chmod`` (:func:`seccomp_program`) apply to the
command, in the forked child before its exec. The runner starts bubblewrap itself;
``launcher_argv`` still runs a bubblewrap plan through here (tools, tests).

Exit status: the command's (``128 + signal``), 125 when the setup failed (the command never ran:
the sandbox fails closed), 126 / 127 when the command cannot be executed / is not found; messages
go to stderr, prefixed ``steerable-sandbox:``. Why a launcher and not ``preexec_fn``:
``docs/sandbox.md``, "Starting a command".
"""

from __future__ import annotations

import os
import resource
import struct
import sys
import time

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs 6 ms here (mypy knows the name)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = [  # what the runner and the backends use; the rest serves main()
    "EXIT_SETUP",
    "SECCOMP_ARCH",
    "SETUP_FAILED",
    "SetupError",
    "deny_list",
    "handled_fs",
    "landlock_abi",
    "rlimits",
    "seccomp_pipe",
    "seccomp_program",
    "setup_failure",
    "user_tasks",
]

# -- Landlock (include/uapi/linux/landlock.h) -------------------------------------------------------
SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on x86_64 and aarch64 (the generic table)
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

FS_READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR

# -- prctl / seccomp --------------------------------------------------------------------------------
PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
EPERM = 1

# (AUDIT_ARCH_*, socket, io_uring_setup, first x32 syscall or None) per machine
SECCOMP_ARCH = {
    "x86_64": (0xC000003E, 41, 425, 0x40000000),
    "aarch64": (0xC00000B7, 198, 425, None),
}

# System V IPC, POSIX message queues and the kernel keyrings: shared with the host outside an IPC
# namespace (Landlock), so what a command leaves there would outlive the run (and be read by the
# next one). shmget shmat shmctl semget semop semctl msgget msgsnd msgrcv msgctl semtimedop mq_open
# add_key request_key keyctl, in that order.
SECCOMP_IPC = {
    "x86_64": (29, 30, 31, 64, 65, 66, 68, 69, 70, 71, 220, 240, 248, 249, 250),
    "aarch64": (194, 196, 195, 190, 193, 191, 186, 189, 188, 187, 192, 180, 217, 218, 219),
}

# Calls that take a file mode, as (syscall, index of the mode argument): a mode with the set-user-ID
# or set-group-ID bit is refused, so a root sidecar's command cannot leave a set-uid-root program in
# the workspace. chmod fchmod fchmodat fchmodat2 open creat openat mknod mknodat (aarch64 has only
# the *at forms).
SECCOMP_MODE_ARGS = {
    "x86_64": ((90, 1), (91, 1), (268, 2), (452, 2), (2, 2), (85, 1), (257, 3), (133, 1), (259, 2)),
    "aarch64": ((52, 1), (53, 2), (452, 2), (56, 3), (33, 2)),
}
# chmod fchmod fchmodat fchmodat2, then setxattr lsetxattr fsetxattr removexattr lremovexattr
# fremovexattr setxattrat removexattrat (a POSIX ACL in system.posix_acl_access is a chmod too):
# every call refused for a root command under Landlock, which cannot tell the workspace from /etc
# for file modes and attributes (root owns both)
SECCOMP_CHMOD = {
    "x86_64": (90, 91, 268, 452, 188, 189, 190, 197, 198, 199, 463, 466),
    "aarch64": (52, 53, 452, 5, 6, 7, 14, 15, 16, 463, 466),
}
SYS_OPENAT2 = 437  # the same on both: its mode sits in a struct the filter cannot read (ENOSYS)
S_ISUID_ISGID = 0o6000
ENOSYS = 38

# -- namespaces and mounts (include/uapi/linux/sched.h, mount.h) -------------------------------------
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000

SIGKILL = 9  # the same on every Linux architecture and on macOS

EXIT_SETUP = 125
SETUP_FAILED = "steerable-sandbox: setup failed, not running the command: "  # on stderr, with EXIT_SETUP
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127


class SetupError(Exception):
    """The sandbox could not be set up; the command must not run."""


def landlock_abi() -> int:
    """Return the kernel's Landlock ABI version, or 0 when Landlock is missing or disabled."""
    if not sys.platform.startswith("linux"):
        return 0
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(
        ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET),
        ctypes.c_void_p(None),
        ctypes.c_size_t(0),
        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
    )
    return max(int(abi), 0)


def handled_fs(abi: int) -> int:
    """Every filesystem right the given Landlock ABI knows (all of them are restricted)."""
    mask = (1 << 13) - 1  # ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2:
        mask |= FS_REFER
    if abi >= 3:
        mask |= FS_TRUNCATE
    if abi >= 5:
        mask |= FS_IOCTL_DEV
    return mask


def seccomp_program(
    machine: str,
    *,
    deny_network: bool = True,
    deny_ipc: bool = False,
    deny_setid: bool = True,
    deny_chmod: bool = False,
) -> bytes:
    """The sandbox's seccomp filter as raw classic BPF (``struct sock_filter[]``).

    A syscall of another ABI than ``machine``'s native one kills the process (i386 ``int 0x80``
    would bypass the numbers checked here); x32 calls fail with ``EPERM``. What each flag refuses
    fails with ``EPERM`` (``openat2``: ``ENOSYS``, so callers fall back to ``openat``). Why each is
    there: ``docs/sandbox.md``, the seccomp paragraph under "Backends" and "What runs outside the
    sandbox".

    Args:
        machine: ``os.uname().machine``, a key of ``SECCOMP_ARCH``.
        deny_network: ``socket(2)`` for every family, Unix sockets included (``socketpair(2)``
            stays allowed), and ``io_uring_setup``.
        deny_ipc: System V IPC, POSIX message queues and the keyrings.
        deny_setid: Set-user-ID or set-group-ID modes in ``chmod``/``fchmod``/``fchmodat``,
            ``open``/``openat``/``creat`` and ``mknod(at)``; every ``openat2`` (whose mode the filter
            cannot read); ``io_uring_setup`` (an io_uring ``OPENAT`` carries a mode unseen).
        deny_chmod: Every ``chmod``/``fchmod``/``fchmodat`` and extended-attribute write
            (``setxattr``, ``removexattr`` and their variants).

    Raises:
        SetupError: For a machine the filter has no syscall numbers for.
    """
    try:
        arch, nr_socket, nr_io_uring, x32 = SECCOMP_ARCH[machine]
    except KeyError:
        raise SetupError(f"no seccomp filter for machine {machine!r}") from None
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    # (code, jump if true, jump if false, k); a jump is 0 (the next instruction) or a label
    prog: list[tuple[int, int | str, int | str, int]] = [
        (ld, 0, 0, 4),  # A = seccomp_data.arch
        (jeq, 0, "kill", arch),
        (ld, 0, 0, 0),  # A = seccomp_data.nr
    ]
    if x32 is not None:
        prog.append((jge, "deny", 0, x32))
    denied = [nr_socket] if deny_network else []
    if deny_network or deny_setid:  # io_uring opens sockets and files (any mode) past this filter
        denied.append(nr_io_uring)
    denied += list(SECCOMP_IPC[machine]) if deny_ipc else []
    denied += list(SECCOMP_CHMOD[machine]) if deny_chmod else []
    prog += [(jeq, "deny", 0, nr) for nr in denied]
    if deny_setid:
        prog.append((jeq, "nosys", 0, SYS_OPENAT2))
        for nr, index in SECCOMP_MODE_ARGS[machine]:
            prog.append((jeq, 0, 2, nr))  # not this call: skip its two instructions
            prog.append((ld, 0, 0, 16 + 8 * index))  # the low 32 bits of args[index] (little endian)
            prog.append((jset, "deny", "allow", S_ISUID_ISGID))
    labels = {"allow": len(prog), "deny": len(prog) + 1, "nosys": len(prog) + 2, "kill": len(prog) + 3}
    prog += [
        (ret, 0, 0, SECCOMP_RET_ALLOW),
        (ret, 0, 0, SECCOMP_RET_ERRNO | EPERM),
        (ret, 0, 0, SECCOMP_RET_ERRNO | ENOSYS),
        (ret, 0, 0, SECCOMP_RET_KILL_PROCESS),
    ]
    out = []
    for i, (code, jt, jf, k) in enumerate(prog):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - i - 1 if isinstance(jf, str) else jf
        out.append(struct.pack("=HBBI", code, jt, jf, k))
    return b"".join(out)


def seccomp_pipe(deny: dict[str, bool]) -> int:
    """A pipe holding :func:`seccomp_program` with the ``deny`` keywords (:func:`deny_list`); its read end.

    The filter is a few hundred bytes, so it fits the pipe buffer. The read end is not inheritable.
    """
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, seccomp_program(os.uname().machine, **deny))
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    return read_end


class _Libc:
    """The few libc calls the launcher needs, through ctypes (loaded only when needed)."""

    def __init__(self) -> None:
        import ctypes

        self.ctypes = ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.syscall.restype = ctypes.c_long
        self.libc.prctl.restype = ctypes.c_int

    def prctl(self, option: int, arg2: int = 0, arg3: Any = 0) -> None:
        c = self.ctypes
        third = c.c_ulong(arg3) if isinstance(arg3, int) else arg3
        self._check(self.libc.prctl(c.c_int(option), c.c_ulong(arg2), third, c.c_ulong(0), c.c_ulong(0)))

    def syscall(self, number: int, *args: Any) -> int:
        c = self.ctypes
        rc = int(self.libc.syscall(c.c_long(number), *args))
        if rc < 0:
            raise OSError(c.get_errno(), os.strerror(c.get_errno()))
        return rc

    def unshare(self, flags: int) -> None:
        self._check(self.libc.unshare(self.ctypes.c_int(flags)))

    def mount(self, source: str | None, target: str, fstype: str | None, flags: int) -> None:
        c = self.ctypes
        text = [c.c_char_p(None if part is None else part.encode()) for part in (source, target, fstype)]
        self._check(self.libc.mount(*text, c.c_ulong(flags), None))

    def _check(self, rc: int) -> None:
        if rc != 0:
            raise OSError(self.ctypes.get_errno(), os.strerror(self.ctypes.get_errno()))


def new_pid_namespace(libc: _Libc) -> bool:
    """Make this process's next child PID 1 of a new PID namespace; ``False`` when none can be made.

    As root (``CAP_SYS_ADMIN``) the namespace is made directly; otherwise inside a user namespace
    of its own that maps this user to itself (unprivileged user namespaces must be allowed).
    """
    try:
        libc.unshare(CLONE_NEWPID)
        return True
    except OSError:
        pass
    uid, gid = os.geteuid(), os.getegid()
    try:
        libc.unshare(CLONE_NEWUSER | CLONE_NEWPID)
        maps = {"setgroups": "deny", "uid_map": f"{uid} {uid} 1", "gid_map": f"{gid} {gid} 1"}
        for name, text in maps.items():
            with open(f"/proc/self/{name}", "w", encoding="ascii") as fh:
                fh.write(text)
    except OSError:
        return False
    return True


def apply_landlock(
    libc: _Libc,
    *,
    read: list[str],
    write: list[str],
    dev: list[str],
    no_tcp: bool,
    list_dirs: Sequence[str] = (),
) -> int:
    """Restrict this process (and its future children) with a Landlock ruleset; return the ABI.

    Everything under ``read`` may be read and executed, every directory under ``list_dirs`` listed,
    everything under ``write`` may also be changed, each ``dev`` file may be read and written; any
    other write is refused. ``no_tcp`` refuses every TCP bind and connect (ABI 4 and later). From
    ABI 6, abstract Unix sockets and signals are scoped to the sandbox too. The ``read`` entries are
    what the host listed of shared folders (``/tmp``, ``~``: ``_deny.read_grants``): one gone since
    (another process's temporary file) has nothing to grant and one a link now is not followed.

    Raises:
        SetupError: When the kernel has no Landlock or refuses the ruleset.
    """
    c = libc.ctypes
    abi = landlock_abi()
    if abi < 1:
        raise SetupError("the kernel has no Landlock (or it is disabled)")
    fs = handled_fs(abi)
    net = NET_BIND_TCP | NET_CONNECT_TCP if no_tcp and abi >= 4 else 0
    scoped = (SCOPE_ABSTRACT_UNIX_SOCKET if no_tcp else 0) | SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", fs, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    buf = c.create_string_buffer(attr[:size], size)
    try:
        ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, buf, c.c_size_t(size), c.c_uint32(0))
    except OSError as exc:
        raise SetupError(f"landlock_create_ruleset failed: {exc.strerror}") from None
    file_rights = FS_EXECUTE | FS_READ_FILE | FS_WRITE_FILE | (FS_TRUNCATE & fs) | (FS_IOCTL_DEV & fs)
    try:
        rules = [(p, FS_READ_DIR, "need") for p in list_dirs] + [(p, FS_READ, "listed") for p in read]
        rules += [(p, fs, "need") for p in write] + [(p, file_rights, "optional") for p in dev]
        for path, access, kind in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC | (os.O_NOFOLLOW if kind == "listed" else 0))
            except OSError as exc:
                gone = isinstance(exc, (FileNotFoundError, NotADirectoryError))
                if kind == "optional" or (kind == "listed" and gone):
                    continue  # an absent device; a listed entry removed since
                raise SetupError(f"cannot open {path!r} for a Landlock rule: {exc.strerror}") from None
            try:
                mode = os.fstat(fd).st_mode & 0o170000  # S_IFMT of what was opened, not of the path again
                if mode == 0o120000:  # S_IFLNK: a listed entry made a link since (never followed)
                    continue
                if mode != 0o040000:  # not S_IFDIR
                    access &= file_rights
                rule = c.create_string_buffer(struct.pack("=Qi", access, fd), 12)
                beneath = (c.c_int(ruleset), c.c_int(LANDLOCK_RULE_PATH_BENEATH), rule, c.c_uint32(0))
                libc.syscall(SYS_LANDLOCK_ADD_RULE, *beneath)
            except OSError as exc:
                raise SetupError(f"landlock_add_rule failed for {path!r}: {exc.strerror}") from None
            finally:
                os.close(fd)
        try:
            libc.prctl(PR_SET_NO_NEW_PRIVS, 1)
            libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, c.c_int(ruleset), c.c_uint32(0))
        except OSError as exc:
            raise SetupError(f"landlock_restrict_self failed: {exc.strerror}") from None
    finally:
        os.close(ruleset)
    return abi


def apply_seccomp(libc: _Libc, program: bytes) -> None:
    """Install ``program`` (raw classic BPF) as a seccomp filter on this process.

    Raises:
        SetupError: When the kernel refuses the filter.
    """
    import ctypes as c

    class SockFprog(c.Structure):
        _fields_ = (("len", c.c_ushort), ("filter", c.c_void_p))

    insns = c.create_string_buffer(program, len(program))
    prog = SockFprog(len(program) // 8, c.cast(insns, c.c_void_p))
    try:
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1)
        libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, c.byref(prog))
    except OSError as exc:
        raise SetupError(f"seccomp filter refused: {exc.strerror}") from None


def drop_capabilities(libc: _Libc) -> None:
    """Give up every capability, for good: the bounding set, ambient, and the current sets.

    A root command keeps root's uid but loses ``CAP_SYS_PTRACE``, ``CAP_DAC_OVERRIDE`` and the
    rest, and cannot get them back by exec (the bounding set is empty). Without
    ``CAP_SYS_PTRACE`` the kernel refuses it the environment of the sidecar (whose capabilities
    it no longer holds), which Landlock alone does not do for root.

    Raises:
        SetupError: When a capability cannot be dropped.
    """
    c = libc.ctypes
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as fh:
            last = int(fh.read())
    except (OSError, ValueError):
        last = 40
    try:
        for cap in range(last + 1):
            libc.prctl(PR_CAPBSET_DROP, cap)
        libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError as exc:
        if exc.errno != EPERM:  # EPERM: no CAP_SETPCAP, so nothing to drop in the bounding set
            raise SetupError(f"cannot drop capabilities: {exc.strerror}") from None
    header = c.create_string_buffer(struct.pack("=Ii", _LINUX_CAPABILITY_VERSION_3, 0), 8)
    data = c.create_string_buffer(bytes(24), 24)  # two empty {effective, permitted, inheritable}
    try:
        libc.syscall(_SYS_CAPSET[os.uname().machine], header, data)
    except (OSError, KeyError) as exc:
        raise SetupError(f"cannot drop capabilities: {exc}") from None


def user_tasks(uid: int) -> int:
    """How many tasks (threads) ``uid`` owns now: what ``RLIMIT_NPROC`` is compared with."""
    count = 0
    try:
        entries = os.scandir("/proc")
    except OSError:
        return 0
    with entries:
        for entry in (entry for entry in entries if entry.name.isdigit()):
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue  # exited meanwhile
    return count


def rlimits(*, cpu: int, address_space: int) -> list[tuple[int, tuple[int, int]]]:
    """``(resource, (soft, hard))`` for each limit but ``RLIMIT_NPROC`` (0 leaves one out); no core files."""
    limits = [(resource.RLIMIT_CORE, (0, 0))]
    if cpu:
        limits.append((resource.RLIMIT_CPU, (cpu, cpu + 1)))  # soft: SIGXCPU, hard: SIGKILL
    if address_space:
        limits.append((resource.RLIMIT_AS, (address_space, address_space)))
    return limits


def set_limits(*, cpu: int, address_space: int, nproc: int) -> None:
    """Set the resource limits (0 leaves one as it is); core files are always off.

    ``RLIMIT_NPROC`` counts every task of the user, so it is set to the user's current count plus
    ``nproc``. The kernel does not apply it to root; see ``--cgroup``.
    """
    for which, value in rlimits(cpu=cpu, address_space=address_space):
        resource.setrlimit(which, value)
    if nproc and os.getuid() != 0 and sys.platform.startswith("linux"):
        limit = user_tasks(os.getuid()) + nproc
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))


def _descendants(root: int) -> list[int]:
    """Every live descendant of ``root``, parents before children (Linux ``/proc``)."""
    found: list[int] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as fh:
                    kids = [int(k) for k in fh.read().split()]
            except OSError:
                continue
            found.extend(kids)
            todo.extend(kids)
    return found


def _kill_all_children() -> None:
    """Kill and reap every descendant; orphans come back to us because we are a subreaper."""
    me = os.getpid()
    for _ in range(100_000):
        for pid in _descendants(me):
            try:
                os.kill(pid, SIGKILL)
            except OSError:
                pass
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.001)


class _Stop(Exception):
    pass


def _on_stop(signum: int, frame: object) -> None:
    raise _Stop


def supervise(
    argv: list[str],
    libc: _Libc | None,
    *,
    confine: Callable[[], None] | None = None,
    pid_namespace: bool = False,
    read_only: Sequence[str] = (),
    hide: Sequence[str] = (),
) -> int:
    """Run ``argv`` as our child; when it exits (or we are told to stop) kill what it left behind.

    Linux only (descendants found through ``/proc``; ``PR_SET_CHILD_SUBREAPER``). ``confine`` runs in
    the child between fork and exec, so the supervisor stays outside the sandbox: the command cannot
    ptrace it nor, from Landlock ABI 6, kill it. ``pid_namespace``: the child is PID 1 of a new PID
    namespace with mounts of its own (:func:`_namespace_init`); without one the run goes on, unless
    ``read_only`` or ``hide`` need its mounts. A failed setup never runs the command (status 125).

    Returns:
        The command's exit status (``128 + signal`` when killed by one).
    """
    import signal  # only here: it imports enum (3 ms)

    if libc is not None:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # the sidecar died: take the tree down
    own_proc = pid_namespace and libc is not None and new_pid_namespace(libc)
    if (read_only or hide) and not own_proc:
        return _setup_failed(SetupError("no mount namespace can be made here for the read-only paths"))
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _on_stop)
    pid = os.fork()
    if pid == 0:
        if own_proc and libc is not None:
            os._exit(_namespace_init(argv, libc, confine, read_only, hide))
        _start_command(argv, confine)  # never returns
    _detach_stdio()
    status = 128 + SIGKILL
    try:
        status = _wait_for(pid)
    except _Stop:
        pass
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    _kill_all_children()
    return status


def _detach_stdio() -> None:
    """Point stdin and stdout at ``/dev/null``: the command owns them, EOF comes when its tree is gone."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)


def _wait_for(pid: int) -> int:
    """Reap children (orphans come to us) until ``pid`` exits; its status (``128 + n`` for signal n)."""
    try:
        while (reaped := os.waitpid(-1, 0))[0] != pid:
            pass
    except ChildProcessError:
        return 128 + SIGKILL
    status = os.waitstatus_to_exitcode(reaped[1])
    return 128 - status if status < 0 else status


def _namespace_init(
    argv: list[str],
    libc: _Libc,
    confine: Callable[[], None] | None,
    read_only: Sequence[str] = (),
    hide: Sequence[str] = (),
) -> int:
    """PID 1 of the command's namespaces: mounts, the command (not PID 1: ``kill $$``), orphans reaped."""
    _default_signals()
    try:
        _own_mounts(libc, read_only, hide)
    except SetupError as exc:
        return _setup_failed(exc)
    pid = os.fork()
    if pid == 0:
        _start_command(argv, confine)  # never returns
    _detach_stdio()
    return _wait_for(pid)  # when the command exits, the kernel kills the rest of the namespace


def _own_mounts(libc: _Libc, read_only: Sequence[str], hide: Sequence[str]) -> None:
    """Mount ``/proc`` of this PID namespace, bind ``read_only`` read-only, cover ``hide`` (SetupError)."""
    step = "mount a /proc of the sandbox's own"
    try:
        libc.unshare(CLONE_NEWNS)
        libc.mount(None, "/", None, MS_REC | MS_PRIVATE)
        libc.mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        for path in read_only:
            step = f"bind {path!r} read-only"
            libc.mount(path, path, None, MS_BIND | MS_REC)
            libc.mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        for path in hide:
            step = f"hide {path!r}"
            if os.path.isdir(path):
                libc.mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV)
            else:  # /dev/null: reads nothing, and what is written to it goes nowhere
                libc.mount(os.devnull, path, None, MS_BIND)
    except OSError as exc:
        raise SetupError(f"cannot {step}: {setup_failure(exc)}") from None


def _default_signals() -> None:
    import signal  # only where needed: it imports enum (3 ms)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _start_command(argv: list[str], confine: Callable[[], None] | None) -> None:
    """In the forked child: default signals, the OOM score, ``confine``, then exec ``argv``."""
    _default_signals()
    try:  # the OOM killer takes the command before anything outside the sandbox (best effort)
        with open("/proc/self/oom_score_adj", "w", encoding="ascii") as fh:
            fh.write("1000")
    except OSError:
        pass
    if confine is not None:
        try:
            confine()
        except (SetupError, OSError, ValueError) as exc:
            os._exit(_setup_failed(exc))
    _exec(argv)  # never returns


def _exec(argv: list[str]) -> None:
    try:
        os.execvp(argv[0], argv)
    except FileNotFoundError:
        print(f"steerable-sandbox: {argv[0]}: command not found", file=sys.stderr, flush=True)
        os._exit(EXIT_NOT_FOUND)
    except OSError as exc:
        print(f"steerable-sandbox: {argv[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        os._exit(EXIT_CANNOT_EXECUTE)


_LIST_OPTIONS = {
    "--ro": "read",
    "--ls": "list",
    "--rw": "write",
    "--dev": "dev",
    "--cgroup": "cgroup",
    "--ro-bind": "ro-bind",
    "--hide": "hide",
}


def parse(args: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Split ``[options] -- command...`` into options and the command.

    Raises:
        SetupError: On an unknown option or a missing command.
    """
    opts: dict[str, Any] = {
        "read": [],
        "list": [],
        "write": [],
        "dev": [],
        "cgroup": [],
        "ro-bind": [],
        "hide": [],
    }
    opts.update({"cpu": 0, "as": 0, "nproc": 0})
    flags = {"--landlock", "--no-tcp", "--supervise", "--drop-caps", "--pid-ns"}
    valued = {"--cpu", "--as", "--nproc", "--seccomp-fd-at", *_LIST_OPTIONS}
    valued |= {"--seccomp-deny"}
    i = 0
    while i < len(args) and args[i] != "--":
        name = args[i]
        if name in flags:
            opts[name[2:]] = True
            i += 1
        elif name in valued and i + 1 < len(args):
            value = args[i + 1]
            key = _LIST_OPTIONS.get(name)
            if key is not None:
                opts[key].append(value)
            elif name == "--seccomp-deny":
                opts["seccomp-deny"] = deny_list(value)
            else:
                opts[name[2:]] = int(value)
            i += 2
        else:
            raise SetupError(f"bad launcher option {name!r}")
    command = args[i + 1 :]
    if not command:
        raise SetupError("no command given after --")
    return opts, command


def deny_list(value: str) -> dict[str, bool]:
    """``--seccomp-deny net,ipc,setid,chmod`` (any subset; empty: the ABI checks alone) as keywords."""
    names = {part for part in value.split(",") if part}
    unknown = names - {"net", "ipc", "setid", "chmod"}
    if unknown:
        raise SetupError(f"bad --seccomp-deny entry {sorted(unknown)[0]!r} (use net, ipc, setid, chmod)")
    return {
        "deny_network": "net" in names,
        "deny_ipc": "ipc" in names,
        "deny_setid": "setid" in names,
        "deny_chmod": "chmod" in names,
    }


def _confine(opts: dict[str, Any], libc: _Libc | None) -> None:
    """Drop capabilities, apply Landlock and the seccomp filter to this process, as ``opts`` say.

    Raises:
        SetupError: When one of them cannot be applied.
    """
    if libc is None:
        return
    if opts.get("drop-caps"):
        drop_capabilities(libc)
    if opts.get("landlock"):
        apply_landlock(
            libc,
            read=opts["read"],
            list_dirs=opts["list"],
            write=opts["write"],
            dev=opts["dev"],
            no_tcp=opts.get("no-tcp", False),
        )
    if "seccomp-deny" in opts:
        apply_seccomp(libc, seccomp_program(os.uname().machine, **opts["seccomp-deny"]))


def setup_failure(exc: BaseException) -> str:
    """Why the setup failed, as :data:`SETUP_FAILED` goes on to say (an ``OSError``'s bare reason)."""
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _setup_failed(exc: BaseException) -> int:
    print(f"{SETUP_FAILED}{setup_failure(exc)}", file=sys.stderr, flush=True)
    return EXIT_SETUP


def main(args: list[str]) -> int:
    """Set the sandbox up as the options say, then run the command (see the module docstring)."""
    try:
        opts, command = parse(args)
        set_limits(cpu=opts["cpu"], address_space=opts["as"], nproc=opts["nproc"])
        for procs in opts["cgroup"]:  # one cgroup.procs per hierarchy (cgroup v1: pids, memory)
            try:
                with open(procs, "w", encoding="ascii") as fh:
                    fh.write(str(os.getpid()))
            except OSError as exc:
                raise SetupError(f"cannot join the cgroup {procs!r}: {exc.strerror}") from None
        needs_libc = ("landlock", "seccomp-deny", "supervise", "drop-caps")
        libc = _Libc() if any(opts.get(name) for name in needs_libc) else None
        if "seccomp-fd-at" in opts:  # the filter is bubblewrap's to install, not the launcher's
            read_end = seccomp_pipe(opts.pop("seccomp-deny", {}))
            os.set_inheritable(read_end, True)
            command[opts["seccomp-fd-at"]] = str(read_end)
        if not opts.get("supervise"):
            _confine(opts, libc)
    except (SetupError, OSError, ValueError) as exc:
        return _setup_failed(exc)
    if opts.get("supervise"):
        # The command alone is confined (after the fork): the launcher stays outside its Landlock
        # domain, so from ABI 6 the command cannot signal it, and it can never ptrace it.
        return supervise(
            command,
            libc,
            confine=lambda: _confine(opts, libc),
            pid_namespace=opts.get("pid-ns", False),
            read_only=opts["ro-bind"],
            hide=opts["hide"],
        )
    _exec(command)
    return EXIT_CANNOT_EXECUTE  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
