"""`make org-pack`: an organisation's own policy pack, run offline on `rendered/<stack>/` as the Pulumi CLI runs it.

    python -m preview.org_pack --pack <dir> --stack <stack> [--config <file>] [--python <interpreter>]

`pulumi preview --policy-pack <dir> --policy-pack-config <file>` starts the pack as a process of its own and
speaks the analyzer protocol to it; so does this command, with the resources `make preview` rendered
instead of a program's registrations:

- the pack: `<python> -u -m pulumi.policy <engine address> .` from the pack's folder, `<python>` being its
  PulumiPolicy.yaml `virtualenv`'s (its `bin/` first on PATH, PYTHONHOME unset), with PULUMI_PROJECT,
  PULUMI_STACK and PULUMI_DRY_RUN set; its first line of output is the port it serves on
  (pulumi/pulumi sdk/go/common/resource/plugin/analyzer_plugin.go NewPolicyAnalyzer and constructEnv,
  sdk/python/dist/pulumi-analyzer-policy-python). A pack without a virtualenv of its own runs with this
  project's pack virtualenv (policies/venv) and policies/ on PYTHONPATH, so `import oke_rdma_policies`
  finds this project's policies; `--python` picks another interpreter.
- the calls: Handshake, GetAnalyzerInfo, ConfigureStack (each skipped when the pack does not implement it,
  as the CLI skips it), Configure with every policy's level and properties, one Analyze per resource and
  one AnalyzeStack: the requests preview/policy_check.py builds for the in-process pack.
- the pack config: the pack's levels and its schemas' defaults, the pack's initialConfig,
  `rendered/<stack>/policy-pack-config.json` (the stack's settings for this project's policies; sections of
  policies the pack leaves out are skipped), then `--config` (the JSON `--policy-pack-config` takes), each
  over the last as the CLI reconciles them; every policy's properties are checked against its schema, as
  the CLI checks them.
- the resources: rendered/<stack>/'s records read back as the engine registered them
  (preview/rendered_stack.py).

It prints the findings as `pulumi preview` does and exits 1 on a mandatory one, 2 on an error: one line
naming the file or option, the bad value and the fix.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import grpc  # type: ignore[import-untyped]
import jsonschema
import yaml
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from oke_gpu_rdma.common.pack_settings import ALL_KEY, LEVEL_KEY, LEVELS
from stack_config.pack_config import FILENAME as PACK_CONFIG_FILE

from .policy_check import (
    PACK_DIR,
    Finding,
    analyze_with,
    configure_request_of,
    format_findings,
    has_mandatory,
    reconciled_config,
)
from .rendered_stack import RENDERED_DIR, RenderedStack, RenderedStackError, read_rendered
from .rendered_stack import shown_path as _shown

POLICY_FILE = "PulumiPolicy.yaml"
# This project's pack virtualenv (make venvs), which runs a pack that has none of its own.
PROJECT_PACK_PYTHON = PACK_DIR / "venv" / "bin" / "python"
# No engine runs offline. The CLI passes its engine's address; pulumi.policy's __main__ parses it and never
# dials it (pulumi/pulumi sdk/python/lib/pulumi/policy/__main__.py), so nothing needs to listen there.
ENGINE_ADDRESS = "127.0.0.1:1"
STARTUP_SECONDS = 60.0
EXIT_VIOLATIONS = 1
EXIT_ERROR = 2


class OrgPackError(Exception):
    """A problem to report as one line (what, the bad value, the fix) and exit 2."""


def _value(value: Any, limit: int = 60) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- the pack ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyPackDir:
    """A policy pack's folder and how the CLI would start it."""

    path: Path
    version: str
    """PulumiPolicy.yaml's `version` (the CLI shows it over the SDK's); "" when it has none."""
    python: Path
    borrowed: bool
    """Whether it runs with this project's pack virtualenv (it has none of its own) and policies/ on PYTHONPATH."""
    note: str = ""


