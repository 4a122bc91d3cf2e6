"""The deployment files (Dockerfile, deploy/compose.yaml, deploy/kubernetes/) agree
with the server they run: they parse, their probes ask the standard health service,
the grace given on stop exceeds the drain they ask for, no secret is written in
them, and every ``mammamia`` flag they pass exists. No Docker and no cluster needed;
the health check script and the entry point run against a real local server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no types

from tests.conftest import MAMMAMIA, RunningServer

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBE = DEPLOY / "kubernetes"
COMPOSE = DEPLOY / "compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"
HEALTHCHECK = DEPLOY / "healthcheck.py"
ENTRYPOINT = DEPLOY / "entrypoint.sh"
GRPC_PORT = 50051
WEB_PORT = 8051

#: After --drain-seconds the host aborts what still runs and waits at most this long
#: for those records to be stored (server.runners.Host.drain), then stops gRPC (1 s).
ABORT_WAIT_S = 30


def yaml_files() -> list[Path]:
    return [COMPOSE, *sorted(KUBE.glob("*.yaml"))]


def documents(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def kube_objects() -> list[dict[str, Any]]:
    return [
        d
        for p in sorted(KUBE.glob("*.yaml"))
        for d in documents(p)
        if "kind" in d and d["kind"] != "Kustomization"
    ]


def deployment() -> dict[str, Any]:
    """Returns the hosts' workload (a StatefulSet: each pod's name is its host id)."""
    (dep,) = [o for o in kube_objects() if o["kind"] in ("Deployment", "StatefulSet")]
    return dep


def host_container() -> dict[str, Any]:
    (container,) = deployment()["spec"]["template"]["spec"]["containers"]
    found: dict[str, Any] = container
    return found


def compose() -> dict[str, Any]:
    (doc,) = documents(COMPOSE)
    return doc


def compose_commands(command: str) -> dict[str, list[str]]:
    """Returns the ``mammamia COMMAND ...`` argument lists of the compose services, by
    service (the image's entry point runs ``mammamia`` with the service's command)."""
    return {
        name: [str(a) for a in svc["command"]]
        for name, svc in compose()["services"].items()
        if isinstance(svc.get("command"), list) and svc["command"][:1] == [command]
    }


def dockerfile_instructions() -> list[tuple[str, str]]:
    """Returns (INSTRUCTION, arguments) per Dockerfile instruction, continuations joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def flag_value(args: list[str], flag: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == flag:
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


@cache
def help_flags(command: str) -> frozenset[str]:
    """Returns the long flags ``mammamia COMMAND --help`` lists."""
    out = subprocess.run(
        [str(MAMMAMIA), command, "--help"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return frozenset(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", out))


def used_flags(args: list[str]) -> set[str]:
    return {a.split("=", 1)[0] for a in args if a.startswith("--")}


def serve_argument_lists() -> dict[str, list[str]]:
    """Every ``mammamia serve`` argument list the files hold, by where it is."""
    lists = {f"compose {n}": a for n, a in compose_commands("serve").items()}
    lists["kubernetes"] = [str(a) for a in host_container()["args"]]
    (cmd,) = [rest for word, rest in dockerfile_instructions() if word == "CMD"]
    lists["Dockerfile CMD"] = yaml.safe_load(cmd)
    return lists


# -- they parse ------------------------------------------------------------------------


@pytest.mark.parametrize("path", yaml_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_yaml_parses(path: Path) -> None:
    assert documents(path), f"{path} holds no document"


def test_kustomization_lists_every_manifest() -> None:
    (kustomization,) = documents(KUBE / "kustomization.yaml")
    manifests = {p.name for p in KUBE.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == manifests


def test_the_files_the_docs_and_the_image_name_exist() -> None:
    assert (ROOT / "docs" / "deploy.md").is_file()
    assert (KUBE / "README.md").is_file()
    for name, svc in compose()["services"].items():
        for volume in svc.get("volumes", []):
            source = str(volume).split(":", 1)[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name} mounts {source}, which is missing"


# -- probes and health -----------------------------------------------------------------


def test_kubernetes_probes_ask_the_standard_health_service() -> None:
    container = host_container()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"grpc": GRPC_PORT, "web": WEB_PORT}
    args = [str(a) for a in container["args"]]
    assert flag_value(args, "--port") == str(GRPC_PORT)
    assert flag_value(args, "--web-port") == str(WEB_PORT)
    assert flag_value(args, "--host") == "0.0.0.0"
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        grpc_probe = container[probe]["grpc"]
        assert grpc_probe["port"] == GRPC_PORT, probe
        assert grpc_probe.get("service", "") == "", probe  # the server as a whole


def test_liveness_outlasts_a_short_database_outage() -> None:
    """Health is NOT_SERVING while writes fail; the host recovers by itself, so the
    liveness probe gives it at least a minute before a restart."""
    live = host_container()["livenessProbe"]
    assert live["periodSeconds"] * live["failureThreshold"] >= 60


def test_the_service_routes_grpc_and_the_web_page() -> None:
    (svc,) = [
        o for o in kube_objects() if o["kind"] == "Service" and o["metadata"]["name"] == "mammamia"
    ]
    ports = {p["name"]: p for p in svc["spec"]["ports"]}
    assert ports["grpc"]["targetPort"] == "grpc"
    assert ports["grpc"]["appProtocol"] == "kubernetes.io/h2c"
    assert ports["web"]["targetPort"] == "web"
    labels = deployment()["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= labels.items()


def test_no_service_link_variables_reach_the_server() -> None:
    """A Service named mammamia would set MAMMAMIA_PORT=tcp://... in the pod."""
    assert deployment()["spec"]["template"]["spec"]["enableServiceLinks"] is False


def test_hosts_share_one_database_each_with_a_host_id_and_address_of_its_own() -> None:
    """Many hosts on one database: each needs a host id kept across restarts (the
    matches it resumes) and an address that other hosts' bots reach."""
    hosts = deployment()
    assert hosts["kind"] == "StatefulSet" and hosts["spec"]["replicas"] >= 2
    args = [str(a) for a in host_container()["args"]]
    assert flag_value(args, "--host-id") == "$(POD_NAME)"
    advertise = flag_value(args, "--advertise") or ""
    (headless,) = [
        o for o in kube_objects() if o["kind"] == "Service" and o["spec"].get("clusterIP") == "None"
    ]
    assert hosts["spec"]["serviceName"] == headless["metadata"]["name"]
    assert advertise.startswith(f"$(POD_NAME).{headless['metadata']['name']}.")
    env = {v["name"]: v for v in host_container()["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"

    serves = compose_commands("serve")
    assert len(serves) == 2
    assert len({flag_value(a, "--db") for a in serves.values()}) == 1, "one database"
    ids = [flag_value(a, "--host-id") for a in serves.values()]
    addresses = [flag_value(a, "--advertise") for a in serves.values()]
    assert None not in ids and len(set(ids)) == 2
    assert None not in addresses and len(set(addresses)) == 2


def test_the_image_checks_health_with_the_health_protocol() -> None:
    instructions = dockerfile_instructions()
    (check,) = [rest for word, rest in instructions if word == "HEALTHCHECK"]
    assert "/usr/local/lib/mammamia/healthcheck.py" in check
    assert any(
        word == "COPY"
        and "deploy/healthcheck.py" in rest
        and "/usr/local/lib/mammamia/healthcheck.py" in rest
        for word, rest in instructions
    )
    text = HEALTHCHECK.read_text(encoding="utf-8")
    assert "grpc_health.v1" in text and 'service=""' in text


# -- the drain and the grace -----------------------------------------------------------


def test_termination_grace_exceeds_the_drain() -> None:
    spec = deployment()["spec"]["template"]["spec"]
    drain = int(flag_value([str(a) for a in host_container()["args"]], "--drain-seconds") or 30)
    grace = spec["terminationGracePeriodSeconds"]
    assert grace > drain + ABORT_WAIT_S, (grace, drain)


def duration_s(text: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text):
        total += float(number) * units[unit]
    return total


def test_compose_stop_grace_exceeds_the_drain() -> None:
    services = compose()["services"]
    for name, args in compose_commands("serve").items():
        drain = int(flag_value(args, "--drain-seconds") or 30)
        grace = duration_s(services[name]["stop_grace_period"])
        assert grace > drain + ABORT_WAIT_S / 2, (name, grace, drain)


# -- no secret in the files ------------------------------------------------------------


SECRET_WORDS = re.compile(r"KEY|PASSWORD|SECRET|TOKEN", re.IGNORECASE)


def environment_values() -> Iterator[tuple[str, str, Any]]:
    """(where, variable, literal value) of every variable the files set."""
    for name, svc in compose()["services"].items():
        env = svc.get("environment") or {}
        items = env.items() if isinstance(env, dict) else (e.split("=", 1) for e in env)
        for var, value in items:
            yield f"compose {name}", var, value
    for container in deployment()["spec"]["template"]["spec"]["containers"]:
        for var in container.get("env", []):
            yield "kubernetes", var["name"], var.get("value")


def test_secrets_are_never_literal() -> None:
    for where, var, value in environment_values():
        if SECRET_WORDS.search(var) and value is not None:
            assert var.endswith("_FILE"), (where, var, value)
            assert str(value).startswith(("/run/secrets/", "/etc/mammamia/")), (where, var)


def test_no_kubernetes_secret_is_defined_here() -> None:
    assert not [o for o in kube_objects() if o["kind"] == "Secret"]
    env = {v["name"]: v for v in host_container()["env"]}
    assert env["MAMMAMIA_DB"]["valueFrom"]["secretKeyRef"]["name"] == "mammamia"


def test_no_password_in_a_database_url() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in [*yaml_files(), DOCKERFILE])
    for url in re.findall(r"postgres(?:ql)?://[^\s\"',\]]+", text):
        assert urlsplit(url).password in (None, "PASSWORD"), url  # or a placeholder


def test_no_key_on_a_command_line() -> None:
    """A key given as --organiser-key or --key shows in the process list."""
    for where, args in [*serve_argument_lists().items(), *compose_commands("bot").items()]:
        assert not used_flags(args) & {"--organiser-key", "--key"}, where


def test_compose_secrets_are_files_kept_out_of_git() -> None:
    for name, secret in compose()["secrets"].items():
        assert secret["file"].startswith("./secrets/"), name
    assert "secrets/" in (DEPLOY / ".gitignore").read_text(encoding="utf-8").split()
    tracked = subprocess.run(
        ["git", "ls-files", "deploy/secrets"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout
    assert tracked == ""


# -- the flags exist -------------------------------------------------------------------


def test_every_serve_flag_used_exists() -> None:
    known = help_flags("serve")
    for where, args in serve_argument_lists().items():
        assert args[0] == "serve", where
        unknown = used_flags(args) - known
        assert not unknown, f"{where} passes {sorted(unknown)}, which `mammamia serve` lacks"


def test_every_bot_flag_used_exists() -> None:
    known = help_flags("bot")
    bots = compose_commands("bot")
    assert bots
    for where, args in bots.items():
        unknown = used_flags(args) - known
        assert not unknown, f"{where} passes {sorted(unknown)}, which `mammamia bot` lacks"
        assert flag_value(args, "--server") in ("host-a:50051", "host-b:50051")
    # One bot enters through each host: one ladder, whichever host a bot enters by.
    assert {flag_value(a, "--server") for a in bots.values()} == {"host-a:50051", "host-b:50051"}


def test_every_serve_variable_used_exists() -> None:
    """The MAMMAMIA_* variables the files set are ones the server (or the image's
    entry point, or the health check) reads."""
    help_text = subprocess.run(
        [str(MAMMAMIA), "serve", "--help"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    ours = ENTRYPOINT.read_text(encoding="utf-8") + HEALTHCHECK.read_text(encoding="utf-8")
    for where, var, _ in environment_values():
        if var.startswith("MAMMAMIA_"):
            assert var in help_text or var in ours, (where, var)
    for word, rest in dockerfile_instructions():
        if word == "ENV":
            for var in re.findall(r"\b(MAMMAMIA_\w+)=", rest):
                assert var in help_text, var


# -- the image is built from the project's own files -----------------------------------


def test_the_image_copies_every_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    tops = {p.split(".")[0] for p in pyproject["tool"]["setuptools"]["packages"]}
    copied = {
        rest.split()[0].rstrip("/")
        for word, rest in dockerfile_instructions()
        if word == "COPY" and not rest.startswith("--")
    }
    assert tops <= copied, f"the image misses {sorted(tops - copied)}"
    assert "pyproject.toml" in " ".join(r for w, r in dockerfile_instructions() if w == "COPY")
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    for top in tops:
        assert f"!{top}/" in ignore, f".dockerignore keeps {top}/ out of the build"
    for path in ("pyproject.toml", "README.md", "deploy/entrypoint.sh", "deploy/healthcheck.py"):
        assert f"!{path}" in ignore, path


def test_the_image_runs_as_a_user_and_exposes_both_ports() -> None:
    instructions = dockerfile_instructions()
    (user,) = [rest for word, rest in instructions if word == "USER"]
    assert not user.startswith(("0", "root"))
    exposed = {int(p) for word, rest in instructions if word == "EXPOSE" for p in rest.split()}
    assert exposed == {GRPC_PORT, WEB_PORT}
    assert any(word == "RUN" and "pip install" in rest for word, rest in instructions)
    assert [yaml.safe_load(rest) for word, rest in instructions if word == "ENTRYPOINT"] == [
        ["mammamia-entrypoint"]
    ]


# -- the health check and the entry point, against a real server -----------------------


def healthcheck(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MAMMAMIA_")}
    return subprocess.run(
        [sys.executable, str(HEALTHCHECK)],
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_healthcheck_passes_on_a_serving_server(server: RunningServer) -> None:
    done = healthcheck({"MAMMAMIA_PORT": str(server.port)})
    assert done.returncode == 0, done.stderr
    assert "SERVING" in done.stdout


def test_healthcheck_fails_when_nothing_serves(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = healthcheck({"MAMMAMIA_PORT": str(port)})
    assert done.returncode == 1
    assert "UNAVAILABLE" in done.stderr


def test_healthcheck_speaks_tls_to_a_tls_server(
    start_server: Callable[..., RunningServer], self_signed_certificate: tuple[Path, Path]
) -> None:
    key, cert = self_signed_certificate
    server = start_server(tls_cert=cert, tls_key=key)
    done = healthcheck({"MAMMAMIA_PORT": str(server.port), "MAMMAMIA_TLS_CERT": str(cert)})
    assert done.returncode == 0, done.stderr


def test_entrypoint_hands_the_password_file_to_libpq(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "mammamia"  # stands in for the server: prints what it got
    fake.write_text('#!/bin/sh\nprintf "%s|%s" "$PGPASSWORD" "$*"\n', encoding="utf-8")
    fake.chmod(0o755)
    secret = tmp_path / "password"
    secret.write_text("s3cret\n", encoding="utf-8")
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "MAMMAMIA_DB_PASSWORD_FILE": str(secret),
    }
    done = subprocess.run(
        ["sh", str(ENTRYPOINT), "serve", "--host", "0.0.0.0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "s3cret|serve --host 0.0.0.0")
    secret.write_text("", encoding="utf-8")
    done = subprocess.run(
        ["sh", str(ENTRYPOINT), "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2 and "no password" in done.stderr
    del env["MAMMAMIA_DB_PASSWORD_FILE"]
    done = subprocess.run(
        ["sh", str(ENTRYPOINT), "bot", "random"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "|bot random")


def test_entry_and_command_are_in_exec_form() -> None:
    """No shell in between, so SIGTERM reaches the server and starts its drain."""
    for word, rest in dockerfile_instructions():
        if word in ("CMD", "ENTRYPOINT"):
            assert isinstance(yaml.safe_load(rest), list), word
    assert ENTRYPOINT.read_text(encoding="utf-8").rstrip().endswith('exec mammamia "$@"')
