"""Measuring commands on a shared machine: CPU of the whole machine from /proc/stat, waiting for it to be quiet, and
one command's wall time, CPU time and the CPU the other processes used meanwhile. Shared by the bench drivers.

Python 3 standard library only.
"""
from __future__ import annotations

import os
import resource
import subprocess
import time

HZ = os.sysconf("SC_CLK_TCK")


def cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies over all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        parts = [int(x) for x in f.readline().split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)
    return sum(parts[:8]) - idle, sum(parts[:8])


def busy_cores(interval: float = 0.5) -> float:
    b0, t0 = cpu_jiffies()
    time.sleep(interval)
    b1, t1 = cpu_jiffies()
    return (os.cpu_count() or 1) * (b1 - b0) / max(t1 - t0, 1)


def wait_quiet(max_wait: float, need_free: float = 0.8, probe: float = 0.3, pause: float = 0.7) -> float:
    """Wait until others leave >= need_free of a core idle (or max_wait passes). Returns busy cores seen."""
    deadline = time.monotonic() + max_wait
    while True:
        b = busy_cores(probe)
        if (os.cpu_count() or 1) - b >= need_free or time.monotonic() >= deadline:
            return b
        time.sleep(pause)


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class Run:
    """Runs a command to its end; wall time, its CPU time (user+sys), CPU the rest of the machine used meanwhile."""

    def __init__(self, cmd: list[str], ok=(0,), env=None, stdout=subprocess.PIPE, timeout=None):
        b0, _ = cpu_jiffies()
        c0 = children_cpu()
        w0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, env=env, timeout=timeout)
        self.wall = time.perf_counter() - w0
        self.cpu = children_cpu() - c0
        b1, _ = cpu_jiffies()
        self.others = max(0.0, ((b1 - b0) / HZ - self.cpu) / max(self.wall, 1e-9))
        self.rc = p.returncode
        self.out = p.stdout.decode("utf-8", "replace") if isinstance(p.stdout, bytes) else ""
        self.err = p.stderr.decode("utf-8", "replace")
        if self.rc not in ok:
            raise RuntimeError("command failed (%d): %s\n%s" % (self.rc, " ".join(cmd), self.err[-3000:]))