def read_pack(folder: Path, python: Path | None = None) -> PolicyPackDir:
    """The pack in ``folder``: its PulumiPolicy.yaml read as the CLI reads it, and the Python that runs it."""
    shown = _shown(folder)
    if not folder.is_dir():
        raise OrgPackError(
            f"--pack {shown} (PACK=): no such folder; give the folder of your PulumiPolicy.yaml"
        )
    policy_file = folder / POLICY_FILE
    if not policy_file.is_file():
        raise OrgPackError(
            f"--pack {shown} (PACK=) has no {POLICY_FILE}: give the folder of a Python policy pack "
            f"(`pulumi policy new python` makes one; examples/org-policy-pack/ is one)"
        )
    try:
        project = yaml.safe_load(policy_file.read_text()) or {}
    except yaml.YAMLError as err:
        raise OrgPackError(f"{shown}/{POLICY_FILE} is not YAML ({_one_line(err)}); fix its syntax") from None
    if not isinstance(project, Mapping):
        raise OrgPackError(f"{shown}/{POLICY_FILE} holds {_value(project)}, not a mapping with `runtime:`")
    runtime = project.get("runtime")
    name = runtime.get("name") if isinstance(runtime, Mapping) else runtime
    if name != "python":
        raise OrgPackError(
            f"{shown}/{POLICY_FILE}: runtime {_value(name)}: only Python packs run offline here "
            "(runtime: python, or runtime: {name: python, options: {virtualenv: venv}})"
        )
    options = runtime.get("options") if isinstance(runtime, Mapping) else None
    virtualenv = options.get("virtualenv") if isinstance(options, Mapping) else None
    version = str(project.get("version") or "")
    if python is not None:
        if not python.is_file():
            raise OrgPackError(f"--python {python} (PACK_PYTHON=): no such interpreter; give a Python's path")
        return PolicyPackDir(folder, version, python, python.absolute() == PROJECT_PACK_PYTHON)
    if virtualenv:
        # Relative to the pack's folder, as the CLI's script makes it absolute against its working directory.
        own = folder / str(virtualenv) / "bin" / "python"
        if own.is_file():
            return PolicyPackDir(folder, version, own, False)
        why = f"its virtualenv {_shown(folder / str(virtualenv))}/ does not exist"
    else:
        why = f"its {POLICY_FILE} names no virtualenv"
    if not PROJECT_PACK_PYTHON.is_file():
        raise OrgPackError(
            f"{why}, and this project's pack virtualenv {_shown(PROJECT_PACK_PYTHON)} is missing too: "
            "run make venvs, or make the pack's own (python3 -m venv venv && venv/bin/pip install -r requirements.txt)"
        )
    note = (
        f"{why}: running it with {_shown(PROJECT_PACK_PYTHON)} and {_shown(PACK_DIR)}/ on PYTHONPATH "
        "(this project's pack virtualenv and policies)"
    )
    return PolicyPackDir(folder, version, PROJECT_PACK_PYTHON, True, note)


