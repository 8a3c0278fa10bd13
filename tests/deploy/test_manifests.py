"""Offline checks of the deployment manifests (issue 14): no cluster, no Docker, no network.

- Each kustomize overlay renders (``kubectl kustomize``) and every document validates
  against the Kubernetes OpenAPI schemas shipped by ``kubernetes-validate``; custom
  resources (the CloudNativePG ``Cluster``) have no schema there and are skipped by kind.
- Our own policy: every container of a workload runs as non-root with a read-only root
  filesystem, has resource requests and limits and (for long-running workloads) probes,
  names a pinned image, and takes secrets only through ``secretKeyRef``.
- Both checks fail on a deliberately broken copy of the manifests.
- The compose file's structure (every service, health checks, no defaulted secret), and
  ``docker compose config`` (or Debian's ``docker-compose``) accepting it and refusing a
  broken copy wherever a compose command is installed (``.ci/run`` installs one where Docker
  is); neither needs a running engine.
- The Grafana dashboard queries only metrics the services export.

checkov's policy scan of the same rendered manifests is ``test_checkov.py`` (checkov runs
from a virtualenv of its own, ``make checkov``, since it pins packages ours need newer).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from prometheus_client import CollectorRegistry

from services.platform.metrics import BotMetrics, GameMetrics

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "k8s"
OVERLAYS = ("dev", "prod")
KUBERNETES_VERSION = "1.30"
"""The oldest Kubernetes the manifests target (native gRPC probes are GA since 1.27)."""
CUSTOM_RESOURCES = {
    ("postgresql.cnpg.io/v1", "Cluster"): "a CloudNativePG CRD; its schema ships with the "
    "operator, not with the Kubernetes API",
}
"""Kinds kubernetes-validate has no schema for, and why they are not validated."""
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"}
RUN_TO_COMPLETION_KINDS = {"Job", "CronJob"}
"""Their containers exit when done: probes would add nothing."""
SECRET_NAME = re.compile(r"SECRET|PASSWORD|TOKEN|SIGNING_KEY|PRIVATE_KEY", re.IGNORECASE)
ENV_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
URL_PASSWORD = re.compile(r"://[^:/@]+:([^@]+)@")

Document = dict[str, Any]
KEYLESS = frozenset({"game", "console"})
"""The services holding no token key of their own."""


def kubectl() -> str:
    """kubectl's path; a skip without it, but a failure under CI (the check must run there)."""
    found = shutil.which("kubectl")
    if found is None:
        message = "kubectl is not installed: the kustomize overlays cannot be rendered"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message} (CI=true: install kubectl)")
        pytest.skip(message)
    return found


