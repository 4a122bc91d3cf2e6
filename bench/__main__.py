"""``python -m bench``: run every benchmark, print its table, write the figures as JSON.

Each benchmark is a module of this package with ``run(...) -> dict`` and, to print
itself, ``table(result) -> list[str]`` (without one, its figures print one a line).
The JSON file (``--out``, by default ``bench-results/<UTC timestamp>.json``) holds
the machine's description and each benchmark's figures under its name.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from client_sdk.logs import configure_quiet

from . import machine

BENCHMARKS: dict[str, dict[str, Any]] = {
    # name: keyword arguments of its run() under --quick
    "engine": {"seconds": 0.5},
    "protocol": {"samples": 100, "blocks": 1, "answer_seconds": 0.2},
    "load": {"seats": 8, "steps": (8,), "seconds": 1.0},
    "ceiling": {"streams": (4,), "seconds": 1.0, "warmup": 0.5},
    "ladder": {"bots": 3, "seconds": 1.0, "warmup": 0.0, "repetitions": 50},
    "ladder_reads": {"matches": 2000, "repetitions": 20, "seconds": 1.0, "warmup": 1.0},
    "search": {"budgets": (50.0,), "games": 1},
    "metrics": {"seconds": 0.4, "rounds": 2},
}


def engine_games_per_s(result: dict[str, Any]) -> dict[str, float]:
    """Returns the engine's games per second keyed by the player count (as text)."""
    return {n: row["games_per_second"] for n, row in result["players"].items()}


def _load_average() -> list[float] | None:
    """Returns the system's 1, 5 and 15 minute load averages, or None where unknown."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _lines(figures: dict[str, Any], prefix: str = "") -> list[str]:
    """Returns one 'name: value' line per figure, nested names joined by dots."""
    out = []
    for key, value in figures.items():
        if isinstance(value, dict):
            out += _lines(value, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}: {value}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the chosen benchmarks and writes their figures; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", metavar="FILE", help="where to write the figures as JSON")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=sorted(BENCHMARKS),
        metavar="NAME",
        help=f"run only these benchmarks ({', '.join(BENCHMARKS)})",
    )
    parser.add_argument("--quick", action="store_true", help="short runs, for a smoke test")
    args = parser.parse_args(argv)
    # The bots and stores the benchmarks drive log each decision and each upgrade:
    # warnings and worse only, or those lines bury the tables.
    configure_quiet()

    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    # Each benchmark's figures go under its name; the engine's games per second are
    # repeated as the flat "engine_games_per_s" that comparisons between runs read.
    # "machine" is the one-line description; "machine_info" the same, field by field.
    info = machine.describe()
    report: dict[str, Any] = {
        "started": stamp,
        "machine": machine.summary(info),
        "machine_info": info,
    }
    # Other work on the machine slows every figure: keep how busy it was.
    report["load_average_before"] = _load_average()
    print(report["machine"])
    failed = []
    for name in args.only or BENCHMARKS:
        module = importlib.import_module(f"{__package__}.{name}")
        try:
            result = module.run(**(BENCHMARKS[name] if args.quick else {}))
        except Exception as e:
            # A benchmark that cannot run (a server that does not start, a refused
            # call) costs only its own figures: the others still run and are written.
            print(f"\n== {name}\nfailed: {type(e).__name__}: {e}", file=sys.stderr)
            report[name] = {"error": f"{type(e).__name__}: {e}"}
            failed.append(name)
            continue
        report[name] = result
        if name == "engine":
            report["engine_games_per_s"] = engine_games_per_s(result)
        print(f"\n== {name}")
        lines = module.table(result) if hasattr(module, "table") else _lines(result)
        print("\n".join(lines))

    report["load_average_after"] = _load_average()
    out = Path(args.out or f"bench-results/{stamp}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nfigures written to {out}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
