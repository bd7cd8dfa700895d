"""Run the Pulumi program offline under Pulumi's mock runtime and record what it declares.

`pulumi preview` needs the CLI, credentials and a tenancy; this runs the very same `__main__.py`
with `pulumi.runtime.set_mocks`, so every resource registration reaches a recording monitor
instead of an engine. Mock outputs are realistic placeholders (OCIDs derived from the resource
name, a kubeconfig with the cluster's OCID), and nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import runpy
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pulumi
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime.stack import run_pulumi_func

from oke_gpu_rdma.common import resource_types
from oke_gpu_rdma.nodes.oci_regions import availability_domain_name, region_key
from stack_config.nodes.cluster_version import ENHANCED_CLUSTER

T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "oke-gpu-rdma"
STACK_TYPE = "pulumi:pulumi:Stack"
UNKNOWN_TEXT = "(known after apply)"
_CONFIG_ENV = "PULUMI_CONFIG"
# Pulumi's property wire format marks a secret as {SIG_KEY: SECRET_SIG, "value": ...}
# (pulumi/pulumi sdk/go/common/resource/properties.go: SigKey, SecretSig).
_SIG_KEY = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


def _wait(awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` to completion on the event loop the mock runtime uses (none is running here)."""
    loop = asyncio.get_event_loop()
    return loop.run_until_complete(asyncio.ensure_future(awaitable, loop=loop))


# OCID resource kinds by Pulumi type token, so placeholder OCIDs read like real ones.
_OCID_KINDS = {
    resource_types.VCN: "vcn",
    resource_types.SUBNET: "subnet",
    "oci:Core/natGateway:NatGateway": "natgateway",
    "oci:Core/serviceGateway:ServiceGateway": "servicegateway",
    "oci:Core/internetGateway:InternetGateway": "internetgateway",
    "oci:Core/routeTable:RouteTable": "routetable",
    "oci:Core/securityList:SecurityList": "securitylist",
    "oci:Core/networkSecurityGroup:NetworkSecurityGroup": "networksecuritygroup",
    resource_types.COMPUTE_CLUSTER: "computecluster",
    resource_types.CLUSTER: "cluster",
    resource_types.NODE_POOL: "nodepool",
    resource_types.IAM_POLICY: "policy",
}


def placeholder_ocid(kind: str, name: str, region: str | None) -> str:
    """A stable, realistic-looking OCID for a mock resource in ``region`` (the stack's oci:region)."""
    digest = hashlib.sha256(f"{kind}/{name}".encode()).hexdigest()[:60]
    regional = kind not in {"policy", "compartment", "tenancy"} and region
    realm_region = f"oc1.{region_key(region) or region}" if regional and region else "oc1."
    return f"ocid1.{kind}.{realm_region}.aaaaaaaa{digest}"


def placeholder_kubeconfig(cluster_id: str, region: str | None, endpoint: str = "PRIVATE_ENDPOINT") -> str:
    """A kubeconfig shaped like the one OCI generates (exec credential plugin, token v2).

    Its server is the cluster's endpoint of the kind asked for: a private address in the VCN, a public
    one (TEST-NET-3, 203.0.113.0/24), stable per cluster, so a different cluster or endpoint is a
    different active cluster, as pulumi-kubernetes' DiffConfig compares them.
    """
    short = cluster_id.rsplit(".", 1)[-1][-11:]
    octet = int(hashlib.sha256(cluster_id.encode()).hexdigest()[:2], 16) % 250 + 2
    host = f"203.0.113.{octet}" if endpoint == "PUBLIC_ENDPOINT" else f"10.140.0.{octet}"
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        f"- name: cluster-{short}\n"
        "  cluster:\n"
        f"    server: https://{host}:6443\n"
        "    certificate-authority-data: bW9jay1jYS1jZXJ0aWZpY2F0ZQ==\n"
        "contexts:\n"
        f"- name: context-{short}\n"
        f"  context: {{cluster: cluster-{short}, user: user-{short}}}\n"
        f"current-context: context-{short}\n"
        "users:\n"
        f"- name: user-{short}\n"
        "  user:\n"
        "    exec:\n"
        "      apiVersion: client.authentication.k8s.io/v1beta1\n"
        "      command: oci\n"
        f"      args: [ce, cluster, generate-token, --cluster-id, {cluster_id}, --region, {region or '<oci:region>'}]\n"
    )


