"""The committed generated code (mammamia_pb/) is exactly what protos/ generates.

The gRPC code and its typed stubs are committed so that every way of installing the
package works without protoc (see pyproject.toml); this test catches a .proto change
committed without `make proto`, or generated files edited by hand.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTOS = ("arena", "rules", "admin")
GENERATED = tuple(
    f"{proto}{end}"
    for proto in PROTOS
    for end in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")
)


def test_committed_code_is_what_protos_generate(tmp_path: Path) -> None:
    scripts = Path(sysconfig.get_path("scripts"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-Imammamia_pb=protos/mammamia/v1",
            f"--plugin=protoc-gen-mypy={scripts / 'protoc-gen-mypy'}",
            f"--plugin=protoc-gen-mypy_grpc={scripts / 'protoc-gen-mypy_grpc'}",
            f"--python_out={tmp_path}",
            f"--grpc_python_out={tmp_path}",
            f"--mypy_out={tmp_path}",
            f"--mypy_grpc_out={tmp_path}",
            *(f"mammamia_pb/{proto}.proto" for proto in PROTOS),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    produced = sorted(p.name for p in (tmp_path / "mammamia_pb").iterdir())
    assert produced == sorted(GENERATED)
    for name in GENERATED:
        fresh = (tmp_path / "mammamia_pb" / name).read_text(encoding="utf-8")
        committed = (ROOT / "mammamia_pb" / name).read_text(encoding="utf-8")
        assert fresh == committed, f"mammamia_pb/{name} is stale: run `make proto` and commit it"


def test_generated_code_is_tracked_by_git() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "mammamia_pb"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    for name in GENERATED:
        assert f"mammamia_pb/{name}" in tracked
