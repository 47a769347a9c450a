"""Per-run cgroups: where they can be made, what they are set to, and how a run gets into them.

Discovery and the limit files are checked against fake cgroup trees (plain directories), so the
cgroup v2 layout is covered on this cgroup v1 machine; the rest runs on the real hierarchy and
skips, naming why, where no controller is writable.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import Literal

import pytest

from steerable_agent_runtime.sandbox import _cgroup
from steerable_agent_runtime.sandbox._cgroup import (
    CgroupParent,
    RunCgroup,
    _RunDir,
    cgroup_parents,
    find_cgroup_parents,
)
from waiting import grace, wait_until

V1_CGROUP = "9:name=systemd:/\n8:pids:/\n5:devices:/\n4:memory:/jobs/42\n0::/\n"
V2_CGROUP = "0::/user.slice/sidecar\n"


def v1_mountinfo(root: Path) -> str:
    return (
        f"31 23 0:28 / {root} rw,relatime - tmpfs tmpfs rw,mode=755\n"
        f"35 31 0:32 / {root}/memory rw,relatime - cgroup cgroup rw,memory\n"
        f"39 31 0:36 / {root}/pids rw,relatime - cgroup cgroup rw,pids\n"
        f"41 31 0:38 / {root}/unified rw,relatime - cgroup2 cgroup2 rw\n"
    )


def test_cgroup_v1_gives_one_parent_per_hierarchy_and_pids_to_root_only(tmp_path: Path):
    (tmp_path / "pids").mkdir()
    (tmp_path / "memory" / "jobs" / "42").mkdir(parents=True)
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.subtree_control").write_text("")
    mounts = v1_mountinfo(tmp_path)
    assert find_cgroup_parents(V1_CGROUP, mounts, root=True) == (
        CgroupParent(tmp_path / "pids", 1, frozenset({"pids"})),
        CgroupParent(tmp_path / "memory" / "jobs" / "42", 1, frozenset({"memory"})),
    )
    # anyone else is bounded by RLIMIT_NPROC: memory only, where it may write
    assert find_cgroup_parents(V1_CGROUP, mounts, root=False) == (
        CgroupParent(tmp_path / "memory" / "jobs" / "42", 1, frozenset({"memory"})),
    )
    (tmp_path / "memory" / "jobs" / "42").chmod(0o555)
    try:
        if os.geteuid() != 0:  # root writes anyway; the check is os.access
            assert find_cgroup_parents(V1_CGROUP, mounts, root=False) == ()
    finally:
        (tmp_path / "memory" / "jobs" / "42").chmod(0o755)


def test_co_mounted_v1_controllers_share_one_directory(tmp_path: Path):
    (tmp_path / "both").mkdir()
    mounts = f"35 31 0:32 / {tmp_path}/both rw - cgroup cgroup rw,memory,pids\n"
    assert find_cgroup_parents("4:memory,pids:/\n", mounts, root=True) == (
        CgroupParent(tmp_path / "both", 1, frozenset({"pids", "memory"})),
    )


def test_cgroup_v2_uses_what_the_parent_hands_down(tmp_path: Path):
    own = tmp_path / "user.slice" / "sidecar"
    own.mkdir(parents=True)
    mounts = f"30 23 0:27 / {tmp_path} rw - cgroup2 cgroup2 rw\n"
    (own / "cgroup.subtree_control").write_text("cpu memory pids\n")
    assert find_cgroup_parents(V2_CGROUP, mounts, root=True) == (
        CgroupParent(own, 2, frozenset({"pids", "memory"})),
    )
    assert find_cgroup_parents(V2_CGROUP, mounts, root=False) == (
        CgroupParent(own, 2, frozenset({"memory"})),
    )
    (own / "cgroup.subtree_control").write_text("pids\n")  # memory not delegated: nothing for non-root
    assert find_cgroup_parents(V2_CGROUP, mounts, root=False) == ()
    assert find_cgroup_parents(V2_CGROUP, mounts, root=True) == (CgroupParent(own, 2, frozenset({"pids"})),)


def _fake_dir(path: Path, names: list[str]) -> None:
    path.mkdir()
    for name in names:
        (path / name).write_text("max\n")


def test_limit_files_of_each_version(tmp_path: Path):
    v1 = tmp_path / "v1"
    _fake_dir(v1, ["pids.max", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"])
    run_dir = _RunDir(v1, 1, frozenset({"pids", "memory"}))
    run_dir.set_limits(max_processes=64, memory_bytes=1 << 30)
    assert (v1 / "pids.max").read_text() == "64"
    assert (v1 / "memory.limit_in_bytes").read_text() == str(1 << 30)
    assert (v1 / "memory.memsw.limit_in_bytes").read_text() == str(1 << 30)  # no swap on top
    run_dir.set_limits(max_processes=None, memory_bytes=None)  # lifted while a sidecar thread is in
    assert (v1 / "pids.max").read_text() == "max" and (v1 / "memory.limit_in_bytes").read_text() == "-1"
    v2 = tmp_path / "v2"
    _fake_dir(v2, ["pids.max", "memory.max", "memory.swap.max", "memory.oom.group"])
    _RunDir(v2, 2, frozenset({"pids", "memory"})).set_limits(max_processes=8, memory_bytes=1 << 20)
    assert [
        (v2 / name).read_text() for name in ("pids.max", "memory.max", "memory.swap.max", "memory.oom.group")
    ] == [
        "8",
        str(1 << 20),
        "0",
        "1",  # the kernel kills the whole cgroup on OOM
    ]


def test_oom_kills_are_read_from_each_versions_counter(tmp_path: Path):
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    v1.mkdir()
    v2.mkdir()
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    (v2 / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\noom_group_kill 1\n")
    assert _RunDir(v1, 1, frozenset({"memory"})).oom_kills() == 3
    assert _RunDir(v2, 2, frozenset({"memory"})).oom_kills() == 2


# -- the real hierarchy -----------------------------------------------------------------------------


def settle_releases() -> None:
    """Wait until earlier runs' cgroups are back in the pool or removed (their releases run in threads).

    A release waits up to ``_REAP_S`` for PID 1 to reap a zombie; a test that takes a cgroup
    from the pool must not get one a late release added meanwhile.
    """
    wait_until(
        lambda: not any(t.name == "steerable-cgroup-release" for t in threading.enumerate()),
        what="the cgroup releases done",
        timeout_s=_cgroup._REAP_S + 30,
    )


def pooled_paths() -> list[tuple[Path, ...]]:
    with _cgroup._pool_lock:
        return [cgroup.paths for cgroups in _cgroup._pool.values() for cgroup in cgroups]


@pytest.fixture
def cgroup():
    if not cgroup_parents():
        pytest.skip("no writable pids or memory cgroup here (non-root, or a read-only cgroupfs)")
    settle_releases()
    taken = RunCgroup.acquire(max_processes=7, memory_bytes=64 << 20)
    assert taken is not None
    yield taken
    taken.release()


def _cgroup_lines(pid: int | str) -> list[str]:
    return [line for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if "/steerable-" in line]


def test_a_thread_forks_inside_and_comes_back_out(cgroup: RunCgroup):
    own = Path("/proc/thread-self/cgroup").read_text()
    # the limits are lifted while a thread of this process is inside
    pids_dirs = [d for d in cgroup.paths if (d / "pids.max").exists()]
    assert all((d / "pids.max").read_text().strip() == "max" for d in pids_dirs)
    with cgroup.inside() as missing:
        assert missing == ()  # cgroup v1: the thread got into every run cgroup
        assert len(_cgroup_lines("thread-self")) == len(cgroup.paths)
        child = subprocess.Popen(["sleep", "5"])
        survivor = os.getpid() in cgroup._dirs[0].procs()  # this process is listed now
    try:
        assert survivor
        assert Path("/proc/thread-self/cgroup").read_text() == own
        assert len(_cgroup_lines(child.pid)) == len(cgroup.paths)  # forked inside
        assert cgroup.missing(child.pid) == ()
        with cgroup.inside():
            cgroup.kill_all()  # with a thread of ours inside: it must spare this process
        assert child.wait(timeout=5) == -9  # the kill reached the child, not us
    finally:
        child.kill()
        child.wait()
    cgroup.apply_limits()
    assert all((d / "pids.max").read_text().strip() == "7" for d in pids_dirs)


def test_a_released_cgroup_goes_back_to_the_pool_clean(cgroup: RunCgroup):
    cgroup.apply_limits()
    with cgroup.inside():
        child = subprocess.Popen(["sleep", "0.05"])
    child.wait()
    paths = cgroup.paths
    cgroup.release()
    again = RunCgroup.acquire(max_processes=7, memory_bytes=64 << 20)
    assert again is not None
    try:
        assert again.paths == paths  # pooled: no mkdir, same directories
        assert again.memory_exceeded() is False
        for path in paths:
            assert (path / "cgroup.procs").read_text() == ""
    finally:
        again.release()


def test_a_zombie_keeps_the_cgroup_out_of_the_pool_until_it_is_reaped(cgroup: RunCgroup):
    """A process counts until reaped: bubblewrap's init, orphaned when the command ends, is PID 1's to reap."""
    if not any((path / "pids.current").exists() for path in cgroup.paths):
        pytest.skip("no pids cgroup here (non-root): zombies are not counted")
    cgroup.apply_limits()
    with cgroup.inside():
        child = subprocess.Popen(["true"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
    paths = cgroup.paths
    releasing = threading.Thread(target=cgroup.release)
    releasing.start()
    releasing.join(timeout=grace(0.3, why="a release that did not count the zombie would be done, pooled"))
    # no process is left in it, but the zombie still counts: the release waits for its reaper
    assert releasing.is_alive() and paths not in pooled_paths()
    assert all((p / "cgroup.procs").read_text() == "" for p in paths)
    child.wait()
    releasing.join(timeout=5)
    assert not releasing.is_alive() and paths in pooled_paths()
    again = RunCgroup.acquire(max_processes=7, memory_bytes=64 << 20)
    assert again is not None
    try:
        assert again.paths == paths
        assert [(p / "pids.current").read_text().strip() for p in paths if (p / "pids.current").exists()] == [
            "0"
        ]
    finally:
        again.release()


def test_joining_from_outside_moves_a_running_process(cgroup: RunCgroup):
    child = subprocess.Popen(["sleep", "5"])
    try:
        assert cgroup.missing(child.pid) == cgroup.procs_files
        cgroup.join(child.pid)  # one RCU grace period: benchmarks/sandbox_startup.py measures it
        assert cgroup.missing(child.pid) == () and len(_cgroup_lines(child.pid)) == len(cgroup.paths)
    finally:
        child.kill()
        child.wait()


def _memory_dir(path: Path, *, limit: str, usage: int, inactive: int, version: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if version == 1:
        (path / "memory.limit_in_bytes").write_text(limit + "\n")
        (path / "memory.usage_in_bytes").write_text(f"{usage}\n")
        (path / "memory.stat").write_text(f"cache 1\ntotal_inactive_file {inactive}\n")
    else:
        (path / "memory.max").write_text(limit + "\n")
        (path / "memory.current").write_text(f"{usage}\n")
        (path / "memory.stat").write_text(f"anon 1\ninactive_file {inactive}\n")


@pytest.mark.parametrize("version", [1, 2])
def test_a_run_never_gets_more_memory_than_its_ancestors_can_give(
    tmp_path: Path, version: Literal[1, 2]
) -> None:
    """Found by the attack review: a run limited above its container's limit exhausts the container
    first, and the kernel's OOM killer may then kill the sidecar instead of the command."""
    from steerable_agent_runtime.sandbox._cgroup import MIN_RUN_MEMORY, clamped_memory, memory_headroom

    no_limit = "9223372036854771712" if version == 1 else "max"
    root = tmp_path / "memory"
    _memory_dir(root, limit=no_limit, usage=5 << 30, inactive=0, version=version)
    container = root / "container"
    _memory_dir(container, limit=str(1 << 30), usage=700 << 20, inactive=200 << 20, version=version)
    own = container / "sidecar"
    _memory_dir(own, limit=no_limit, usage=300 << 20, inactive=0, version=version)
    meminfo = "MemTotal: 24000000 kB\nMemAvailable: 20000000 kB\n"
    headroom = memory_headroom(own, version=version, meminfo=meminfo)
    assert headroom == (1 << 30) - (500 << 20)  # the container's limit less what cannot be dropped
    assert clamped_memory(8 << 30, headroom) == headroom * 3 // 4
    assert clamped_memory(100 << 20, headroom) == 100 << 20  # a smaller limit stands
    assert clamped_memory(8 << 30, 10 << 20) == MIN_RUN_MEMORY
    tight = "MemAvailable: 204800 kB\n"  # the machine itself has less
    assert memory_headroom(own, version=version, meminfo=tight) == 200 << 20
    assert memory_headroom(tmp_path / "nowhere", version=version, meminfo="") is None