def render(overlay: Path) -> list[Document]:
    """The documents of ``kubectl kustomize overlay``."""
    result = subprocess.run(
        [kubectl(), "kustomize", str(overlay)], capture_output=True, text=True, timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"kubectl kustomize {overlay} failed:\n{result.stderr}"
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def schema_errors(documents: list[Document]) -> list[str]:
    """Every document that does not validate against the Kubernetes schemas, explained."""
    errors = []
    for doc in documents:
        if (doc.get("apiVersion"), doc.get("kind")) in CUSTOM_RESOURCES:
            continue
        name = f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            errors.append(f"{name}: {error.message} at {'/'.join(map(str, error.path))}")
        except kubernetes_validate.SchemaNotFoundError:
            errors.append(f"{name}: no schema for {doc.get('apiVersion')} (a typo or a CRD "
                          "missing from CUSTOM_RESOURCES)")
    return errors


def pod_spec(doc: Document) -> Document:
    spec: Document = doc["spec"]
    if doc["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec["template"]["spec"]  # type: ignore[no-any-return]


def containers(doc: Document) -> Iterator[tuple[str, Document]]:
    spec = pod_spec(doc)
    for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        yield f"{doc['kind']}/{doc['metadata']['name']}/{container['name']}", container


def policy_violations(documents: list[Document]) -> list[str]:
    """What breaks our deployment policy, one line per problem."""
    problems = []
    for doc in documents:
        if doc.get("kind") not in WORKLOAD_KINDS:
            continue
        pod_security = pod_spec(doc).get("securityContext", {})
        for where, container in containers(doc):
            security = {**pod_security, **container.get("securityContext", {})}
            if security.get("runAsNonRoot") is not True or security.get("runAsUser") == 0:
                problems.append(f"{where}: not forced to run as non-root")
            if security.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}: allowPrivilegeEscalation is not false")
            if security.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{where}: root filesystem is writable")
            resources = container.get("resources", {})
            for part in ("requests", "limits"):
                if not resources.get(part, {}).get("memory"):
                    problems.append(f"{where}: no memory {part}")
            if not resources.get("requests", {}).get("cpu"):
                problems.append(f"{where}: no cpu request")
            if doc["kind"] not in RUN_TO_COMPLETION_KINDS:
                for probe in ("readinessProbe", "livenessProbe"):
                    if probe not in container:
                        problems.append(f"{where}: no {probe}")
            image = container.get("image", "")
            tag = image.rsplit("/", 1)[-1]
            if "@sha256:" not in image and (":" not in tag or tag.endswith(":latest")):
                problems.append(f"{where}: image {image!r} is not pinned (no tag, or :latest)")
            problems.extend(secret_problems(where, container))
    return problems


def secret_problems(where: str, container: Document) -> list[str]:
    """Secrets must come from Secret objects through secretKeyRef: never a literal value,
    never a whole Secret through envFrom, and a URL's password only as a $(VAR) reference to
    such a variable."""
    problems = []
    for source in container.get("envFrom", []):
        if "secretRef" in source:
            problems.append(f"{where}: envFrom secretRef (use secretKeyRef per variable)")
    from_secrets = {
        env["name"] for env in container.get("env", [])
        if "secretKeyRef" in env.get("valueFrom", {})
    }
    for env in container.get("env", []):
        name, value = env["name"], env.get("value")
        if SECRET_NAME.search(name) and name not in from_secrets:
            problems.append(f"{where}: {name} is not from a secretKeyRef")
        if value is None:
            continue
        for password in URL_PASSWORD.findall(value):
            references = ENV_REFERENCE.fullmatch(password)
            if references is None or references.group(1) not in from_secrets:
                problems.append(f"{where}: {name} holds a password that is not a "
                                "$(VAR) reference to a secretKeyRef variable")
    for env in container.get("env", []):
        ref = env.get("valueFrom", {}).get("secretKeyRef")
        if ref is not None and ref.get("optional") is True:
            problems.append(f"{where}: {env['name']} is optional (a secret must be required)")
    return problems


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay_documents(request: pytest.FixtureRequest) -> tuple[str, list[Document]]:
    return request.param, render(K8S / "overlays" / request.param)


def test_overlays_validate_against_the_kubernetes_schemas(
    overlay_documents: tuple[str, list[Document]],
) -> None:
    overlay, documents = overlay_documents
    assert schema_errors(documents) == [], overlay
    skipped = {(d["apiVersion"], d["kind"]) for d in documents} & set(CUSTOM_RESOURCES)
    assert skipped == set(CUSTOM_RESOURCES), "the CNPG Cluster went missing"


def test_overlays_follow_the_deployment_policy(
    overlay_documents: tuple[str, list[Document]],
) -> None:
    overlay, documents = overlay_documents
    assert policy_violations(documents) == [], overlay


def test_overlays_deploy_every_service(overlay_documents: tuple[str, list[Document]]) -> None:
    overlay, documents = overlay_documents
    by_kind: dict[str, set[str]] = {}
    for doc in documents:
        by_kind.setdefault(doc["kind"], set()).add(doc["metadata"]["name"])
        assert doc["kind"] == "Namespace" or doc["metadata"].get("namespace"), doc
    assert by_kind["Deployment"] == {"dast-game", "dast-lobby", "dast-bot", "dast-tournament",
                                     "dast-stats", "dast-accounts", "dast-console"}
    assert by_kind["HorizontalPodAutoscaler"] == {"dast-game", "dast-bot"}
    assert {"dast-game", "dast-lobby", "dast-bot", "dast-tournament", "dast-accounts",
            "dast-nats"} <= by_kind["PodDisruptionBudget"]
    assert by_kind["StatefulSet"] == {"dast-nats"}
    assert by_kind["Job"] == {"dast-migrate"}
    assert by_kind["Cluster"] == {"dast-postgres"}
    nats = next(d for d in documents if d["kind"] == "StatefulSet")
    assert nats["spec"]["replicas"] == 3
    headless = next(d for d in documents if d["metadata"]["name"] == "dast-game-headless")
    assert headless["spec"]["clusterIP"] == "None"
    deployments = [d for d in documents if d["kind"] == "Deployment"]
    assert len({d["spec"]["template"]["spec"]["containers"][0]["image"] for d in deployments}) == 1
    for deployment in deployments:
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        component = deployment["metadata"]["name"].removeprefix("dast-")
        assert container["args"] == ["serve", "--services", component]
        assert "grpc" in container["livenessProbe"], f"{overlay}: {component} probe not gRPC"
        secrets = {env["name"]: env["valueFrom"]["secretKeyRef"]["name"]
                   for env in container["env"] if "secretKeyRef" in env.get("valueFrom", {})}
        assert secrets["DAST_TOKEN_KEYS"] == "dast", component
        # Each issuing service its own token key, the game service and the console none (no
        # replica mints another's tokens; the console acts with its operators' tokens).
        assert secrets.get("DAST_TOKEN_SIGNING_KEYS") == (
            None if component in KEYLESS else f"dast-token-key-{component}"), component


def broken_copy(tmp_path: Path, edit: Any) -> Path:
    """A copy of k8s/ with ``edit(game_yaml_text) -> text`` applied to the game manifest."""
    copy = tmp_path / "k8s"
    shutil.copytree(K8S, copy)
    game = copy / "base" / "game.yaml"
    game.write_text(edit(game.read_text()))
    return copy / "overlays" / "prod"


def test_schema_check_fails_on_a_broken_manifest(tmp_path: Path) -> None:
    def misspell(text: str) -> str:
        broken = text.replace("terminationGracePeriodSeconds: 30",
                              "terminationGracePeriodSecond: 30")
        return broken.replace("maxUnavailable: 1\n", 'maxUnavailable: {many: "1"}\n')

    errors = schema_errors(render(broken_copy(tmp_path, misspell)))
    assert any("Deployment/dast-game" in error and "terminationGracePeriodSecond" in error
               for error in errors), errors
    assert any("PodDisruptionBudget/dast-game" in error for error in errors), errors


def test_policy_check_fails_on_a_broken_manifest(tmp_path: Path) -> None:
    def weaken(text: str) -> str:
        text = text.replace("            readOnlyRootFilesystem: true\n", "", 1)
        liveness = ("          livenessProbe:\n            grpc: {port: 50051}\n"
                    "            periodSeconds: 10\n            failureThreshold: 3\n")
        text = text.replace(liveness, "", 1)
        text = text.replace("""              valueFrom:
                secretKeyRef: {name: dast, key: DAST_TOKEN_KEYS}""",
                            """              value: '{"keys": []}'""", 1)
        text = text.replace("$(DAST_DB_PASSWORD)", "hunter2", 1)
        return text.replace("        runAsNonRoot: true\n        runAsUser: 65532\n",
                            "        runAsUser: 0\n", 1)

    documents = render(broken_copy(tmp_path, weaken))
    # The overlay sets the image tag and the resources: break those on the rendered document.
    game = next(d for d in documents
                if d["kind"] == "Deployment" and d["metadata"]["name"] == "dast-game")
    container = game["spec"]["template"]["spec"]["containers"][0]
    container["image"] = "ghcr.io/dast/dast:latest"
    del container["resources"]["limits"]
    problems = [p for p in policy_violations(documents) if p.startswith("Deployment/dast-game/")]
    expected = ["root filesystem is writable", "no memory limits", "no livenessProbe",
                "DAST_TOKEN_KEYS is not from a secretKeyRef", "DAST_DATABASE_URL holds a password",
                "not forced to run as non-root", "is not pinned"]
    for fragment in expected:
        assert any(fragment in problem for problem in problems), (fragment, problems)
    assert not [p for p in policy_violations(documents)
                if not p.startswith("Deployment/dast-game/")]


COMPOSE = REPO / "deploy" / "docker-compose.yml"
DAST_SERVICES = {"lobby": "lobby", "game-1": "game", "game-2": "game", "bot": "bot",
                 "tournament-1": "tournament", "tournament-2": "tournament",
                 "stats": "stats", "accounts": "accounts", "console": "console"}


def test_compose_file_runs_every_service_with_health_checks_and_no_default_secret() -> None:
    # What compose itself would not catch: the services, checks and secrets dast needs.
    text = COMPOSE.read_text()
    compose = yaml.safe_load(text)
    services: dict[str, Document] = compose["services"]
    assert {"nats-1", "nats-2", "nats-3", "postgres", "migrate", "prometheus",
            *DAST_SERVICES} <= set(services)
    for name, component in DAST_SERVICES.items():
        service = services[name]
        assert service["command"] == ["serve", "--services", component]
        assert "healthcheck" in service and service["healthcheck"]["test"][0] == "CMD", name
        assert service["env_file"] == ["secrets.env"], name
        assert service["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
        issuer_key = f"/run/secrets/token_key_{component}"
        assert service["environment"]["DAST_TOKEN_KEYS"] == "/run/secrets/token_keys", name
        assert service["environment"].get("DAST_TOKEN_SIGNING_KEYS") == (
            None if component in KEYLESS else issuer_key), name
        assert set(service["secrets"]) == ({"token_keys"} if component in KEYLESS
                                           else {"token_keys", f"token_key_{component}"})
    for index in (1, 2, 3):
        nats = services[f"nats-{index}"]
        assert "--jetstream" in nats["command"] and "--routes" in nats["command"]
        assert "healthcheck" in nats
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD_FILE"].startswith("/run/secrets/")
    assert "healthcheck" in services["postgres"]
    # No secret in the file itself, nor a ${VAR:-default} that would hand out a known one.
    assert not re.search(r"\$\{[A-Z_]*(SECRET|KEY|PASSWORD)[A-Z_]*:?-", text)
    for service in services.values():
        environment = service.get("environment", {})
        for variable, value in environment.items():
            assert not SECRET_NAME.search(variable) or variable.endswith("_FILE") or str(
                value).startswith("/run/secrets/"), variable
        for value in environment.values():
            assert not URL_PASSWORD.search(str(value)), value
    prometheus = yaml.safe_load((REPO / "deploy" / "prometheus.yml").read_text())
    scraped = {target for job in prometheus["scrape_configs"]
               for group in job["static_configs"] for target in group["targets"]}
    assert {f"{name}:9464" for name in DAST_SERVICES} <= scraped


def test_dockerfile_is_multi_stage_and_non_root() -> None:
    lines = (REPO / "deploy" / "Dockerfile").read_text().splitlines()
    stages = [line for line in lines if line.startswith("FROM ")]
    assert len(stages) >= 2 and " AS " in stages[0]
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in {"0", "root"}
    assert all(":latest" not in stage for stage in stages)


def test_dashboard_queries_only_exported_metrics() -> None:
    registry = CollectorRegistry()
    GameMetrics(registry)
    BotMetrics(registry)
    # Labelled metrics have no samples before their first use: derive the series names.
    suffixes = {
        "counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",),
    }
    exported = {family.name + suffix for family in registry.collect()
                for suffix in suffixes[family.type]}
    dashboard = json.loads((REPO / "deploy" / "grafana" / "dast.json").read_text())
    queried = {
        name for panel in dashboard["panels"] for target in panel.get("targets", [])
        for name in re.findall(r"\bdast_[a-z_]+", target["expr"])
    }
    assert queried, "the dashboard queries nothing"
    assert queried <= exported, queried - exported


def _docker_compose() -> list[str] | None:
    """A compose command that checks a compose file without a running engine: Docker's
    ``docker compose`` plugin, or Debian's ``docker-compose`` (1.29)."""
    docker = shutil.which("docker")
    if docker is not None:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True,
                               timeout=30, check=False)
        if probe.returncode == 0:
            return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone is not None else None