def pack_environment(pack: PolicyPackDir, project: str, stack: str) -> dict[str, str]:
    """The environment the CLI starts a pack with (constructEnv, and pulumi-analyzer-policy-python's PATH)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONHOME"}
    env["PATH"] = f"{pack.python.parent}{os.pathsep}{env.get('PATH', '')}"
    env.update({"PULUMI_PROJECT": project, "PULUMI_STACK": stack, "PULUMI_DRY_RUN": "true"})
    if pack.borrowed:
        env["PYTHONPATH"] = os.pathsep.join(p for p in [env.get("PYTHONPATH", ""), str(PACK_DIR)] if p)
    return env


@dataclass
class PackSession:
    """A started pack: its Analyzer stub and what GetAnalyzerInfo said."""

    pack: PolicyPackDir
    stub: analyzer_pb2_grpc.AnalyzerStub
    info: analyzer_pb2.AnalyzerInfo

    @property
    def version(self) -> str:
        return self.pack.version or self.info.version

    def failure(self, call: str, err: grpc.RpcError, about: str = "") -> OrgPackError:
        """A call that failed: a policy raised (the SDK lets the exception through to gRPC, which answers with its
        text and logs nothing, so no traceback is anywhere)."""
        details = err.details() if hasattr(err, "details") else str(err)
        return OrgPackError(
            f"the pack in {_shown(self.pack.path)}/ failed {call}{about}: {_one_line(details)}; a policy raised "
            "there: fix it (call its validate under pytest for the traceback; pulumi preview fails the same way)"
        )


def _implemented(call: Any, request: Any) -> None:
    """A call the CLI makes but skips on UNIMPLEMENTED (an SDK older than the call)."""
    try:
        call(request)
    except grpc.RpcError as err:
        if err.code() != grpc.StatusCode.UNIMPLEMENTED:
            raise


@contextlib.contextmanager
def started(
    pack: PolicyPackDir,
    project: str,
    stack: str,
    timeout: float = STARTUP_SECONDS,
    env: Mapping[str, str] | None = None,
) -> Iterator[PackSession]:
    """The pack started as the CLI starts it, until the block ends; :class:`OrgPackError` when it does not serve."""
    command = [str(pack.python), "-u", "-m", "pulumi.policy", ENGINE_ADDRESS, "."]
    with tempfile.TemporaryFile("w+") as stderr:
        proc = subprocess.Popen(
            command,
            cwd=pack.path,
            env=dict(env) if env is not None else pack_environment(pack, project, stack),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        assert proc.stdout is not None
        try:
            port = _port(proc, proc.stdout, stderr, pack, timeout)
            # What the pack prints later (a policy's print) must not fill the pipe and stall it.
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                grpc.channel_ready_future(channel).result(timeout=timeout)
                stub = analyzer_pb2_grpc.AnalyzerStub(channel)
                where = str(pack.path.absolute())
                handshake = analyzer_pb2.AnalyzerHandshakeRequest(
                    engine_address=ENGINE_ADDRESS, root_directory=where, program_directory=where
                )
                session = PackSession(pack, stub, analyzer_pb2.AnalyzerInfo())
                try:
                    _implemented(stub.Handshake, handshake)
                    session.info = stub.GetAnalyzerInfo(empty_pb2.Empty())
                except grpc.RpcError as err:
                    raise session.failure("GetAnalyzerInfo", err) from None
                yield session
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _port(
    proc: subprocess.Popen[str], stdout: IO[str], stderr: IO[str], pack: PolicyPackDir, timeout: float
) -> int:
    ready, _, _ = select.select([stdout], [], [], timeout)
    line = stdout.readline().strip() if ready else ""
    if line.isdigit():
        return int(line)
    if not ready:
        what = f"printed no port within {timeout:.0f} s"
    elif proc.poll() is not None or not line:
        what = f"exited ({proc.wait()}) before it served"
    else:
        what = f"printed {_value(line)} instead of its port"
    stderr.seek(0)
    lines = [text.strip() for text in stderr.read().splitlines() if text.strip()]
    said = f": {lines[-1]}" if lines else ""
    hint = ""
    if pack.borrowed and any("ModuleNotFoundError" in text for text in lines):
        hint = (
            f"; {_shown(PROJECT_PACK_PYTHON)} has only this project's pack requirements: give the pack a "
            "virtualenv of its own with what it imports (python3 -m venv venv && venv/bin/pip install -r requirements.txt)"
        )
    elif any("ModuleNotFoundError" in text for text in lines):
        hint = (
            f"; install what it imports into {_shown(pack.python.parent.parent)}/, and copy oke_rdma_policies/ and "
            "oke_gpu_rdma/ from `make pack`'s output next to its __main__.py"
        )
    path = f"PYTHONPATH={PACK_DIR} " if pack.borrowed else ""
    rerun = f"cd {_shown(pack.path)} && {path}{pack.python} -u -m pulumi.policy {ENGINE_ADDRESS} ."
    raise OrgPackError(f"the pack in {_shown(pack.path)}/ {what}{said}{hint} (to see all it prints: {rerun})")


def _one_line(err: object) -> str:
    return " ".join(str(err).split())


# --- the pack config -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigLayer:
    """One layer of pack config and where it came from."""

    source: str
    entries: Mapping[str, Any]
    label: str = ""
    """How messages name it (the option that gave it); the source by default."""

    @property
    def named(self) -> str:
        return self.label or self.source


def read_config(path: Path) -> ConfigLayer:
    """A `--policy-pack-config` file, refused where the CLI refuses it (pkg/resource/analyzer/config.go
    parsePolicyPackConfig): not JSON, not an object, an entry neither a level nor an object, a bad level."""
    shown = f"--config {_shown(path)} (PACK_CONFIG=)"
    if not path.is_file():
        raise OrgPackError(
            f"{shown}: no such file; give the JSON file you pass `pulumi preview --policy-pack-config`"
        )
    text = path.read_text()
    if not text.strip():
        return ConfigLayer(_shown(path), {}, shown)  # the CLI takes an empty file as no config
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as err:
        raise OrgPackError(
            f"{shown}: not JSON: {err.msg} at line {err.lineno} column {err.colno}; fix the file's syntax"
        ) from None
    if not isinstance(entries, dict):
        raise OrgPackError(
            f"{shown} holds {_value(entries)}: the file is one object, policy name -> level or settings"
        )
    levels = ", ".join(LEVELS)
    for name, given in entries.items():
        level = given.get(LEVEL_KEY) if isinstance(given, dict) else given
        if isinstance(given, dict) and LEVEL_KEY not in given:
            continue
        if not isinstance(given, dict | str):
            raise OrgPackError(
                f'{shown}: {name}: {_value(given)} is neither a level nor an object; write "{name}": "mandatory" '
                f'or "{name}": {{"{LEVEL_KEY}": "mandatory", ...settings}}'
            )
        if level not in LEVELS:
            key = f"{name}.{LEVEL_KEY}" if isinstance(given, dict) else name
            raise OrgPackError(
                f"{shown}: {key}: {_value(level)} is not an enforcement level; use one of {levels}"
            )
    return ConfigLayer(_shown(path), entries, shown)


def initial_layer(info: analyzer_pb2.AnalyzerInfo) -> ConfigLayer:
    """The pack's initialConfig (`PolicyPack(initial_config=...)`) as the CLI reads it: an entry without a level
    arrives as ADVISORY (the enum's zero), which the CLI then applies (analyzer_plugin.go GetAnalyzerInfo)."""
    entries = {
        name: {
            LEVEL_KEY: analyzer_pb2.EnforcementLevel.Name(config.enforcementLevel).lower(),
            **json_format.MessageToDict(config.properties),
        }
        for name, config in info.initialConfig.items()
    }
    return ConfigLayer("the pack's initialConfig", entries)


def stack_layer(stack: RenderedStack, info: analyzer_pb2.AnalyzerInfo) -> tuple[ConfigLayer, list[str]]:
    """The stack's own pack config (this project's policies' sections) and the sections the pack has no policy for."""
    names = {policy.name for policy in info.policies}
    kept = {k: v for k, v in stack.pack_config.items() if k == ALL_KEY or k in names}
    skipped = sorted(set(stack.pack_config) - set(kept))
    source = f"{_shown(stack.path)}/{PACK_CONFIG_FILE}"
    return ConfigLayer(source, kept, f"{source} (make preview STACK={stack.name} writes it)"), skipped


def check_names(layer: ConfigLayer, info: analyzer_pb2.AnalyzerInfo) -> None:
    """A section naming no policy of the pack is refused (the CLI would forward it and nothing would read it)."""
    names = sorted(policy.name for policy in info.policies)
    for name in layer.entries:
        if name == ALL_KEY or name in names:
            continue
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {close[0]}?" if close else f"its policies: {', '.join(names)}"
        raise OrgPackError(
            f"{layer.named}: {name}: no policy of pack {info.name} has this name ({hint}); "
            "pulumi preview would ignore the section silently"
        )


def check_schemas(
    configs: Mapping[str, tuple[str, dict[str, Any]]],
    info: analyzer_pb2.AnalyzerInfo,
    layers: Sequence[ConfigLayer],
) -> None:
    """Each policy's properties against its schema, as the CLI checks them before Configure
    (pkg/resource/analyzer/config.go validatePolicyConfig: an object of the schema's properties and required)."""
    for policy in info.policies:
        schema: dict[str, Any] = {"type": "object"}
        properties = json_format.MessageToDict(policy.configSchema.properties)
        if properties:
            schema["properties"] = properties
        if policy.configSchema.required:
            schema["required"] = list(policy.configSchema.required)
        given = configs.get(policy.name, ("", {}))[1]
        error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(schema).iter_errors(given))
        if error is None:
            continue
        key = ".".join(str(p) for p in [policy.name, *error.absolute_path])
        top = str(error.absolute_path[0]) if error.absolute_path else ""
        source = next(
            (
                layer.named
                for layer in reversed(layers)
                if isinstance(layer.entries.get(policy.name), Mapping) and top in layer.entries[policy.name]
            ),
            "the pack's defaults",
        )
        wanted = properties.get(top, {}).get("type") if top else "object"
        raise OrgPackError(
            f"{source}: {key}: {error.message}; give it a value its schema takes"
            + (f" (type {wanted})" if wanted else "")
        )


