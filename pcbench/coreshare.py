"""How many cores this process can use right now, for pcbench's own matrix products.

Why: the embedded run's products split each call over OpenMP threads that meet at a barrier. When
another process keeps one of the cores busy, the thread sharing that core is descheduled for whole
time slices while the others spin at the barrier: on 2 cores with one busy neighbour a default run
stepped 2.4x slower than alone, and 1.7x slower than the same run on one thread. pcbench's products
give the same floats at any thread count (pcbench/detgemm.c: each element is one thread's chain), so
their thread count can follow the machine's load without moving a single number. ATen's own kernels
keep `train.threads` (some of their reductions round by thread count).

The estimate: over the last interval, the CPU time every process on the machine spent (/proc/stat)
minus this process's own (/proc/self/stat, all its threads), in cores; what is left of the cores
this process may run on (its affinity) is its share. Linux only; elsewhere the share is the cap.
A cgroup CPU quota is not read: in a container with a quota, set `train.threads` to the quota.
"""

from __future__ import annotations

import os
import time

INTERVAL_S = 0.25  # re-read the counters at most this often (a read costs ~20 us)
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _machine_ticks() -> tuple[int, int] | None:
    """(busy, total) clock ticks of all CPUs since boot, or None off Linux."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
    return total - idle, total


def _own_ticks() -> int | None:
    """This process's user + system clock ticks, all threads."""
    try:
        with open("/proc/self/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()  # the command name may hold spaces
    except (OSError, IndexError):
        return None
    return int(rest[11]) + int(rest[12])  # fields 14 and 15 (utime, stime), counted from after ")"


def _allowed_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class CoreShare:
    """`threads(cap)`: how many of `cap` threads to use now, from the last interval's load.

    Rounds to the nearest core: a neighbour using more than half a core takes that core away. The
    first call (no interval yet) returns `cap`."""

    def __init__(self, interval_s: float = INTERVAL_S):
        self.interval_s = interval_s
        self.cores = _allowed_cores()
        self._last = None  # (monotonic time, machine busy, machine total, own ticks)
        self._share = float(self.cores)

    def _update(self) -> None:
        now = time.monotonic()
        if self._last is not None and now - self._last[0] < self.interval_s:
            return
        machine, own = _machine_ticks(), _own_ticks()
        if machine is None or own is None:
            return
        if self._last is not None:
            _, busy0, total0, own0 = self._last
            d_total = machine[1] - total0
            if d_total > 0:
                ncpu = os.cpu_count() or 1
                others = max(0, (machine[0] - busy0) - (own - own0)) / d_total * ncpu  # in cores
                self._share = self.cores - others
        self._last = (now, machine[0], machine[1], own)

    def threads(self, cap: int) -> int:
        self._update()
        return max(1, min(cap, int(self._share + 0.5)))


_SHARE: CoreShare | None = None


def enable(on: bool = True) -> None:
    """Turn load-following on (the embedded trainer does, unless train.share_cores=false) or off."""
    global _SHARE
    _SHARE = CoreShare() if on else None


def threads(cap: int) -> int:
    """The products' thread count: `cap` (torch's), or fewer while other processes hold cores."""
    return cap if _SHARE is None or cap <= 1 else _SHARE.threads(cap)
