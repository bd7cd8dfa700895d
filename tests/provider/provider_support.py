"""The component package started as the Pulumi CLI starts it, and the engine side it talks to.

The CLI's Python language host runs `<plugin venv python> -u <plugin dir> <engine address>` from the
plugin's folder and reads the port from the first line of stdout (pulumi/pulumi
sdk/python/cmd/pulumi-language-python main.go, RunPlugin). For Construct the provider talks to a
resource monitor (the address in the ConstructRequest) and to the engine (Log): :class:`Engine` serves
both on one port and records what the provider registers; its ids, outputs and invoke answers are the
offline preview's (preview/mock_runtime.py OfflineMocks), so a constructed component sees what the
program sees under `make preview`.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from collections.abc import Iterator, Mapping
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime import mocks
from pulumi.runtime.proto import (
    engine_pb2,
    engine_pb2_grpc,
    provider_pb2,
    provider_pb2_grpc,
    resource_pb2,
    resource_pb2_grpc,
)

from preview.mock_runtime import OfflineMocks

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_DIR = ROOT / "provider"
PLUGIN_PYTHON = PLUGIN_DIR / "venv" / "bin" / "python"
PROJECT = "consumer"
STACK = "test"
REGION = "us-ashburn-1"
K8S_PROVIDER_URN = f"urn:pulumi:{STACK}::{PROJECT}::pulumi:providers:kubernetes::oke"
K8S_PROVIDER = f"{K8S_PROVIDER_URN}::k8s-provider-id"
# What the engine sends for a value unknown during preview (sdk/go/common/resource/plugin/rpc.go).
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
# Features the engine reports (pulumi/pulumi pkg/resource/deploy/source_eval.go SupportsFeature).
FEATURES = {"secrets", "resourceReferences", "aliasSpecs", "deletedWith"}


@dataclass
class Registration:
    """One RegisterResource the provider sent, as received."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    provider: str
    dependencies: list[str]
    inputs: dict[str, Any]
    protect: bool
    delete_before_replace: bool
    outputs: dict[str, Any] = field(default_factory=dict)
    """What RegisterResourceOutputs later recorded for it (components)."""


def _to_dict(value: struct_pb2.Struct) -> dict[str, Any]:
    data: dict[str, Any] = json_format.MessageToDict(value)
    return data


def _urn(parent: str, type_: str, name: str) -> str:
    """The URN the engine gives a resource: its parent's type chain, then its own type and name."""
    chain = type_
    if parent:
        parent_type = parent.split("::")[2]
        if parent_type != "pulumi:pulumi:Stack":
            chain = f"{parent_type}${type_}"
    return f"urn:pulumi:{STACK}::{PROJECT}::{chain}::{name}"