# --- the run -------------------------------------------------------------------------------------------


def merged_config(layers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One pack-config file the CLI reconciles as it would these layers one over the other (for
    `--policy-pack-config`, which takes one file): an entry's settings merged over the earlier ones, its level
    over theirs, and a later `all` dropping the earlier levels (it is applied before the file's entries)."""
    out: dict[str, Any] = {}
    for layer in layers:
        everyone = layer.get(ALL_KEY)
        if isinstance(everyone, Mapping):
            everyone = everyone.get(LEVEL_KEY)
        if isinstance(everyone, str):
            settings = {
                k: {p: v for p, v in e.items() if p != LEVEL_KEY}
                for k, e in out.items()
                if isinstance(e, Mapping)
            }
            out = {k: e for k, e in settings.items() if e and k != ALL_KEY}
            out[ALL_KEY] = everyone
        for name, given in layer.items():
            if name == ALL_KEY:
                continue
            before = out.get(name)
            if isinstance(given, str):
                out[name] = {**before, LEVEL_KEY: given} if isinstance(before, Mapping) else given
            elif isinstance(given, Mapping):
                base = {LEVEL_KEY: before} if isinstance(before, str) else dict(before or {})
                out[name] = {**base, **given}
    return out


@dataclass(frozen=True)
class Outcome:
    findings: list[Finding]
    layers: list[ConfigLayer]
    skipped: list[str]
    cli_config: dict[str, Any]
    """The stack's and the given config as one file, what `pulumi preview --policy-pack-config` takes."""


def check(session: PackSession, stack: RenderedStack, config: ConfigLayer | None) -> Outcome:
    """Configure the started pack with the reconciled config and analyze the stack's resources."""
    info = session.info
    own, skipped = stack_layer(stack, info)
    layers = [initial_layer(info), own]
    if config is not None:
        check_names(config, info)
        layers.append(config)
    configs = reconciled_config(info, [layer.entries for layer in layers])
    check_schemas(configs, info, layers)
    try:
        _implemented(
            session.stub.ConfigureStack,
            analyzer_pb2.AnalyzerStackConfigureRequest(stack=stack.name, project=stack.project, dry_run=True),
        )
        session.stub.Configure(configure_request_of(configs))
    except grpc.RpcError as err:
        raise session.failure("Configure", err) from None
    findings = analyze_with(_Calls(session), stack.resources, session.version)
    cli_config = merged_config([layer.entries for layer in layers[1:]])
    return Outcome(findings, [layer for layer in layers if layer.entries], skipped, cli_config)


@dataclass(frozen=True)
class _Calls:
    """The stub's Analyze calls, a failure (a policy that raised) as one message naming the resource."""

    session: PackSession

    def Analyze(self, request: analyzer_pb2.AnalyzeRequest, /) -> analyzer_pb2.AnalyzeResponse:
        try:
            response: analyzer_pb2.AnalyzeResponse = self.session.stub.Analyze(request)
        except grpc.RpcError as err:
            raise self.session.failure("Analyze", err, f" of {request.urn}") from None
        return response

    def AnalyzeStack(self, request: analyzer_pb2.AnalyzeStackRequest, /) -> analyzer_pb2.AnalyzeResponse:
        try:
            response: analyzer_pb2.AnalyzeResponse = self.session.stub.AnalyzeStack(request)
        except grpc.RpcError as err:
            raise self.session.failure("AnalyzeStack", err) from None
        return response


def report(session: PackSession, stack: RenderedStack, outcome: Outcome) -> str:
    """What the command prints: the pack and the stack, the config layers applied, the findings as the CLI prints them."""
    pack = session.pack
    lines = [
        f"Policy pack {session.info.name} v{session.version} ({_shown(pack.path)}/, run by {_shown(pack.python)}) "
        f"on {_shown(stack.path)}/: {len(stack.resources)} resources"
    ]
    if pack.note:
        lines.append(f"  note: {pack.note}")
    applied = ", then ".join(layer.source for layer in outcome.layers) or "none (the pack's defaults)"
    lines.append(f"Pack config: {applied}")
    if outcome.skipped:
        lines.append(f"  skipped (no such policy in the pack): {', '.join(outcome.skipped)}")
    lines.append("")
    lines.append(format_findings(outcome.findings) or f"Policies: {session.info.name} reported nothing.")
    return "\n".join(lines)


def run(
    pack_dir: Path,
    stack_name: str,
    config_file: Path | None = None,
    python: Path | None = None,
    rendered: Path = RENDERED_DIR,
    session: PackSession | None = None,
    write_config: Path | None = None,
) -> int:
    """The command: print the report, return its exit code (a started ``session`` of the same pack is reused;
    ``write_config`` gets the config layers as the one file `pulumi preview --policy-pack-config` takes)."""
    try:
        pack = read_pack(pack_dir, python) if session is None else session.pack
        try:
            stack = read_rendered(stack_name, rendered)
        except RenderedStackError as err:
            raise OrgPackError(f"--stack {stack_name} (STACK=): {err}") from None
        config = read_config(config_file) if config_file is not None else None
        with contextlib.ExitStack() as stop:
            if session is None:
                session = stop.enter_context(started(pack, stack.project, stack.name))
            outcome = check(session, stack, config)
            text = report(session, stack, outcome)
        if write_config is not None:
            text += "\n\n" + _write(write_config, outcome.cli_config, session.pack)
    except OrgPackError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_ERROR
    print(text)
    if has_mandatory(outcome.findings):
        print("error: mandatory policy violations (above)", file=sys.stderr)
        return EXIT_VIOLATIONS
    return 0


def _write(path: Path, config: Mapping[str, Any], pack: PolicyPackDir) -> str:
    try:
        path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    except OSError as err:
        raise OrgPackError(
            f"--write-config {path} (PACK_CONFIG_OUT=): {err.strerror}; give a file in a folder that exists"
        ) from None
    return (
        f"Wrote {_shown(path)}: the same config for the CLI, "
        f"pulumi preview --policy-pack {_shown(pack.path)} --policy-pack-config {_shown(path)}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--pack", type=Path, required=True, help="the policy pack's folder (its PulumiPolicy.yaml)"
    )
    parser.add_argument(
        "--stack", default="dev", help="the stack whose rendered/<stack>/ to check (default dev)"
    )
    parser.add_argument(
        "--config", type=Path, default=None, help="pack config JSON, as --policy-pack-config takes"
    )
    parser.add_argument("--python", type=Path, default=None, help="the interpreter to run the pack with")
    parser.add_argument("--rendered", type=Path, default=RENDERED_DIR, help="where rendered/<stack>/ is")
    parser.add_argument(
        "--write-config",
        type=Path,
        default=None,
        help="write the config layers as one --policy-pack-config file",
    )
    args = parser.parse_args(argv)
    return run(args.pack, args.stack, args.config, args.python, args.rendered, write_config=args.write_config)


if __name__ == "__main__":
    sys.exit(main())