class OfflineMocks(mocks.Mocks):
    """Placeholder outputs for OCI and Kubernetes resources and the invokes the program makes.

    Outputs follow the stack's region (`oci:region`): OCIDs carry its key, ADs its name.
    """

    def __init__(self, region: str | None = None, config: Mapping[str, str] | None = None) -> None:
        self.region = region
        self.config = dict(config or {})

    def cluster_version(self, cluster_id: str) -> str:
        """The Kubernetes version OCI would report for an existing cluster.

        Offline there is no cluster to ask: the stand-in is the version the stack configures for it
        (`cluster.existing.kubernetesVersion`), so the preview passes the program's version check exactly
        when the config is self-consistent; only `pulumi preview`/`up` ask OCI for the real one.
        """
        try:
            existing = json.loads(self.config.get(f"{PROJECT}:cluster", "{}")).get("existing") or {}
        except (json.JSONDecodeError, AttributeError):
            existing = {}
        if existing.get("id") != cluster_id or not isinstance(existing.get("kubernetesVersion"), str):
            raise NotImplementedError(
                f"the offline preview knows no cluster {cluster_id} but the stack's own"
            )
        version: str = existing["kubernetesVersion"]
        return version

    def cluster_networks(self, cluster_id: str) -> list[dict[str, list[dict[str, str]]]]:
        """The pods and services CIDRs OCI would report for an existing cluster (options.kubernetesNetworkConfig):
        offline, the ones the stack configures, as for the version (`pulumi preview`/`up` read the real ones)."""
        try:
            existing = json.loads(self.config.get(f"{PROJECT}:cluster", "{}")).get("existing") or {}
        except (json.JSONDecodeError, AttributeError):
            existing = {}
        if existing.get("id") != cluster_id:
            return []
        network = {k: existing[k] for k in ("podsCidr", "servicesCidr") if isinstance(existing.get(k), str)}
        return [{"kubernetesNetworkConfigs": [network]}] if network else []

    def cluster_type(self, cluster_id: str) -> str:
        """The type OCI would report for an existing cluster: offline, the ENHANCED_CLUSTER the stack requires
        (`pulumi preview`/`up` read the real one and refuse a BASIC_CLUSTER)."""
        return ENHANCED_CLUSTER

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        state = dict(args.inputs)
        kind = _OCID_KINDS.get(args.typ)
        if kind is not None:
            resource_id = placeholder_ocid(kind, args.name, self.region)
            state.setdefault("state", "ACTIVE")
        elif args.typ.startswith("kubernetes:"):
            metadata = state.get("metadata") or {}
            namespace = metadata.get("namespace") or state.get("namespace")
            name = metadata.get("name") or state.get("name") or args.name
            resource_id = f"{namespace}/{name}" if namespace else str(name)
        else:
            resource_id = f"{args.name}-id"
        return resource_id, state

    def call(self, args: mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        if args.token == "oci:ContainerEngine/getClusterKubeConfig:getClusterKubeConfig":
            cluster_id = str(args.args.get("clusterId"))
            endpoint = str(args.args.get("endpoint") or "PRIVATE_ENDPOINT")
            content = placeholder_kubeconfig(cluster_id, self.region, endpoint)
            return {"clusterId": cluster_id, "content": content}, []
        if args.token == "oci:ContainerEngine/getCluster:getCluster":
            cluster_id = str(args.args.get("clusterId"))
            return {
                "clusterId": cluster_id,
                "id": cluster_id,
                "kubernetesVersion": self.cluster_version(cluster_id),
                "state": "ACTIVE",
                "type": self.cluster_type(cluster_id),
                "options": self.cluster_networks(cluster_id),
            }, []
        if args.token == "oci:Core/getServices:getServices":
            key = (region_key(self.region) if self.region else None) or "region"
            service = {
                "id": placeholder_ocid("service", "all-services", self.region),
                "cidrBlock": f"all-{key}-services-in-oracle-services-network",
                "name": f"All {key.upper()} Services In Oracle Services Network",
                "description": "All services in the Oracle Services Network",
            }
            return {"services": [service], "id": "services"}, []
        if args.token == "oci:Core/getComputeCluster:getComputeCluster":
            return {
                "computeClusterId": args.args.get("computeClusterId"),
                "availabilityDomain": availability_domain_name("Uocm", self.region or "region-1", 1),
                "state": "ACTIVE",
            }, []
        raise NotImplementedError(
            f"the offline preview has no mock for invoke {args.token}; add one in {__name__}"
        )


@dataclass
class RecordedResource:
    """One registration as the engine would see it."""

    urn: str
    type: str
    name: str
    custom: bool
    parent: str
    inputs: dict[str, Any]
    struct: struct_pb2.Struct
    id: str
    provider: str = ""
    dependencies: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    """Resource options the engine acts on (protect, aliases, replace rules), as sent; only those set."""

    @property
    def is_component(self) -> bool:
        return not self.custom and self.type != STACK_TYPE


class RecordingMonitor(mocks.MockMonitor):
    """The SDK's mock monitor, keeping every registration in order with its parent."""

    def __init__(self, mocks_: mocks.Mocks) -> None:
        super().__init__(mocks_)
        self.recorded: list[RecordedResource] = []
        self.invokes: list[tuple[str, dict[str, Any]]] = []

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type == STACK_TYPE:
            return response  # the root is added by record(), once per run
        inputs = rpc.deserialize_properties(request.object, keep_unknowns=True) if request.object else {}
        self.recorded.append(
            RecordedResource(
                urn=response.urn,
                type=request.type,
                name=request.name,
                custom=bool(request.custom),
                parent=request.parent,
                inputs=_plain(inputs),
                struct=request.object,
                id=response.id,
                provider=request.provider,
                dependencies=list(request.dependencies),
                options=_options(request),
            )
        )
        return response

    def Invoke(self, request: Any) -> Any:
        with _worker_loop_closed():
            response = super().Invoke(request)
            self.invokes.append((request.tok, _plain(rpc.deserialize_properties(request.args))))
            return response


def _options(request: Any) -> dict[str, Any]:
    """The options of a RegisterResourceRequest that decide what an update does, where set."""
    options: dict[str, Any] = {}
    if request.protect:
        options["protect"] = True
    if request.deleteBeforeReplace:
        options["deleteBeforeReplace"] = True
    if request.replaceOnChanges:
        options["replaceOnChanges"] = list(request.replaceOnChanges)
    timeouts = request.customTimeouts
    waits = {op: getattr(timeouts, op) for op in ("create", "update", "delete") if getattr(timeouts, op)}
    if waits:
        options["customTimeouts"] = waits
    aliases = [json_format.MessageToDict(a) for a in request.aliases] + list(request.aliasURNs)
    if aliases:
        options["aliases"] = aliases
    if request.transforms:
        # The engine runs these on the resource's children, a packaged component's too (their aliases).
        options["transforms"] = len(request.transforms)
    return options


@contextlib.contextmanager
def _worker_loop_closed() -> Iterator[None]:
    """Close the event loop the SDK's mock monitor opens in an executor thread, once the call is done.

    Left open, those loops are collected at interpreter exit, after their sockets, and print
    "Exception ignored ... Invalid file descriptor: -1". The next call in the thread opens a new one.
    """
    try:
        yield
    finally:
        if threading.current_thread() is not threading.main_thread():
            with contextlib.suppress(RuntimeError):
                loop = asyncio.get_event_loop()
                if not loop.is_running():
                    loop.close()
                    asyncio.set_event_loop(None)


def _plain(value: Any) -> Any:
    """Secrets masked, unknowns as text, whole numbers as ints: values fit for YAML and for messages."""
    if isinstance(value, Mapping):
        if value.get(_SIG_KEY) == _SECRET_SIG:
            return "[secret]"
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value == rpc.UNKNOWN:
        return UNKNOWN_TEXT
    # Protobuf Struct numbers are doubles; whole numbers were ints in the program.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _secure(value: Any) -> str | None:
    """The ciphertext of a secret config value (`key: {secure: v1:...}`), None for a plain value."""
    if isinstance(value, Mapping) and set(value) == {"secure"} and isinstance(value["secure"], str):
        return value["secure"]
    return None


def pulumi_config_map(stack_file: Mapping[str, Any]) -> dict[str, str]:
    """Config as the Pulumi CLI hands it to a program: `project:key` -> string, objects as JSON.

    The CLI decrypts secrets first; offline nothing is decrypted, so a secret's value is its ciphertext
    (see :func:`secret_config_keys`).
    """
    config = stack_file.get("config") or {}
    out = {}
    for key, value in config.items():
        full = key if ":" in key else f"{PROJECT}:{key}"
        secure = _secure(value)
        out[full] = secure if secure is not None else value if isinstance(value, str) else json.dumps(value)
    return out


def secret_config_keys(stack_file: Mapping[str, Any]) -> list[str]:
    """The keys the stack file keeps as secrets (`secure:`), which the CLI tells a program of."""
    config = stack_file.get("config") or {}
    return [key if ":" in key else f"{PROJECT}:{key}" for key, value in config.items() if _secure(value)]


@dataclass
class ProgramRun:
    """What one offline run declared, in registration order."""

    stack: str
    resources: list[RecordedResource]
    outputs: dict[str, Any]
    invokes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Provider functions the program called (token, arguments), e.g. the kubeconfig lookup."""


def record(
    stack: str, config: Mapping[str, str], declare: Callable[[], object], secret_keys: Sequence[str] = ()
) -> ProgramRun:
    """Run `declare` under the mocks with `config` (`secret_keys` of it secret) and return what it registered.

    Each call starts from fresh mock state, so runs do not leak into each other.
    """
    region = config.get("oci:region")
    monitor = RecordingMonitor(OfflineMocks(region, config))
    # A new root stack per run: set_mocks only creates one when none exists.
    settings.set_root_resource(None)  # type: ignore[arg-type]
    mocks.set_mocks(OfflineMocks(region, config), project=PROJECT, stack=stack, preview=True, monitor=monitor)
    pulumi.runtime.set_all_config(dict(config), list(secret_keys))
    # The Python language host hands a program its config in PULUMI_CONFIG (JSON), which
    # pulumi.runtime.get_config_env() reads; set it the same way for this run.
    previous = os.environ.get(_CONFIG_ENV)
    os.environ[_CONFIG_ENV] = json.dumps(dict(config))
    # The stack resource is registered by set_mocks before the program starts.
    monitor.recorded.clear()
    root = RecordedResource(
        urn=f"urn:pulumi:{stack}::{PROJECT}::{STACK_TYPE}::{PROJECT}-{stack}",
        type=STACK_TYPE,
        name=f"{PROJECT}-{stack}",
        custom=False,
        parent="",
        inputs={},
        struct=struct_pb2.Struct(),
        id="",
    )

    def body() -> None:
        declare()

    try:
        _wait(run_pulumi_func(body))
    finally:
        if previous is None:
            os.environ.pop(_CONFIG_ENV, None)
        else:
            os.environ[_CONFIG_ENV] = previous
    return ProgramRun(
        stack=stack, resources=[root, *monitor.recorded], outputs=_stack_exports(), invokes=monitor.invokes
    )


def _stack_exports() -> dict[str, Any]:
    """The values the program passed to `pulumi.export`, secrets masked.

    The mock runtime finishes the root stack before the program runs, so exports never reach the
    monitor; they are read from the root resource instead.
    """
    root = pulumi.runtime.get_root_resource()
    exported: dict[str, Any] = dict(getattr(root, "outputs", {}) or {})
    values: dict[str, Any] = {}
    for key, value in exported.items():
        output = pulumi.Output.from_input(value)
        secret = _wait(output.is_secret())
        values[key] = "[secret]" if secret else _plain(_wait(output.future(with_unknowns=True)))
    return values


def run_program(
    stack: str,
    config: Mapping[str, str],
    program: Path = ROOT / "__main__.py",
    secret_keys: Sequence[str] = (),
) -> ProgramRun:
    """Run the Pulumi program file under the mocks; raises what the program raises."""
    return record(stack, config, lambda: runpy.run_path(str(program), run_name="__main__"), secret_keys)