class Engine(resource_pb2_grpc.ResourceMonitorServicer, engine_pb2_grpc.EngineServicer):
    """A recording resource monitor and engine: ids and invoke answers from the offline preview's mocks."""

    def __init__(self) -> None:
        self.mocks = OfflineMocks(REGION)
        self.registrations: list[Registration] = []
        self.invokes: list[tuple[str, dict[str, Any]]] = []
        self.logs: list[tuple[int, str]] = []
        self.features: list[str] = []
        self._lock = threading.Lock()

    # --- ResourceMonitor ---------------------------------------------------------------------------

    def SupportsFeature(self, request: Any, context: Any) -> Any:
        self.features.append(request.id)
        return resource_pb2.SupportsFeatureResponse(hasSupport=request.id in FEATURES)

    def GetDeploymentInfo(self, request: Any, context: Any) -> Any:
        features = [
            resource_pb2.RESOURCE_MONITOR_FEATURE_SECRETS,
            resource_pb2.RESOURCE_MONITOR_FEATURE_RESOURCE_REFERENCES,
            resource_pb2.RESOURCE_MONITOR_FEATURE_ALIAS_SPECS,
            resource_pb2.RESOURCE_MONITOR_FEATURE_DELETED_WITH,
        ]
        return resource_pb2.DeploymentInfo(supportedFeatures=features)

    def RegisterResource(self, request: Any, context: Any) -> Any:
        inputs = _to_dict(request.object)
        urn = _urn(request.parent, request.type, request.name)
        resource_id = ""
        if request.custom:
            args = mocks.MockResourceArgs(request.type, request.name, inputs, request.provider, None, True)
            resource_id = self.mocks.new_resource(args)[0] or ""
        with self._lock:
            self.registrations.append(
                Registration(
                    urn=urn,
                    type=request.type,
                    name=request.name,
                    parent=request.parent,
                    custom=request.custom,
                    provider=request.provider,
                    dependencies=list(request.dependencies),
                    inputs=inputs,
                    protect=request.protect,
                    delete_before_replace=request.deleteBeforeReplace,
                )
            )
        # Outputs are the inputs, as in a preview before the provider answers.
        return resource_pb2.RegisterResourceResponse(urn=urn, id=resource_id, object=request.object)

    def RegisterResourceOutputs(self, request: Any, context: Any) -> Any:
        with self._lock:
            for registration in self.registrations:
                if registration.urn == request.urn:
                    registration.outputs = _to_dict(request.outputs)
        return empty_pb2.Empty()

    def Invoke(self, request: Any, context: Any) -> Any:
        args = _to_dict(request.args)
        self.invokes.append((request.tok, args))
        if request.tok == "pulumi:pulumi:getResource":
            # A provider reference passed in ConstructRequest.providers is rehydrated by its URN.
            urn = str(args["urn"])
            answer: dict[str, Any] = {"urn": urn, "id": K8S_PROVIDER.rsplit("::", 1)[1], "state": {}}
        else:
            answer, _ = self.mocks.call(mocks.MockCallArgs(request.tok, args, request.provider))
        result = struct_pb2.Struct()
        result.update(answer)
        return resource_pb2.ResourceInvokeResponse(**{"return": result})

    def SignalAndWaitForShutdown(self, request: Any, context: Any) -> Any:
        return empty_pb2.Empty()

    # --- Engine ------------------------------------------------------------------------------------

    def Log(self, request: Any, context: Any) -> Any:
        self.logs.append((request.severity, request.message))
        return empty_pb2.Empty()

    def GetRootResource(self, request: Any, context: Any) -> Any:
        return engine_pb2.GetRootResourceResponse(urn="")

    def SetRootResource(self, request: Any, context: Any) -> Any:
        return engine_pb2.SetRootResourceResponse()

    # --- lookups -----------------------------------------------------------------------------------

    def children(self, parent_urn: str) -> list[Registration]:
        return [r for r in self.registrations if r.parent == parent_urn]

    def one(self, type_: str) -> Registration:
        found = [r for r in self.registrations if r.type == type_]
        assert len(found) == 1, f"expected one {type_}, found {[r.name for r in found]}"
        return found[0]


@contextlib.contextmanager
def served_engine() -> Iterator[tuple[Engine, str]]:
    """An :class:`Engine` listening on localhost, and its address."""
    engine = Engine()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(engine, server)
    engine_pb2_grpc.add_EngineServicer_to_server(engine, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield engine, f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)


@contextlib.contextmanager
def started_provider(
    engine_address: str, timeout: float = 60
) -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    """The plugin started as the CLI starts it, and a stub for its ResourceProvider service."""
    if not PLUGIN_PYTHON.exists():
        pytest.fail(f"{PLUGIN_PYTHON} is missing: run make test (it builds provider/venv)")
    proc = subprocess.Popen(
        [str(PLUGIN_PYTHON), "-u", str(PLUGIN_DIR), engine_address],
        cwd=PLUGIN_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        line = proc.stdout.readline().strip()
        if not line.isdigit():
            proc.kill()
            pytest.fail(f"the plugin printed {line!r} instead of a port; stderr: {proc.stderr.read()}")
        channel = grpc.insecure_channel(f"127.0.0.1:{line}")
        grpc.channel_ready_future(channel).result(timeout=timeout)
        yield provider_pb2_grpc.ResourceProviderStub(channel)
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def struct(values: Mapping[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(dict(values))
    return out


def construct_request(
    address: str,
    type_: str,
    name: str,
    inputs: Mapping[str, Any],
    *,
    dependencies: tuple[str, ...] = (),
    input_dependencies: Mapping[str, list[str]] | None = None,
    providers: Mapping[str, str] | None = None,
) -> Any:
    """A ConstructRequest as the engine sends it for a component a program declares (a preview)."""
    deps = {
        key: provider_pb2.ConstructRequest.PropertyDependencies(urns=urns)
        for key, urns in (input_dependencies or {}).items()
    }
    return provider_pb2.ConstructRequest(
        project=PROJECT,
        stack=STACK,
        organization="organization",
        dryRun=True,
        parallel=8,
        monitorEndpoint=address,
        type=type_,
        name=name,
        parent=f"urn:pulumi:{STACK}::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-{STACK}",
        inputs=struct(inputs),
        inputDependencies=deps,
        providers=dict(providers or {}),
        dependencies=list(dependencies),
        accepts_output_values=True,
    )


def values(message: struct_pb2.Struct) -> dict[str, Any]:
    """A Struct as plain JSON values (the state a Construct returns)."""
    data: dict[str, Any] = json.loads(json_format.MessageToJson(message))
    return data
