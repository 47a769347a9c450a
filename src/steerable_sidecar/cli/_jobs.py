"""``steerable jobs``: list and stop what ``bash`` commands left running in the container posture.

``steerable jobs [--json]`` lists the recorded background jobs still running (records of ended ones
are dropped); ``steerable jobs stop PID... | --all [--grace S]`` stops each with every process below
it (``SIGTERM``, then ``SIGKILL`` after the grace). The records live in ``<state dir>/jobs``
(``--state-dir``, else ``STEERABLE_STATE_DIR``...); docs/sandbox.md, "The container posture".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..exit_codes import ExitCode

if TYPE_CHECKING:
    from steerable_agent_runtime.sandbox import BackgroundJob

__all__ = ["add_jobs_arguments", "run_jobs"]


def add_jobs_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``steerable jobs`` and its ``stop`` command."""
    parser.add_argument("--json", action="store_true", help="print the jobs as JSON")
    state_dir = "the state directory (default: $STEERABLE_STATE_DIR, else $XDG_STATE_HOME/steerable)"
    parser.add_argument("--state-dir", default=None, metavar="DIR", help=state_dir)
    actions = parser.add_subparsers(dest="jobs_command", metavar="ACTION")
    stop = actions.add_parser(
        "stop",
        help="stop background jobs and what they started",
        description="Stop background jobs, each with every process below it: SIGTERM, then SIGKILL "
        "after the grace. Exit 1 when a pid given is not a running job.",
    )
    stop.add_argument("--state-dir", default=argparse.SUPPRESS, metavar="DIR", help=state_dir)
    stop.add_argument("pids", nargs="*", type=int, metavar="PID", help="a job's pid (`steerable jobs`)")
    stop.add_argument("--all", action="store_true", help="stop every job")
    stop.add_argument(
        "--grace", type=float, default=3.0, metavar="S", help="seconds to exit on SIGTERM before SIGKILL (3)"
    )


def run_jobs(args: argparse.Namespace) -> int:
    """List the jobs, or stop them; exit 1 when a pid given is not a running job."""
    from steerable_agent_runtime.sandbox import jobs_dir, list_jobs, stop_jobs

    directory = Path(args.state_dir).expanduser() / "jobs" if args.state_dir else jobs_dir(os.environ)
    jobs = list_jobs(directory)
    if args.jobs_command != "stop":
        if args.json:
            print(json.dumps([_wire(job) for job in jobs], indent=2))
        elif not jobs:
            print("no background jobs")
        else:
            print("PID      STARTED              COMMAND")
            for job in jobs:
                started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(job.started_at))
                print(f"{job.pid:<8} {started}  {job.command}")
                print(f"{'':<8} output: {job.log}; started by: {' '.join(job.started_by.split())}")
        return ExitCode.OK
    if args.all == bool(args.pids):
        print("steerable jobs stop: give the pids to stop, or --all", file=sys.stderr)
        return ExitCode.USAGE
    by_pid = {job.pid: job for job in jobs}
    unknown = [pid for pid in args.pids if pid not in by_pid]
    chosen = jobs if args.all else [by_pid[pid] for pid in dict.fromkeys(args.pids) if pid in by_pid]
    if args.all and not jobs:
        print("no background jobs")
    for job, how in stop_jobs(chosen, directory, grace_s=args.grace):
        said = {
            "stopped": f"stopped {job.pid}",
            "killed": f"killed {job.pid} (still running {args.grace:g} s after SIGTERM)",
            "gone": f"{job.pid} had already ended",
        }[how]
        print(f"{said}: {job.command}")
    for pid in unknown:
        print(
            f"steerable jobs stop: {pid} is not a running background job (`steerable jobs` lists them)",
            file=sys.stderr,
        )
    return ExitCode.FAILED if unknown else ExitCode.OK


def _wire(job: BackgroundJob) -> dict[str, object]:
    return {
        "pid": job.pid,
        "command": job.command,
        "startedAt": job.started_at,
        "startedBy": job.started_by,
        "workspace": job.workspace,
        "log": job.log,
    }
