"""The package as users get it: build the sdist and the wheel (`python -m build`,
the wheel made from the sdist), install the wheel into a fresh virtual environment
and play a local arena with a bot file from a folder outside the repository."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BOT = textwrap.dedent("""\
    from client_sdk import Bot


    class MyBot(Bot):
        def choose(self, view):
            return view.legal[0]
""")


# Lines of the machine's pip and Python set-up, not of this package's build.
_NOT_OURS = ("is ignored: it is neither a file nor a directory", "byte-compiling is disabled")


def _warnings(output: str) -> list[str]:
    """Returns the warning lines of a build or an install (deprecations included)."""
    return [
        line
        for line in output.splitlines()
        if ("warn" in line.lower() or "deprecat" in line.lower())
        and not any(n in line for n in _NOT_OURS)
    ]


def _run(cmd: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done


def test_wheel_installs_and_plays(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    build = _run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], tmp_path)
    assert not _warnings(build.stdout + build.stderr), build.stdout + build.stderr
    [sdist] = dist.glob("*.tar.gz")
    [wheel] = dist.glob("*.whl")
    with tarfile.open(sdist) as t:
        names = t.getnames()
    for generated in ("arena_pb2.py", "arena_pb2_grpc.py", "arena_pb2.pyi"):
        assert any(n.endswith(f"mammamia_pb/{generated}") for n in names), names
        assert f"mammamia_pb/{generated}" in zipfile.ZipFile(wheel).namelist()

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    installed = _run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], tmp_path
    )
    assert not _warnings(installed.stdout + installed.stderr), installed.stderr

    play = tmp_path / "play"
    play.mkdir()
    (play / "bot.py").write_text(BOT, encoding="utf-8")
    mammamia = str(venv / "bin" / "mammamia")
    assert "arena" in _run([mammamia, "--help"], play).stdout
    done = _run(
        [mammamia, "arena", "bot.py:MyBot", "random", "--games", "4", "--players", "2"], play
    )
    assert "MyBot" in done.stdout + done.stderr
    _run([str(venv / "bin" / "python"), "-c", "import client_sdk, mammamia_pb.arena_pb2"], play)