def _compose_project(tmp_path: Path) -> Path:
    """A copy of deploy/ with dummies of the files the operator makes (docs/deploy.md)."""
    project = tmp_path / "deploy"
    shutil.copytree(COMPOSE.parent, project)
    shutil.copy(project / "secrets.env.example", project / "secrets.env")
    (project / "secrets").mkdir(exist_ok=True)
    (project / "secrets" / "postgres_password").write_text("not-a-real-password\n")
    for name in ("token_keys", "token_key_lobby", "token_key_bot", "token_key_tournament",
                 "token_key_stats", "token_key_accounts"):
        (project / "secrets" / f"{name}.json").write_text('{"keys": []}\n')
    return project


def _compose_config(compose: list[str], file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*compose, "-f", str(file), "config", "--quiet"],
                          capture_output=True, text=True, timeout=120, check=False)


def test_docker_compose_accepts_the_compose_file_and_refuses_a_broken_one(
        tmp_path: Path) -> None:
    compose = _docker_compose()
    if compose is None:
        if os.environ.get("CI", "").lower() == "true" and shutil.which("docker"):
            pytest.fail("Docker is here but no compose command: .ci/run installs one")
        pytest.skip("no compose command here (the structure test above checks the file)")
    project = _compose_project(tmp_path)
    checked = _compose_config(compose, project / COMPOSE.name)
    assert checked.returncode == 0, checked.stderr
    broken = project / "broken.yml"
    broken.write_text(COMPOSE.read_text().replace(
        "condition: service_completed_successfully", "condition: when_it_feels_like_it", 1))
    assert _compose_config(compose, broken).returncode != 0
