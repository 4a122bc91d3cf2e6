"""docs/examples/quick-competition.toml from start to released results: a real
server, six built-in bots entering the ladder through the CLI, every phase stamped,
Register refused once registration has closed, the finals stopping with a stated
reason, results held from the public until the organiser releases them, and the
finals kept apart from the ladder's ratings with records that verify."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from mammamia_pb import arena_pb2 as pb
from mammamia_pb import arena_pb2_grpc as pb_grpc
from server.ladder.demo import competition_line
from tests.conftest import ORGANISER_KEY
from tests.ladder.conftest import MAMMAMIA, query, wait_until

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "docs" / "examples" / "quick-competition.toml"

SIX = {
    "random-1": "random",
    "random-2": "random",
    "greedy-1": "greedy",
    "greedy-2": "greedy",
    "counter-1": "counter",
    "counter-2": "counter",
}

#: The example's schedule, shortened (the file's own fits three minutes: see
#: test_competition_file); the rest of the file is the example's.
SCHEDULE = "registration = 0\nladder = 8\nfreeze = 25\nfinals = 27\nclosed = 120\n"


def quick_file(tmp_path: Path) -> Path:
    text = QUICK.read_text(encoding="utf-8")
    text = re.sub(r"\[schedule\]\n(.*?\n)\n", f"[schedule]\n{SCHEDULE}\n", text, flags=re.S)
    assert SCHEDULE in text
    path = tmp_path / "quick.toml"
    path.write_text(text, encoding="utf-8")
    return path


def competition(
    address: str, *args: str, organiser: bool = False, check: bool = True
) -> subprocess.CompletedProcess[str]:
    key = ["--organiser-key", ORGANISER_KEY] if organiser else []
    return subprocess.run(
        [str(MAMMAMIA), "competition", *args, "--server", address, *key],
        capture_output=True,
        text=True,
        timeout=60,
        check=check,
    )


def status(address: str, organiser: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        competition(address, "status", "--json", organiser=organiser).stdout
    )
    return data


@pytest.mark.timeout(240)
def test_the_quick_competition_runs_from_registration_to_released_results(
    start_server: Callable[..., Any],
    ladder_bots: Callable[..., dict[str, subprocess.Popen[bytes]]],
    tmp_path: Path,
) -> None:
    server = start_server(competition=quick_file(tmp_path), no_web=True)
    address = server.address
    ladder_bots(address, SIX)
    assert status(address)["phase"] == "registration"

    # Registration closes on schedule: Register is refused, naming the phase.
    wait_until(lambda: status(address)["phase"] == "ladder", 60, "the ladder phase")
    with grpc.insecure_channel(address) as channel, pytest.raises(grpc.RpcError) as refused:
        pb_grpc.LadderStub(channel).Register(pb.RegisterRequest(name="late-bot"))
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "registration" in (refused.value.details() or "")
    assert "ladder phase" in (refused.value.details() or "")

    # The finals end on their own, with a reason; the public sees progress only.
    wait_until(lambda: status(address)["phase"] == "closed", 150, "the competition closed")
    public = status(address)
    assert public["held"] and not public["released"]
    assert public["standings"] == [] and public["matches"] == [] and public["final_reason"] == ""
    assert 0 < public["played"] <= public["planned"] == 36
    assert sorted(public["field"]) == sorted(SIX)

    seen = status(address, organiser=True)
    assert [s["phase"] for s in seen["stamps"]] == [
        "registration",
        "ladder",
        "freeze",
        "finals",
        "closed",
    ]
    assert [s["who"] for s in seen["stamps"]] == ["schedule"] * 4 + ["finals"]
    assert seen["final_reason"] in ("settled", "budget")
    assert [line["rank"] for line in seen["standings"]] == list(range(1, 7))
    matches = seen["matches"]
    assert len(matches) == seen["played"]
    # Balanced: every finalist the same number of matches; each table once per rotation.
    counts = {name: sum(name in m["names"] for m in matches) for name in SIX}
    assert len(set(counts.values())) == 1, counts
    by_set: dict[str, list[int]] = {}
    for m in matches:
        by_set.setdefault(m["set"], []).append(m["index"])
    assert all(sorted(i) == [0, 1, 2] for i in by_set.values()), by_set

    # The organiser's calls: a reason is required, and a closed competition stays so.
    assert (
        competition(address, "advance", "--reason", " ", organiser=True, check=False).returncode
        == 1
    )
    long = competition(address, "advance", "--reason", "x" * 5000, organiser=True, check=False)
    assert long.returncode == 1 and "INVALID_ARGUMENT" in long.stderr and len(long.stderr) < 300
    late = competition(address, "advance", "--reason", "again", organiser=True, check=False)
    assert late.returncode == 1 and "FAILED_PRECONDITION" in late.stderr
    assert competition(address, "release", check=False).returncode == 1  # no key

    competition(address, "release", organiser=True)
    released = status(address)
    assert released["released"] and not released["held"]
    assert released["standings"] == seen["standings"]
    assert released["final_reason"] == seen["final_reason"]

    # Kept apart from the ladder: no finals match is the ladder's, none rated there.
    finals_ids = {m["match"] for m in matches}
    ladder_ids = {r[0] for r in query(server.db_path, "SELECT match_id FROM ladder_matches")}
    assert finals_ids and not finals_ids & ladder_ids
    with grpc.insecure_channel(address) as channel:
        with pytest.raises(grpc.RpcError) as missing:
            pb_grpc.LadderStub(channel).GetRecord(pb.GetRecordRequest(match_id=matches[0]["match"]))
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        # Each table's records were completed with its seed: they verify.
        record = pb_grpc.OrganiserStub(channel).GetRecord(
            pb.GetRecordRequest(match_id=matches[0]["match"]),
            metadata=(("organiser-key", ORGANISER_KEY),),
        )
    path = tmp_path / "final.json"
    path.write_text(record.json, encoding="utf-8")
    verified = subprocess.run(
        [str(MAMMAMIA), "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr

    # The export: a bundle that verifies offline, and refuses an edited result.
    out = tmp_path / "bundle"
    exported = subprocess.run(
        [str(MAMMAMIA), "competition", "export", "--db", str(server.db_path), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert exported.returncode == 0, exported.stderr
    checked = subprocess.run(
        [str(MAMMAMIA), "verify", str(out)], capture_output=True, text=True, timeout=300
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [s["phase"] for s in manifest["stamps"]] == [s["phase"] for s in seen["stamps"]]
    assert manifest["final_table"]["stop"]["reason"] == seen["final_reason"]
    assert [line["name"] for line in manifest["final_table"]["lines"]] == [
        line["name"] for line in seen["standings"]
    ]
    first = manifest["final_table"]["lines"][0]
    first["wins"] += 1
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    edited = subprocess.run(
        [str(MAMMAMIA), "verify", str(out)], capture_output=True, text=True, timeout=300
    )
    assert edited.returncode == 2
    assert len((edited.stdout + edited.stderr).strip().splitlines()) == 1

    # What `mammamia demo --competition` shows of it, from the server's own log: each
    # phase as it came, the finals' end with its reason, the release.
    events = [
        json.loads(raw)
        for raw in server.log_path.read_text(encoding="utf-8").splitlines()
        if raw.startswith("{")
    ]
    shown = [line for event in events if (line := competition_line(event)) is not None]
    name = next(e["competition"] for e in events if e.get("event") == "competition_phase")
    phases = [s["phase"] for s in seen["stamps"]]
    said = [what for line in shown if (what := line.split(": ", 1)[1].split(" (")[0]) in phases]
    assert said == phases, shown
    assert f"competition {name}: the finals ended ({seen['final_reason']})" in shown
    assert any(line.startswith(f"competition {name}: results released by ") for line in shown)
