"""Memory of a process: its proportional set size, its process tree's, and a slope fitted to samples of them.

PSS (``/proc/PID/smaps_rollup``) shares each page among the processes that map it, so the PSS of a process type's
processes adds up to what the type costs the machine, forks and Chromium included."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def pss_kb(pid: int) -> int | None:
    """The process's PSS in kB; None when it is gone (or not ours to read)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


def _parents() -> dict[int, int]:
    """Every process's parent, by pid."""
    parents = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(root: int) -> list[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def is_chromium(pid: int) -> bool:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith(("chromium", "chrome"))
    except OSError:
        return False


def tree_pss_mb(root: int) -> tuple[float, float]:
    """The PSS in MB of ``root``'s process tree: (its Python processes, the Chromium processes it started)."""
    python = chromium = 0
    for pid in descendants(root):
        kb = pss_kb(pid) or 0
        if is_chromium(pid):
            chromium += kb
        else:
            python += kb
    return python / 1024, chromium / 1024


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The least-squares slope of ys over xs (0 with fewer than two distinct xs)."""
    n = len(xs)
    if n < 2:
        return 0.0
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


@dataclass(frozen=True)
class Sample:
    """One look at a process type: when (simulated hours since the start), how many results were applied by then,
    and its PSS in MB."""

    hours: float
    results: int
    mb: float


@dataclass(frozen=True)
class Growth:
    """A process type's memory after its warm-up.

    Parameters:
        name: the process type.
        start_mb: its PSS at the end of the warm-up.
        end_mb: its PSS at the last sample.
        mb_per_day: the fitted slope, MB per simulated day.
        kb_per_1000_results: the fitted slope, kB per 1,000 results applied (None: no result was applied).
        samples: how many samples the fit used.
    """

    name: str
    start_mb: float
    end_mb: float
    mb_per_day: float
    kb_per_1000_results: float | None
    samples: int


def growth(name: str, samples: Iterable[Sample], warmup_hours: float) -> Growth:
    """The fit over the samples taken after ``warmup_hours``."""
    kept = [s for s in samples if s.hours >= warmup_hours]
    if not kept:
        return Growth(name, 0.0, 0.0, 0.0, None, 0)
    per_hour = slope([s.hours for s in kept], [s.mb for s in kept])
    applied = kept[-1].results > kept[0].results
    per_result = slope([s.results for s in kept], [s.mb for s in kept]) if applied else None
    return Growth(name, kept[0].mb, kept[-1].mb, per_hour * 24,
                  None if per_result is None else per_result * 1024 * 1000, len(kept))


def print_table(rows: Sequence[Growth]) -> None:
    print(f"  {'process type':14} {'PSS after warm-up':>18} {'PSS at end':>11} {'MB / simulated day':>19} "
          f"{'kB / 1,000 results':>19} {'samples':>8}")
    for row in rows:
        per_result = "" if row.kb_per_1000_results is None else f"{row.kb_per_1000_results:19.1f}"
        print(f"  {row.name:14} {row.start_mb:15.1f} MB {row.end_mb:8.1f} MB {row.mb_per_day:19.2f} "
              f"{per_result:>19} {row.samples:8d}")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


@dataclass(frozen=True)
class Allocators:
    """Where this process's memory is held, in MB: glibc's heaps (``arena``: obtained from the system by ``brk`` and
    the threads' arenas, ``in_use`` of it; ``mapped``: blocks glibc serves by their own mapping), SQLite's own
    allocations (``sqlite``: in use now, ``sqlite_peak``: the most since the start) and the interpreter's objects
    (``python_blocks``: how many blocks are allocated, in thousands). Any of them None where this machine's libraries
    do not tell."""

    arena: float | None
    in_use: float | None
    mapped: float | None
    sqlite: float | None
    sqlite_peak: float | None
    python_blocks: float

    def line(self) -> str:
        def mb(value: float | None) -> str:
            return "?" if value is None else f"{value:.0f}"
        return (f"glibc heaps {mb(self.arena)} MB ({mb(self.in_use)} in use), mapped {mb(self.mapped)} MB; "
                f"SQLite {mb(self.sqlite)} MB (peak {mb(self.sqlite_peak)}); "
                f"{self.python_blocks:.0f}k Python blocks")


@functools.lru_cache(maxsize=2)
def _library(name: str) -> ctypes.CDLL | None:
    """The shared library, looked up once (``find_library`` runs ``ldconfig``)."""
    found = ctypes.util.find_library(name)
    try:
        return ctypes.CDLL(found) if found else None
    except OSError:
        return None


@functools.lru_cache(maxsize=1)
def _sqlite3() -> ctypes.CDLL | None:
    """SQLite's library with the prototypes of its memory counters declared (None where it is not found)."""
    sqlite3 = _library("sqlite3")
    if sqlite3 is not None:
        sqlite3.sqlite3_memory_used.restype = ctypes.c_int64
        sqlite3.sqlite3_memory_highwater.restype = ctypes.c_int64
        sqlite3.sqlite3_memory_highwater.argtypes = [ctypes.c_int]
    return sqlite3


def allocators() -> Allocators:
    """The allocators' state in this process now (glibc's ``mallinfo2``, SQLite's ``sqlite3_memory_used``)."""
    arena = in_use = mapped = sqlite = sqlite_peak = None
    libc = _library("c")
    if libc is not None and hasattr(libc, "mallinfo2"):
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
        arena, in_use, mapped = info.arena / 2 ** 20, info.uordblks / 2 ** 20, info.hblkhd / 2 ** 20
    sqlite3 = _sqlite3()
    if sqlite3 is not None:
        sqlite, sqlite_peak = sqlite3.sqlite3_memory_used() / 2 ** 20, sqlite3.sqlite3_memory_highwater(0) / 2 ** 20
    return Allocators(arena, in_use, mapped, sqlite, sqlite_peak, sys.getallocatedblocks() / 1000)


def sqlite_peak_reset() -> float | None:
    """SQLite's allocations in use now, in MB, its high-water mark reset to that (``sqlite_peak_since`` reads the
    most since); None where this machine's SQLite does not tell."""
    sqlite3 = _sqlite3()
    if sqlite3 is None:
        return None
    sqlite3.sqlite3_memory_highwater(1)
    return float(sqlite3.sqlite3_memory_used()) / 2 ** 20


def sqlite_peak_since() -> float | None:
    """The most SQLite held since ``sqlite_peak_reset``, in MB."""
    sqlite3 = _sqlite3()
    if sqlite3 is None:
        return None
    return float(sqlite3.sqlite3_memory_highwater(0)) / 2 ** 20
