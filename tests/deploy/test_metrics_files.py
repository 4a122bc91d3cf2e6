"""The monitoring files of deploy/ agree with the server's metrics: the Grafana
dashboard asks only for series the server exposes, by labels they carry; Prometheus
scrapes the port and path the hosts serve ``/metrics`` on (compose and the
Kubernetes annotations); the compose services mount files that exist and Grafana's
provisioning points at them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML ships no types

from server.metrics import Metrics

from .test_deploy_files import (
    DEPLOY,
    compose,
    compose_commands,
    deployment,
    flag_value,
    host_container,
)

DASHBOARD = DEPLOY / "grafana" / "dashboards" / "mammamia.json"
PROMETHEUS = DEPLOY / "prometheus" / "prometheus.yml"
PROMETHEUS_KUBE = DEPLOY / "prometheus" / "kubernetes.yml"
PROVISIONING = DEPLOY / "grafana" / "provisioning"
#: Labels every scraped series carries besides its own (Prometheus adds them), and
#: a histogram's bucket bound.
ADDED_LABELS = {"instance", "job", "le"}


def exposed() -> dict[str, set[str]]:
    """Returns every sample name a server's metrics expose, with its labels (each
    labelled metric given one observation, as a serving server's would be)."""
    metrics = Metrics()
    metrics.answered("ada", True, 0.1)
    metrics.missed("ada", True, "late")
    metrics.write_timer("db-writer")(0.001)
    metrics.journal_timer()(0.001)
    metrics.collector_pause_seconds.labels("0").observe(0.001)
    found: dict[str, set[str]] = {}
    for family in metrics.registry.collect():
        for sample in family.samples:
            found.setdefault(sample.name, set()).update(sample.labels)
    return found


def expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def test_the_dashboard_asks_only_for_what_the_server_exposes() -> None:
    samples = exposed()
    exprs = expressions()
    assert len(exprs) >= 10
    used: set[str] = set()
    for expr in exprs:
        names = set(re.findall(r"\bmammamia_[a-z_]+", expr))
        assert names, expr
        unknown = names - samples.keys()
        assert not unknown, f"{expr} asks for {sorted(unknown)}, which the server lacks"
        used |= names
        labels = set().union(*(samples[n] for n in names)) | ADDED_LABELS
        for group in re.findall(r"\bby \(([^)]*)\)", expr):
            grouped = {label.strip() for label in group.split(",")}
            assert grouped <= labels, f"{expr} groups by {sorted(grouped - labels)}"
        for label in re.findall(r"[{,]\s*([a-z_]+)\s*[!=]~?", expr):
            assert label in labels, f"{expr} selects on {label}, which its series lack"
    # Every metric the server counts has a panel.
    families = {re.sub(r"_(total|bucket|count|sum|created)$", "", n) for n in samples}
    shown = {re.sub(r"_(total|bucket|count|sum)$", "", n) for n in used}
    assert families <= shown, sorted(families - shown)


def test_the_dashboard_reads_the_provisioned_data_source() -> None:
    (source,) = yaml.safe_load(
        (PROVISIONING / "datasources" / "prometheus.yaml").read_text(encoding="utf-8")
    )["datasources"]
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    uids = {p["datasource"]["uid"] for p in dashboard["panels"] if "datasource" in p}
    assert uids == {source["uid"]}
    assert source["url"] == "http://prometheus:9090"
    (provider,) = yaml.safe_load(
        (PROVISIONING / "dashboards" / "mammamia.yaml").read_text(encoding="utf-8")
    )["providers"]
    mounts = dict(v.split(":")[:2][::-1] for v in compose()["services"]["grafana"]["volumes"])
    assert (DEPLOY / mounts[provider["options"]["path"]]).resolve() == DASHBOARD.parent


def test_prometheus_scrapes_each_compose_host_where_it_serves_metrics() -> None:
    config: dict[str, Any] = yaml.safe_load(PROMETHEUS.read_text(encoding="utf-8"))
    (job,) = config["scrape_configs"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    targets = {t for c in job["static_configs"] for t in c["targets"]}
    hosts = compose_commands("serve")
    assert targets == {f"{name}:{flag_value(args, '--web-port')}" for name, args in hosts.items()}
    # The metrics profile's services mount files that are here.
    services = compose()["services"]
    for name in ("prometheus", "grafana"):
        assert services[name]["profiles"] == ["metrics"]
        for volume in services[name]["volumes"]:
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (DEPLOY / source).exists(), (name, source)


def test_the_pods_are_annotated_with_the_port_and_path_of_their_metrics() -> None:
    annotations = deployment()["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics"
    container = host_container()
    web = {p["name"]: p["containerPort"] for p in container["ports"]}["web"]
    assert annotations["prometheus.io/port"] == str(web)
    assert flag_value([str(a) for a in container["args"]], "--web-port") == str(web)
    config: dict[str, Any] = yaml.safe_load(PROMETHEUS_KUBE.read_text(encoding="utf-8"))
    (job,) = config["scrape_configs"]
    kept = [r for r in job["relabel_configs"] if r.get("action") == "keep"]
    assert kept[0]["source_labels"] == ["__meta_kubernetes_pod_annotation_prometheus_io_scrape"]


def test_the_files_are_where_the_docs_say() -> None:
    docs = (Path(DEPLOY).parent / "docs" / "deploy.md").read_text(encoding="utf-8")
    for path in (DASHBOARD, PROMETHEUS, PROMETHEUS_KUBE):
        assert str(path.relative_to(DEPLOY.parent)) in docs, path
