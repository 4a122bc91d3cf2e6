"""A bundle written from finals matches played in-process verifies, offline; one with
a record's deal, a result or the final table edited does not, and says which."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mammamia.fairness import DealSet, commitment, new_server_seed, unseal
from server.competition.bundle import Bundle, Match, Rule, Stamp, verify, write
from server.competition.finals import Round, next_round, rotations
from server.db.matches import Storage
from server.runners import Runners
from tests.server.client import MAMMAMIA
from tests.server.clocks import ManualClock

FIELD = ("ann", "bo", "cy")
RULE = Rule(top=2, confidence=0.95, budget=6, tables=(3,))


def play_finals(db: Path, rounds: int) -> list[Match]:
    """Returns the finals matches of ``rounds`` rounds of ``FIELD``, each table a
    duplicate set played by a real runner to its end, the seats answering with
    seeded random options; records as stored, completed once their set ended."""

    async def go() -> list[Match]:
        storage = Storage(db)
        try:
            runners = Runners(storage, clock=ManualClock())
            rng = random.Random(3)
            played: list[Round] = []
            out: list[Match] = []
            for _ in range(rounds):
                r = next_round(FIELD, (3,), played, seed="bundle-test")
                played.append(r)
                for t, table in enumerate(r.tables):
                    set_id = f"set-{r.index}-{t}"
                    server_seed = new_server_seed()
                    finished = []
                    for index, names in enumerate(rotations(table)):
                        runner = runners.create_match(
                            len(names),
                            names=names,
                            ladder=True,
                            deal_set=(DealSet(set_id, index, len(names)), server_seed),
                        )
                        for seat in range(len(names)):
                            runner.join(seat, None, None)
                        while (d := runner.match.decision) is not None:
                            runner.answer(d.seat, d.id, rng.randrange(len(d.options)), None)
                        result = await asyncio.wait_for(runner.result(), 30)
                        assert result.status == "finished"
                        finished.append((result, names))
                    for index, (result, names) in enumerate(finished):
                        text = storage.record(result.match_id)
                        assert text is not None
                        out.append(
                            Match(
                                result.match_id,
                                r.index,
                                names,
                                "finished",
                                result.ranks,
                                ("cy",) if index == 0 else (),
                                commitment(set_id, server_seed),
                                set_id,
                                index,
                                unseal(text, server_seed),
                            )
                        )
            return out
        finally:
            storage.close()

    return asyncio.run(go())


STAMPS = (
    Stamp("registration", "2026-12-05T16:00:00Z", "schedule", "the competition began"),
    Stamp("finals", 1796486400.5, "org", "the ladder is frozen"),
)


@pytest.fixture(scope="module")
def finals_matches(tmp_path_factory: pytest.TempPathFactory) -> tuple[Match, ...]:
    return tuple(play_finals(tmp_path_factory.mktemp("finals") / "arena.db", rounds=2))


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory, finals_matches: tuple[Match, ...]) -> Path:
    bundle = Bundle("quick", 'name = "quick"\n', STAMPS, FIELD, RULE, finals_matches, "budget")
    root = tmp_path_factory.mktemp("bundle") / "good"
    write(root, bundle)
    return root


def edited(src: Path, dest: Path, change: Callable[[dict[str, Any], Path], None]) -> Path:
    """Returns a copy of the bundle ``src`` at ``dest`` after ``change(manifest, root)``,
    the manifest written back."""
    shutil.copytree(src, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    change(manifest, dest)
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest


def rehash(manifest: dict[str, Any], root: Path, name: str) -> None:
    manifest["files"][name] = hashlib.sha256((root / name).read_bytes()).hexdigest()


def test_a_bundle_of_played_finals_verifies(bundle_dir: Path) -> None:
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    assert manifest["format"] == "mammamia-bundle/1"
    assert len(manifest["matches"]) == 6 and len(manifest["files"]) == 6
    assert manifest["final_table"]["matches"] == 6
    assert manifest["final_table"]["stop"] == {"reason": "budget", "matches": 6}
    lines = manifest["final_table"]["lines"]
    assert sorted(line["name"] for line in lines) == sorted(FIELD)
    assert [line["absent"] for line in lines if line["name"] == "cy"] == [2]
    assert verify(bundle_dir) is None
    done = subprocess.run(
        [str(MAMMAMIA), "verify", str(bundle_dir)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and "verified bundle" in done.stdout


def swap_deal(manifest: dict[str, Any], root: Path) -> None:
    name = manifest["matches"][2]["record"]
    record = json.loads((root / name).read_text())
    hands = record["deal"]["hands"]
    i, j = next(
        (i, j)
        for i in range(len(hands[0]))
        for j in range(len(hands[1]))
        if hands[0][i] != hands[1][j]
    )
    hands[0][i], hands[1][j] = hands[1][j], hands[0][i]
    (root / name).write_text(json.dumps(record))
    rehash(manifest, root, name)


def swap_ranks(manifest: dict[str, Any], root: Path) -> None:
    entry = manifest["matches"][1]
    entry["ranks"] = [entry["ranks"][0] % 3 + 1, *entry["ranks"][1:]]


def record_ranks(manifest: dict[str, Any], root: Path) -> None:
    name = manifest["matches"][1]["record"]
    record = json.loads((root / name).read_text())
    record["meta"]["ranks"][0] = 5
    (root / name).write_text(json.dumps(record))
    rehash(manifest, root, name)


def table_mu(manifest: dict[str, Any], root: Path) -> None:
    manifest["final_table"]["lines"][0]["mu"] += 1e-9


def table_order(manifest: dict[str, Any], root: Path) -> None:
    lines = manifest["final_table"]["lines"]
    lines[0]["name"], lines[1]["name"] = lines[1]["name"], lines[0]["name"]


def table_stop(manifest: dict[str, Any], root: Path) -> None:
    manifest["final_table"]["stop"]["reason"] = "settled"


def unhashed(manifest: dict[str, Any], root: Path) -> None:
    name = manifest["matches"][0]["record"]
    (root / name).write_text((root / name).read_text() + " ")


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (swap_deal, "the deal is not the one the seed shuffles"),
        (swap_ranks, "the manifest's ranks"),
        (record_ranks, "meta.ranks [5"),
        (table_mu, "the final table's line 1"),
        (table_order, "name"),
        (table_stop, "the final table's stop"),
        (unhashed, "sha256"),
    ],
)
def test_an_edited_bundle_fails_with_one_line_naming_the_fault(
    bundle_dir: Path,
    tmp_path: Path,
    change: Callable[[dict[str, Any], Path], None],
    named: str,
) -> None:
    bad = edited(bundle_dir, tmp_path / "bad", change)
    fault = verify(bad)
    assert fault is not None and named in fault, fault
    assert "\n" not in fault


def test_mammamia_verify_exits_2_on_an_edited_final_table(bundle_dir: Path, tmp_path: Path) -> None:
    bad = edited(bundle_dir, tmp_path / "bad", table_mu)
    done = subprocess.run(
        [str(MAMMAMIA), "verify", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "final table's line 1" in done.stderr


def test_write_refuses_a_directory_in_use(bundle_dir: Path) -> None:
    with pytest.raises(FileExistsError):
        write(bundle_dir, Bundle("x", "", (), FIELD, RULE, (), None))


def test_an_aborted_match_with_no_record_verifies_and_counts_for_nothing(
    finals_matches: tuple[Match, ...], bundle_dir: Path, tmp_path: Path
) -> None:
    # Its host went away before storing any record of it.
    cut = Match("m-cut", 1, FIELD, "aborted", (), (), "c" * 64, "set-cut", 0, None)
    root = tmp_path / "with-cut"
    write(
        root,
        Bundle("quick", 'name = "quick"\n', STAMPS, FIELD, RULE, (*finals_matches, cut), "budget"),
    )
    assert verify(root) is None
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["matches"][-1]["record"] is None
    assert not (root / "records" / "m-cut.json").exists()
    good = json.loads((bundle_dir / "manifest.json").read_text())
    assert manifest["final_table"]["lines"] == good["final_table"]["lines"]

    def claimed_finished(manifest: dict[str, Any], root: Path) -> None:
        manifest["matches"][-1]["status"] = "finished"

    fault = verify(edited(root, tmp_path / "bad", claimed_finished))
    assert fault is not None and "m-cut" in fault and "record" in fault, fault
    with pytest.raises(ValueError, match="finished, but it has no record"):
        finished = Match("m-cut", 1, FIELD, "finished", (1, 2, 3), (), "c" * 64, None, None, None)
        write(tmp_path / "refused", Bundle("q", "", STAMPS, FIELD, RULE, (finished,), None))
