"""Golden game records (docs/record.md): this project's own, under ``records/``.

Each ``NAME.json`` record sits beside ``NAME.expect.json``: the fields of the state
dump its replay must give, or ``{"error": true, "rule": ID}`` for a record that must
be refused. The records cover stalemates with and without a Mamma Mia! holder, a
supply of the Mamma Mia! card alone, a Bombastica from a table of 15 or more, a
Monotoni that needs a card from hand, ties at the end and refused records. They are
checked twice: through the library and through ``mammamia state`` as a subprocess.

A conformance set in the same layout beside the checkout (``../shared/conformance``)
is checked too when it is there; nothing else depends on it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from mammamia import RecordError, load
from mammamia.dump import state_dump

OURS = Path(__file__).parent / "records"
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "conformance"
CHECK = SHARED / "check"


def records(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.json") if not p.name.endswith(".expect.json"))


def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def check_record(path: Path) -> None:
    expect = json.loads(path.with_suffix("").with_suffix(".expect.json").read_text())
    if expect.get("error"):
        with pytest.raises(RecordError) as refused:
            load(str(path)).replay()
        if expect.get("rule"):
            assert expect["rule"] in str(refused.value)
        return
    got = state_dump(load(str(path)).replay())
    for key, want in expect.items():
        if key == "legal":
            assert sorted(map(canon, got["legal"])) == sorted(map(canon, want))
            assert len(set(map(canon, got["legal"]))) == len(got["legal"])
        else:
            assert canon(got[key]) == canon(want), key


@pytest.mark.parametrize("path", records(OURS), ids=lambda p: p.stem)
def test_our_record(path: Path) -> None:
    check_record(path)


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is absent")
@pytest.mark.parametrize("path", records(SHARED), ids=lambda p: p.stem)
def test_shared_record(path: Path) -> None:
    check_record(path)


def test_our_records_cover_the_cases_named_above() -> None:
    names = {p.stem for p in records(OURS)}
    assert {
        "stalemate-mamma-mia-in-supply",
        "stalemate-holder-starts",
        "tiny-supply-mamma-mia-alone",
        "bombastica-from-table",
        "monotoni-needs-hand-asked",
        "tie-shared-win",
    } <= names


def state_command(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mammamia", "state", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def test_our_records_through_the_command_line() -> None:
    # `mammamia state` once per record: a dump on one line and status 0, or status 2
    # with nothing on stdout and one line on stderr naming the rule broken.
    paths = records(OURS)
    assert paths
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(state_command, paths))
    for path, done in zip(paths, runs, strict=True):
        expect = json.loads(path.with_suffix("").with_suffix(".expect.json").read_text())
        if expect.get("error"):
            assert done.returncode == 2, path.name
            assert done.stdout == "" and done.stderr.count("\n") == 1, path.name
            assert expect.get("rule", "") in done.stderr, path.name
            continue
        assert done.returncode == 0, (path.name, done.stderr)
        assert done.stdout.count("\n") == 1, path.name
        got = json.loads(done.stdout)
        for key, want in expect.items():
            if key == "legal":
                assert sorted(map(canon, got[key])) == sorted(map(canon, want)), path.name
            else:
                assert canon(got[key]) == canon(want), (path.name, key)


@pytest.mark.skipif(not CHECK.exists(), reason=f"{CHECK} is absent")
def test_conformance_check_passes_through_the_command_line(tmp_path: Path) -> None:
    # An optional extra: the checker beside the checkout runs `mammamia state` once per
    # record, over every record but a few of its random games (all replay above).
    chosen = [
        p
        for p in records(SHARED) + records(OURS)
        if not p.stem.startswith("random-") or p.stem < "random-1004"
    ]
    for path in chosen:
        for name in (path.name, path.stem + ".expect.json"):
            (tmp_path / name).symlink_to(path.parent / name)
    command = f"{sys.executable} -m mammamia state"
    done = subprocess.run(
        [sys.executable, str(CHECK), "--cmd", command, "--jobs", "2", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert done.stdout.splitlines()[-1] == f"{len(chosen)} passed, 0 failed"
