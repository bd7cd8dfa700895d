"""Monitoring (components/monitoring/monitoring_stack.py): kube-prometheus-stack or an existing Prometheus, the GPU Operator's
DCGM ServiceMonitor, DRANET's PodMonitor, the alert rules and the dashboard."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from components.drivers.dra_drivers import ChartValuesError, _documented
from components.monitoring import monitoring_stack as mc
from oke_gpu_rdma.common import images, network_policies, pod_security
from oke_gpu_rdma.monitoring import chart_pods, dashboard, grafana_admin
from oke_gpu_rdma.monitoring import kube_prometheus_stack as kps
from stack_config.loading import load_stack
from stack_config.problems import ConfigError
from tests.support import EXAMPLE_REGION, Run, raw_config

RELEASE = "kubernetes:helm.sh/v3:Release"
POD_MONITOR = "kubernetes:monitoring.coreos.com/v1:PodMonitor"
RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
NAMESPACE = "kubernetes:core/v1:Namespace"
SECRET = "kubernetes:core/v1:Secret"
JOB = "kubernetes:batch/v1:Job"
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
POLICY_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
ON_SYSTEM = {"nodeSelector": {"oke-gpu-rdma/node-pool": "system"}}
NODE_AS_INSTANCE = {
    "sourceLabels": ["__meta_kubernetes_pod_node_name"],
    "targetLabel": "instance",
    "action": "replace",
}


def test_the_stack_installs_kube_prometheus_stack_on_the_system_pool(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    release = run.one(RELEASE, "monitoring-release").inputs
    assert (release["chart"], release["version"], release["namespace"]) == (
        "kube-prometheus-stack",
        "88.5.3",
        "monitoring",
    )
    assert release["repositoryOpts"] == {"repo": "https://prometheus-community.github.io/helm-charts"}
    # The component declares its namespaces, not Helm's createNamespace: the chart's at restricted, the node
    # exporter's own at privileged (it uses the host's network and PID namespace).
    assert release.get("createNamespace") is None
    own = run.one(NAMESPACE, "monitoring-namespace")
    assert own.inputs["metadata"] == {
        "name": "monitoring",
        "labels": pod_security.namespace_labels("restricted"),
    }
    node_exporter = run.one(NAMESPACE, "monitoring-node-exporter-namespace")
    assert node_exporter.inputs["metadata"] == {
        "name": "monitoring-node-exporter",
        "labels": pod_security.namespace_labels("privileged"),
    }
    assert {own.urn, node_exporter.urn} <= set(run.one(RELEASE, "monitoring-release").dependencies)
    assert release["values"] == {
        "prometheusOperator": {**ON_SYSTEM, "admissionWebhooks": {"patch": ON_SYSTEM}},
        "prometheus": {"prometheusSpec": ON_SYSTEM},
        "alertmanager": {"alertmanagerSpec": ON_SYSTEM},
        # Grafana's admin from the Secret grafana-admin: the chart renders no admin password of its own.
        "grafana": {
            **ON_SYSTEM,
            "admin": {
                "existingSecret": "grafana-admin",
                "userKey": "admin-user",
                "passwordKey": "admin-password",
            },
        },
        # The node labels the GPU-count and check rules join on.
        "kube-state-metrics": {
            **ON_SYSTEM,
            "metricLabelsAllowlist": [
                "nodes=[oke-gpu-rdma/node-pool,oke-gpu-rdma/fabric-check,oke-gpu-rdma/rails-unmarked]"
            ],
        },
        # The chart leaves the node exporter's instance the pod's address (values.yaml l. 2800
        # relabelings: []); the rail rules and panels join it with the node's name.
        "prometheus-node-exporter": {
            "namespaceOverride": "monitoring-node-exporter",
            "prometheus": {"monitor": {"relabelings": [NODE_AS_INSTANCE]}},
        },
    }


def test_alerts_go_where_the_user_s_alertmanager_secret_says(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw["monitoring"]["alertmanagerConfigSecret"] = "alertmanager-receivers"
    values = run_stack("full", raw).one(RELEASE, "monitoring-release").inputs["values"]
    assert values["alertmanager"] == {
        "alertmanagerSpec": {**ON_SYSTEM, "useExistingSecret": True, "configSecret": "alertmanager-receivers"}
    }


def test_grafana_s_admin_secret_is_made_in_the_cluster_before_grafana_starts(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("full")
    # No Secret in the program: the password exists in the cluster only.
    assert run.of_type(SECRET) == []
    job = run.one(JOB, "monitoring-grafana-admin-secret")
    assert job.inputs["metadata"] == {"name": "grafana-admin-secret", "namespace": "monitoring"}
    release = run.one(RELEASE, "monitoring-release")
    assert job.urn in release.dependencies
    pod = job.inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"oke-gpu-rdma/node-pool": "system"}
    assert pod_security.violations(pod, "restricted") == []
    (container,) = pod["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert (env["SECRET"], env["NAMESPACE"]) == ("grafana-admin", "monitoring")
    assert container["image"] == grafana_admin.DEFAULT_IMAGE
    assert images.PINNED_SUFFIX.search(container["image"])
    # It runs once its RBAC (create Secrets, nothing else) and the policy narrowing that are in place.
    role = run.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "monitoring-grafana-admin-secret-role")
    assert role.inputs["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]
    policy = run.one(POLICY, "monitoring-grafana-admin-secret-policy").inputs["spec"]
    assert policy["matchConditions"][0]["expression"] == (
        "request.userInfo.username == 'system:serviceaccount:monitoring:grafana-admin-secret'"
    )
    binding = run.one(POLICY_BINDING, "monitoring-grafana-admin-secret-policy-binding")
    assert binding.urn in job.dependencies
    assert run.one(NAMESPACE, "monitoring-namespace").urn in job.dependencies
    # On a first apply its pod waits for the system pool's nodes, as long as the release may wait.
    assert run.one("oci:ContainerEngine/nodePool:NodePool", "system-nodes").urn in job.dependencies
    assert job.options["customTimeouts"] == {"create": "2700s"}
    assert job.inputs["spec"]["activeDeadlineSeconds"] == 2700


def test_a_grafana_admin_secret_of_another_name_is_the_one_made_and_read(
    run_stack: Callable[..., Run],
) -> None:
    raw = raw_config("full")
    raw["monitoring"] |= {"grafanaAdminSecret": "grafana-login", "grafanaAdminJobImage": "example.com/k8s:1"}
    run = run_stack("full", raw)
    admin = run.one(RELEASE, "monitoring-release").inputs["values"]["grafana"]["admin"]
    assert admin["existingSecret"] == "grafana-login"
    (container,) = run.one(JOB).inputs["spec"]["template"]["spec"]["containers"]
    assert {"name": "SECRET", "value": "grafana-login"} in container["env"]
    assert container["image"] == "example.com/k8s:1"
    rule = run.one(POLICY, "monitoring-grafana-admin-secret-policy").inputs["spec"]["validations"][0]
    assert "object.metadata.name == 'grafana-login'" in rule["expression"]


FAKE_KUBECTL = """#!/bin/sh
# Records its arguments and the files it was given, then answers as $ANSWER says.
printf "%s\\n" "$*" > "$LOG/args"
for arg in "$@"; do case $arg in --from-file=*) f=${arg#*=}; cp "${f#*=}" "$LOG/${f%%=*}";; esac; done
case $ANSWER in
  created) echo 'secret/grafana-admin created';;
  exists) echo 'Error from server (AlreadyExists): secrets "grafana-admin" already exists' >&2; exit 1;;
  *) echo 'Error from server (Forbidden): secrets is forbidden' >&2; exit 1;;
