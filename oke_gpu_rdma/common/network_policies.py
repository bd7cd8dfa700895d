"""The NetworkPolicies the stack declares (networking.k8s.io/v1, as plain manifests: the components declare
them): default-deny ingress in the monitoring namespaces with an allow for each flow the monitoring needs, and
API-server-only policies for the rail health agent and the scheduled fabric check.

Kubernetes semantics followed (https://kubernetes.io/docs/concepts/services-networking/network-policies/): a
pod selected by a policy of a policy type admits only what some policy allows; rules are unions, and a peer with
both namespaceSelector and podSelector is one peer (pods of those namespaces). Every namespace carries
`kubernetes.io/metadata.name` (set by the API server since 1.22). Whether the policy sees a Service's address or
the endpoint's after kube-proxy's DNAT is not defined ("it is not defined whether this happens before or after
NetworkPolicy processing"), so the API server is allowed at both ports. hostNetwork pods: the plugin either
tells them apart and applies the policy, or treats their traffic as the node's and ignores them ("NetworkPolicy
and hostNetwork pods"): the node exporter's and the rail agent's policies may not bind on every plugin.

Nothing enforces a NetworkPolicy without a network plugin that implements them: on OKE neither the flannel
CNI nor the VCN-native pod networking CNI does; Calico does, on either (Oracle, Container Engine for Kubernetes,
"Pod Networking" and "Example: Installing Calico and Setting Up Network Policies").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from oke_gpu_rdma.monitoring import chart_pods
from oke_gpu_rdma.monitoring.chart_pods import ChartPod

API_VERSION: Final = "networking.k8s.io/v1"
KIND: Final = "NetworkPolicy"
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
# The API server as a pod sees it: the `kubernetes` Service (port 443, in every cluster's `default` namespace)
# before DNAT, and OKE's Kubernetes API endpoint after it (TCP 6443: Oracle, "Network Resource Configuration for
# Cluster Creation and Deployment", the API endpoint's security rules; stack_config/nodes/network_rules.py
# API_SERVER_PORT). The destination address is left open: an existing cluster's endpoint subnet is known by
# OCID only, offline.
API_SERVER_PORTS: Final = (443, 6443)

DEFAULT_DENY_INGRESS: Final = "default-deny-ingress"
Direction = Literal["Ingress", "Egress"]


@dataclass(frozen=True)
class Policy:
    """One NetworkPolicy: its name, namespace and spec."""

    name: str
    namespace: str
    spec: Mapping[str, Any]

    def manifest(self) -> dict[str, Any]:
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": dict(self.spec),
        }


def _tcp(ports: Sequence[int]) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": p} for p in ports]


def _pods(pod: ChartPod, namespace: str | None = None) -> dict[str, Any]:
    """A peer: ``pod``'s pods, in the policy's own namespace or in ``namespace``."""
    peer: dict[str, Any] = {"podSelector": {"matchLabels": dict(pod.labels)}}
    if namespace is not None:
        peer["namespaceSelector"] = {"matchLabels": {NAMESPACE_NAME_LABEL: namespace}}
    return peer


def default_deny_ingress(namespace: str) -> Policy:
    """Every pod of ``namespace`` admits only what another policy allows."""
    return Policy(DEFAULT_DENY_INGRESS, namespace, {"podSelector": {}, "policyTypes": ["Ingress"]})


def _allow(name: str, namespace: str, to: ChartPod, rules: Sequence[Mapping[str, Any]]) -> Policy:
    return Policy(
        name,
        namespace,
        {
            "podSelector": {"matchLabels": dict(to.labels)},
            "policyTypes": ["Ingress"],
            "ingress": [dict(r) for r in rules],
        },
    )


def monitoring_policies(namespace: str, node_exporter_namespace: str) -> list[Policy]:
    """The installed kube-prometheus-stack's: default-deny ingress in both namespaces, then only
    - Prometheus scraping its targets there: itself and its reloader, Alertmanager and its reloader, Grafana,
      kube-state-metrics, the operator, the node exporter (the chart's ServiceMonitors, one per target);
    - Prometheus sending alerts to Alertmanager (alerting.alertmanagers: port http-web, 9093);
    - Grafana querying Prometheus and Alertmanager (its two provisioned datasources, templates/grafana/
      configmaps-datasources.yaml: <release>-prometheus:9090, <release>-alertmanager:9093);
    - the API server calling the operator's admission webhook on its TLS port, from any address: the control
      plane's address is no pod's, as the chart's own policy has it (templates/prometheus-operator/
      networkpolicy.yaml: ingress on the port, no `from`), which the operator's metrics share.
    Nothing else reaches Alertmanager's API (9093): no pod can silence or fake an alert through it. No rule admits
    the kubelet's probes (from the node), as none of the chart's own policies does (templates/alertmanager/
    networkpolicy.yaml admits Prometheus and Alertmanager only): both count on the engine passing a node's traffic
    to its own pods, which only a cluster with one can confirm."""
    prometheus = _pods(chart_pods.PROMETHEUS)
    grafana = _pods(chart_pods.GRAFANA)
    p, a = chart_pods.PROMETHEUS, chart_pods.ALERTMANAGER
    return [
        default_deny_ingress(namespace),
        _allow("prometheus-ingress", namespace, p, [{"from": [prometheus, grafana], "ports": _tcp(p.ports)}]),
        _allow(
            "alertmanager-ingress", namespace, a, [{"from": [prometheus, grafana], "ports": _tcp(a.ports)}]
        ),
        _allow(
            "grafana-ingress",
            namespace,
            chart_pods.GRAFANA,
            [{"from": [prometheus], "ports": _tcp(chart_pods.GRAFANA.ports)}],
        ),
        _allow(
            "kube-state-metrics-ingress",
            namespace,
            chart_pods.KUBE_STATE_METRICS,
            [{"from": [prometheus], "ports": _tcp(chart_pods.KUBE_STATE_METRICS.ports)}],
        ),
        _allow(
            "operator-webhook-ingress",
            namespace,
            chart_pods.OPERATOR,
            [{"ports": _tcp(chart_pods.OPERATOR.ports)}],
        ),
        default_deny_ingress(node_exporter_namespace),
        _allow(
            "node-exporter-ingress",
            node_exporter_namespace,
            chart_pods.NODE_EXPORTER,
            [
                {
                    "from": [_pods(chart_pods.PROMETHEUS, namespace)],
                    "ports": _tcp(chart_pods.NODE_EXPORTER.ports),
                }
            ],
        ),
    ]


def api_server_only(name: str, namespace: str, pod_labels: Mapping[str, str] | None = None) -> Policy:
    """The pods of ``namespace`` with ``pod_labels`` (None: every pod) admit nothing and reach the API server
    only. Enough for the agents: their scripts call nothing but kubectl, against the in-cluster kubeconfig they
    write from KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, an address (components/health/scripts/rail-health.sh
    and fabric-check.sh in_cluster_kubeconfig), so not even DNS."""
    selector: dict[str, Any] = {"matchLabels": dict(pod_labels)} if pod_labels else {}
    return Policy(
        name,
        namespace,
        {
            "podSelector": selector,
            "policyTypes": ["Ingress", "Egress"],
            "egress": [{"ports": _tcp(API_SERVER_PORTS)}],
        },
    )


def scraped_by_prometheus(
    name: str,
    namespace: str,
    pod_labels: Mapping[str, str],
    port: int,
    prometheus_namespace: str,
    installed: bool,
) -> Policy:
    """The pods with ``pod_labels`` admit Prometheus on ``port``: the installed chart's Prometheus pods, or, for
    a Prometheus the cluster already runs (whose pods' labels the stack does not know), any pod of its
    namespace."""
    peer = (
        _pods(chart_pods.PROMETHEUS, prometheus_namespace)
        if installed
        else {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: prometheus_namespace}}}
    )
    return Policy(
        name,
        namespace,
        {
            "podSelector": {"matchLabels": dict(pod_labels)},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [peer], "ports": _tcp([port])}],
        },
    )


def https_out(name: str, namespace: str, pod_labels: Mapping[str, str]) -> Policy:
    """The pods with ``pod_labels`` admit nothing and reach HTTPS anywhere and DNS: the remediation's repair
    Jobs, which install the OCI SDK from PyPI and call the OCI API by name (oke_gpu_rdma/health/remediation/repair.py)."""
    return Policy(
        name,
        namespace,
        {
            "podSelector": {"matchLabels": dict(pod_labels)},
            "policyTypes": ["Ingress", "Egress"],
            "egress": [
                {"ports": [*_tcp([443]), {"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
            ],
        },
    )


@dataclass(frozen=True)
class Endpoint:
    """A pod as a policy sees it: its namespace and labels."""

    namespace: str
    labels: Mapping[str, str]


def _matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    if set(selector) - {"matchLabels"}:
        raise ValueError(f"selector {dict(selector)}: only matchLabels is evaluated here")
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def _peer_matches(peer: Mapping[str, Any], own_namespace: str, other: Endpoint) -> bool:
    if set(peer) - {"podSelector", "namespaceSelector"}:
        raise ValueError(f"peer {dict(peer)}: only pod and namespace selectors are evaluated here")
    if "namespaceSelector" in peer:
        in_namespace = _matches(peer["namespaceSelector"], {NAMESPACE_NAME_LABEL: other.namespace})
    else:
        in_namespace = other.namespace == own_namespace
    return in_namespace and _matches(peer.get("podSelector", {}), other.labels)


def _rule_admits(
    rule: Mapping[str, Any], peers_key: str, own: str, other: Endpoint | None, port: int
) -> bool:
    ports = rule.get("ports")
    if ports is not None and not any(
        p.get("port") == port and p.get("protocol", "TCP") == "TCP" for p in ports
    ):
        return False
    peers = rule.get(peers_key)
    if peers is None:
        return True  # every source or destination
    return other is not None and any(_peer_matches(peer, own, other) for peer in peers)


def _side_admits(
    policies: Sequence[Policy], pod: Endpoint, other: Endpoint | None, port: int, direction: Direction
) -> bool:
    """``pod``'s side of a connection with ``other`` on ``port``: open unless a policy of ``direction`` selects
    ``pod``, then only what one of them allows."""
    key, peers = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    selecting = [
        p
        for p in policies
        if p.namespace == pod.namespace
        and direction in p.spec.get("policyTypes", ())
        and _matches(p.spec.get("podSelector", {}), pod.labels)
    ]
    return not selecting or any(
        _rule_admits(r, peers, pod.namespace, other, port) for p in selecting for r in p.spec.get(key, ())
    )


def connects(policies: Sequence[Policy], client: Endpoint | None, server: Endpoint | None, port: int) -> bool:
    """Whether ``policies`` let ``client`` open a TCP connection to ``server`` on ``port`` (None: an address that
    is no pod, such as the API server): the client's egress and the server's ingress must both admit it."""
    return (server is None or _side_admits(policies, server, client, port, "Ingress")) and (
        client is None or _side_admits(policies, client, server, port, "Egress")
    )
