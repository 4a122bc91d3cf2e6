"""A description of the machine a benchmark ran on, stored beside its figures."""

from __future__ import annotations

import os
import platform
from typing import Any


def cpu_model() -> str:
    """Returns the CPU's model name (from /proc/cpuinfo on Linux), or what platform knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def summary(info: dict[str, Any]) -> str:
    """Returns the machine in one line, e.g. 'AMD EPYC 7B13, 2 cores, CPython 3.11.7, Linux'."""
    return f"{info['cpu']}, {info['cores']} cores, {info['python']}, {info['system']}"


def describe() -> dict[str, Any]:
    """Returns the CPU model, core counts, Python version and operating system."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": usable,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "system": f"{platform.system()} {platform.release()} {platform.machine()}",
    }