esac
"""


def _run_script(tmp_path: Path, answer: str) -> subprocess.CompletedProcess[str]:
    bin_dir, home, log = tmp_path / "bin", tmp_path / "home", tmp_path / "log"
    for folder in (bin_dir, home, log):
        folder.mkdir(exist_ok=True)
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(FAKE_KUBECTL)
    kubectl.chmod(0o755)
    pod = grafana_admin.pod_spec("grafana-admin", "monitoring", "i", {}, [])
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    env |= {"HOME": str(home), "PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(log), "ANSWER": answer}
    return subprocess.run(
        ["sh", "-c", grafana_admin.SCRIPT], env=env, capture_output=True, text=True, check=False, timeout=30
    )


def test_the_job_creates_the_secret_with_a_random_password_it_never_prints(tmp_path: Path) -> None:
    passwords = set()
    for _ in range(2):
        done = _run_script(tmp_path, "created")
        assert done.returncode == 0 and done.stdout.splitlines()[-1] == "created Secret grafana-admin"
        log = tmp_path / "log"
        assert (log / "args").read_text().startswith("-n monitoring create secret generic grafana-admin ")
        assert (log / "admin-user").read_text() == "admin"
        password = (log / "admin-password").read_text()
        assert len(password) == 44 and password not in done.stdout + done.stderr + (log / "args").read_text()
        passwords.add(password)
    assert len(passwords) == 2
    # Nothing of it stays on the scratch volume.
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == ["err"]


def test_the_job_keeps_a_secret_that_exists_and_fails_on_any_other_error(tmp_path: Path) -> None:
    kept = _run_script(tmp_path, "exists")
    assert kept.returncode == 0 and kept.stdout == "kept Secret grafana-admin: it exists\n"
    refused = _run_script(tmp_path, "forbidden")
    assert refused.returncode == 1 and "Forbidden" in refused.stderr


def test_the_monitoring_namespace_is_as_strict_as_the_chart_s_pods_allow() -> None:
    # Every pod left in the namespace passes restricted; the node exporter passes only privileged.
    assert (
        chart_pods.least_strict(chart_pods.MONITORING_PODS) == pod_security.MONITORING_LEVEL == "restricted"
    )
    assert chart_pods.least_strict((chart_pods.NODE_EXPORTER,)) == pod_security.NODE_EXPORTER_LEVEL
    assert pod_security.violations(chart_pods.NODE_EXPORTER.spec, "baseline")[:2] == [
        "hostNetwork: true",
        "hostPID: true",
    ]
    assert chart_pods.NODE_EXPORTER not in chart_pods.MONITORING_PODS


def test_both_monitoring_namespaces_deny_ingress_but_what_monitoring_needs(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("full")
    declared = {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]): r.inputs["spec"]
        for r in run.of_type(NETWORK_POLICY)
    }
    expected = network_policies.monitoring_policies("monitoring", "monitoring-node-exporter")
    for policy in expected:
        assert declared[(policy.namespace, policy.name)] == policy.spec
    # The release, so every pod of the chart, waits for them.
    release = run.one(RELEASE, "monitoring-release")
    urns = {
        r.urn
        for r in run.of_type(NETWORK_POLICY)
        if r.inputs["metadata"]["namespace"].startswith("monitoring")
    }
    assert len(urns) == len(expected) and urns <= set(release.dependencies)


def test_the_agents_reach_only_the_api_server(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    declared = {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]): r.inputs["spec"]
        for r in run.of_type(NETWORK_POLICY)
    }
    api_server = {"ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 6443}]}
    assert declared[("rail-health", "api-server-only")] == {
        "podSelector": {},
        "policyTypes": ["Ingress", "Egress"],
        "egress": [api_server],
    }
    check = declared[("rdma-dranet", "fabric-check-api-server-only")]
    assert check == {
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "fabric-check"}},
        "policyTypes": ["Ingress", "Egress"],
        "egress": [api_server],
    }
    # The policy selects the check's controller pods, and no other pod of the workload namespace.
    cron = run.one("kubernetes:batch/v1:CronJob").inputs["spec"]["jobTemplate"]["spec"]["template"]
    assert cron["metadata"]["labels"] == check["podSelector"]["matchLabels"]
    mpijob = run.one("kubernetes:kubeflow.org/v2beta1:MPIJob").inputs
    for replica in mpijob["spec"]["mpiReplicaSpecs"].values():
        labels = replica["template"].get("metadata", {}).get("labels", {})
        assert labels.get("app.kubernetes.io/name") != "fabric-check"


def test_every_namespace_the_stack_creates_enforces_warns_and_audits_one_level(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("full")
    namespaces = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"] for r in run.of_type(NAMESPACE)
    }
    assert {"monitoring", "monitoring-node-exporter", "rail-health"} <= set(namespaces)
    for name, labels in namespaces.items():
        level = labels["pod-security.kubernetes.io/enforce"]
        assert labels == pod_security.namespace_labels(level), name


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        (
            {"nodeExporterNamespace": "monitoring"},
            "full: monitoring: nodeExporterNamespace 'monitoring' is monitoring.namespace too: the node exporter "
            "needs Pod Security privileged (host network and PID), the namespace of Prometheus, Alertmanager and "
            "Grafana is restricted; give it one of its own (default monitoring-node-exporter)",
        ),
        (
            {"nodeExporterNamespace": "kube-system"},
            "full: monitoring.nodeExporterNamespace = 'kube-system': kube-system is a namespace every cluster has; "
            "the stack would label it with its own Pod Security level and take it over: use a namespace of its own",
        ),
    ],
)
def test_a_node_exporter_namespace_that_is_not_its_own_is_refused(
    settings: dict[str, str], problem: str
) -> None:
    raw = raw_config("full")
    raw["monitoring"] |= settings
    with pytest.raises(ConfigError) as refused:
        load_stack(raw, "full", EXAMPLE_REGION)
    assert str(refused.value).splitlines()[1].strip() == problem


def test_an_alertmanager_secret_with_an_existing_prometheus_is_refused() -> None:
    raw = raw_config("full")
    raw["monitoring"] = {
        "enabled": True,
        "existingPrometheus": {"namespace": "observability", "selectorLabels": {"prometheus": "main"}},
        "alertmanagerConfigSecret": "receivers",
    }
    with pytest.raises(ConfigError) as refused:
        load_stack(raw, "full", EXAMPLE_REGION)
    assert str(refused.value).splitlines()[1].strip() == (
        "full: monitoring: alertmanagerConfigSecret configure the kube-prometheus-stack the stack installs, and "
        "with existingPrometheus it installs none; remove them (existingPrometheus.namespace names where the "
        "objects go)"
    )


def test_the_gpu_operator_creates_the_dcgm_service_monitor_prometheus_selects(
    run_stack: Callable[..., Run],
) -> None:
    run = run_stack("full")
    operator = run.one(RELEASE, "gpu-operator-release")
    assert operator.inputs["values"]["dcgmExporter"] == {
        "serviceMonitor": {
            "enabled": True,
            "honorLabels": True,
            "additionalLabels": {"release": "kube-prometheus-stack"},
            "relabelings": [NODE_AS_INSTANCE],
        }
    }
    # The ServiceMonitor CRD comes with the monitoring release: the operator waits for it.
    assert run.one(RELEASE, "monitoring-release").urn in operator.dependencies


def test_dranet_rules_and_dashboard_carry_the_selector_labels(run_stack: Callable[..., Run]) -> None:
    run = run_stack("full")
    monitor = run.one(POD_MONITOR, "monitoring-dranet-pod-monitor").inputs
    assert monitor["metadata"] == {
        "name": "dranet",
        "namespace": "monitoring",
        "labels": {"release": "kube-prometheus-stack"},
    }
    assert monitor["spec"]["selector"] == {"matchLabels": {"app": "dranet"}}
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["kube-system"]}
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    # DRANET's pods declare no port, and the operator keeps only targets whose pod declares the endpoint's
    # port: the endpoint names none and sets the address to the pod's IP and DRANET's port itself.
    assert "port" not in endpoint and "portNumber" not in endpoint
    assert endpoint == {
        "path": "/metrics",
        "relabelings": [
            {
                "sourceLabels": ["__meta_kubernetes_pod_ip"],
                "regex": "(.+)",
                "targetLabel": "__address__",
                "replacement": "$1:9177",
                "action": "replace",
            },
            NODE_AS_INSTANCE,
        ],
    }
    rule = run.one(RULE).inputs
    assert rule["metadata"]["labels"] == {"release": "kube-prometheus-stack"}
    assert [g["name"] for g in rule["spec"]["groups"]] == [
        "oke-gpu-rdma.gpus",
        "oke-gpu-rdma.rails",
        "oke-gpu-rdma.health",
        "oke-gpu-rdma.remediation",
    ]
    board = run.one(CONFIG_MAP, "monitoring-dashboard").inputs
    assert board["metadata"]["labels"] == {"grafana_dashboard": "1"}
    assert json.loads(board["data"][dashboard.CONFIGMAP_KEY]) == dashboard.dashboard()


def test_an_existing_prometheus_gets_the_objects_and_no_release(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    raw["monitoring"] = {
        "enabled": True,
        "existingPrometheus": {"namespace": "observability", "selectorLabels": {"prometheus": "main"}},
    }
    run = run_stack("full", raw)
    assert [r.name for r in run.of_type(RELEASE) if r.inputs["chart"] == kps.CHART_NAME] == []
    for resource in [*run.of_type(POD_MONITOR), run.one(RULE)]:
        assert resource.inputs["metadata"]["namespace"] == "observability"
        assert resource.inputs["metadata"]["labels"] == {"prometheus": "main"}
    # The remediation controller's metrics too, from its declared port.
    scrape = run.one(POD_MONITOR, "monitoring-remediation-pod-monitor").inputs["spec"]
    assert scrape["namespaceSelector"] == {"matchNames": ["node-remediation"]}
    assert scrape["podMetricsEndpoints"] == [{"port": "metrics", "path": "/metrics"}]
    additional = run.one(RELEASE, "gpu-operator-release").inputs["values"]["dcgmExporter"]["serviceMonitor"]
    assert additional["additionalLabels"] == {"prometheus": "main"}


def test_monitoring_off_declares_nothing_of_it(run_stack: Callable[..., Run]) -> None:
    raw = raw_config("full")
    del raw["monitoring"]
    run = run_stack("full", raw)
    assert run.of_type(POD_MONITOR) == [] and run.of_type(RULE) == []
    assert "dcgmExporter" not in run.one(RELEASE, "gpu-operator-release").inputs["values"]


def test_values_outside_the_chart_s_documented_paths_are_refused() -> None:
    with pytest.raises(ChartValuesError, match=r"grafana\.nodeSelectr"):
        _documented({"grafana": {"nodeSelectr": {}}}, kps.VALUE_PATHS, kps.CHART_NAME)


def test_the_hardening_values_are_paths_the_chart_documents() -> None:
    values = mc.stack_values(None, [])
    assert values["grafana"]["admin"]["existingSecret"] == "grafana-admin"
    with pytest.raises(ChartValuesError, match=r"grafana\.admin\.existingSecrt"):
        _documented({"grafana": {"admin": {"existingSecrt": "x"}}}, chart_pods.VALUE_PATHS, kps.CHART_NAME)
