"""A seeded structural fuzz of the example stacks: mutated stack files, and what the preview made of each.

Every mutation starts from one of examples/Pulumi.{dev,full,sriov}.yaml and applies one to three edits, on
the parsed document (keys deleted, misspelt or moved to another namespace; values replaced by ones of
the wrong type or size, by special ranges, ADs and OCIDs of the wrong form; list items repeated up to
5,000 times) or on the text (lines repeated, YAML tags, aliases, alias bombs, deep nesting, huge
numbers, dates, secrets, bytes that are not UTF-8, truncation). The same seed gives the same files.

`load_outcome` runs a file through the preview's config loading path (the stack file reader, the
config map the CLI hands the program, the program's config loading); `cli_outcome` through the real CLI
entry (`preview.cli.main`). Either answers how the run ended: accepted, refused with a message, or
crashed (an exception that is not a refusal: what a user would see as a traceback), and how long it took.
tests/benchmarks/test_stack_fuzz.py runs a few hundred; benchmarks/bench_stack_fuzz.py the 4,500 of the
issue and prints the figures.
"""

from __future__ import annotations

import contextlib
import copy
import io
import random
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from preview import cli
from preview.mock_runtime import pulumi_config_map
from preview.stack_file import StackFileError, read_stack_file, undecryptable
from preview.stacks import EXAMPLES
from stack_config.loading import load_program_stack
from stack_config.problems import ConfigError

STACKS = ("dev", "full", "sriov")

# Values of the wrong type, size or form for any key.
ODD_VALUES: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    10**30,
    2**63,
    1.5,
    float("inf"),
    float("nan"),
    "",
    "x" * 300,
    [],
    {},
    [1, "a"],
    {"a": 1},
    "2025-01-15",
    "Uocm:US-ASHBURN-AD-4",
    "Uocm:US-ASHBURN-1-AD-1",
    "us-ashburn-ad-1",
    "Uocm:PHX-AD-1",
    "ocid1.subnet.oc1.iad.aaaaaaaaexample",
    "ocid1.image.oc1..aaaaaaaaexample",
    "ocid1.compartment.oc1.iad.aaaaaaaaexample",
    "ocid1.tenancy.oc1..aaaaaaaaexample",
    "127.0.0.0/8",
    "0.0.0.0/0",
    "169.254.0.0/16",
    "224.0.0.0/4",
    "10.0.0.0/33",
    "fd00::/8",
    "10.0.0.0/8",
    "bm.gpu.b4.8",
    "BM.GPU.H100.8",
    "VM.GPU.A10.1",
    "none",
    "sriov",
)
# YAML text a scalar value is replaced with: tags, aliases and forms JSON cannot hold.
ODD_TEXT: tuple[str, ...] = (
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "2025-01-15",
    "2025-02-30",
    "2025-01-15T10:00:00Z",
    "!!timestamp 2025-01-15",
    "*nowhere",
    "&loop [*loop]",
    "!!python/object/apply:os.system [echo]",
    "!Ref other",
    "{secure: v1:c2VjcmV0}",
    ".inf",
    "-.inf",
    ".nan",
    "1_000",
    "0x1F",
    "0o17",
    "1:30",
    "yes",
    "~",
    '!!int "12"',
    "!!float abc",
    "!!bool maybe",
    '!!int ""',
    "9" * 4301,
    "9" * 5000,
    "[" * 500 + "]" * 500,
    "[" * 40 + "1" + "]" * 40,
    "=",
    "'unterminated",
    "{a: 1, a: 2}",
    "[2025-01-01: x]",
)
BOMB = "".join(
    f"  bomb{n}: &bomb{n} [{', '.join([f'*bomb{n - 1}' if n else 'lol'] * 10)}]\n" for n in range(9)
)
# Past this, a generated document is too big for the generator itself to write out.
MAX_GENERATED_VALUES = 100_000
NAMESPACES = ("oke-gpu-rmda", "OKE-GPU-RDMA", "oci", "kubernetes", "pulumi", "aws", "")


@dataclass(frozen=True)
class Mutation:
    """One mutated stack file: where it came from, the edits made, and its bytes."""

    index: int
    stack: str
    edits: tuple[str, ...]
    data: bytes


@dataclass(frozen=True)
class Outcome:
    """How one run ended: accepted, refused (with its message) or crashed (with its traceback)."""

    kind: str
    seconds: float
    detail: str = ""


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into ``value`` (mapping keys and list indexes)."""
    found: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, child in value.items():
            found += [(*path, key), *_paths(child, (*path, key))]
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += [(*path, i), *_paths(child, (*path, i))]
    return found


def _parent(document: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        document = document[part]
    return document


def _typo(rng: random.Random, key: str) -> str:
    if not key:
        return "x"
    i = rng.randrange(len(key))
    choice = rng.randrange(4)
    if choice == 0:
        return key[:i] + key[i + 1 :]
    if choice == 1:
        return key[:i] + rng.choice("abcxyz-.:") + key[i:]
    if choice == 2 and len(key) > 1:
        j = min(i + 1, len(key) - 1)
        chars = list(key)
        chars[i], chars[j] = chars[j], chars[i]
        return "".join(chars)
    return key.swapcase()


def _document_edit(rng: random.Random, document: dict[Any, Any]) -> str:
    """Edit the parsed document in place; returns what was done."""
    paths = _paths(document)
    if not paths:
        document["config"] = {"x": 1}
        return "empty document"
    path = rng.choice(paths)
    parent = _parent(document, path)
    last = path[-1]
    choice = rng.randrange(7)
    if choice == 0:
        del parent[last]
        return f"delete {path}"
    if choice == 1 and isinstance(last, str):
        new = _typo(rng, last)
        if len(path) == 2 and ":" in last and rng.random() < 0.5:
            new = f"{rng.choice(NAMESPACES)}:{last.partition(':')[2]}"
        parent[new] = parent.pop(last)
        return f"rename {path} -> {new!r}"
    if choice == 2:
        parent[last] = copy.deepcopy(rng.choice(ODD_VALUES))
        return f"replace {path}"
    if choice == 3 and isinstance(parent, list):
        times = rng.choice((1, 2, 50, 5000))
        parent.extend(copy.deepcopy(parent[last]) for _ in range(times))
        return f"repeat {path} x{times}"
    if choice == 4:
        other = rng.choice(paths)
        try:
            value = copy.deepcopy(_parent(document, other)[other[-1]])
        except (KeyError, IndexError, TypeError):
            return "swap (no-op)"
        parent[last] = value
        return f"copy {other} to {path}"
    if choice == 5 and isinstance(parent, dict):
        parent[rng.choice((1, None, True, 2.5))] = "x"
        return f"non-text key beside {path}"
    if isinstance(parent[last], int) and not isinstance(parent[last], bool):
        parent[last] = rng.choice((0, -5, 10**30, 2**63, 3))
        return f"number {path}"
    parent[last] = rng.choice(ODD_VALUES)
    return f"replace {path}"


def _text_edit(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    choice = rng.randrange(6)
    i = rng.randrange(len(lines)) if lines else 0
    if choice == 0 and lines:
        lines.insert(i, lines[i])
        return "".join(lines)
    if choice == 1:
        candidates = [n for n, line in enumerate(lines) if ": " in line and not line.rstrip().endswith(":")]
        if candidates:
            n = rng.choice(candidates)
            head = lines[n].split(": ", 1)[0]
            lines[n] = f"{head}: {rng.choice(ODD_TEXT)}\n"
        return "".join(lines)
    if choice == 2:
        return text.replace("config:\n", "config:\n" + BOMB, 1)
    if choice == 3:
        extra = rng.choice(("  1: x\n", "  ? [a]\n  : b\n", "  2025-01-01: x\n", "  null: x\n", "  ~: y\n"))
        return text.replace("config:\n", "config:\n" + extra, 1)
    if choice == 4:
        return text[: rng.randrange(len(text))]
    return text + rng.choice(("oops: [\n", "config:\n  a: 1\n", "\t\n", "environment: [prod]\n"))


def mutations(count: int, seed: int = 22) -> list[Mutation]:
    """``count`` mutated stack files, the same ones for the same seed."""
    rng = random.Random(seed)
    texts = {stack: (EXAMPLES / f"Pulumi.{stack}.yaml").read_text() for stack in STACKS}
    found: list[Mutation] = []
    for index in range(count):
        stack = rng.choice(STACKS)
        edits: list[str] = []
        text = texts[stack]
        document: Any = yaml.safe_load(text)
        for _ in range(rng.randint(1, 3)):
            if not isinstance(document, dict):
                break
            before = copy.deepcopy(document)
            edits.append(_document_edit(rng, document))
            if len(_paths(document)) > MAX_GENERATED_VALUES:
                document = before  # two repeats of nested lists: millions of values, for the generator too
                edits[-1] += " (undone: too big)"
        text = yaml.safe_dump(document, sort_keys=False, width=10_000)
        if rng.random() < 0.5:
            text = _text_edit(rng, text)
            edits.append("text edit")
        data = text.encode()
        if rng.random() < 0.05:
            at = rng.randrange(len(data) + 1)
            data = data[:at] + rng.choice((b"\xff", b"\xc3", b"\x00", b"\xef\xbb\xbf")) + data[at:]
            edits.append("bytes")
        found.append(Mutation(index, stack, tuple(edits), data))
    return found


def _timed(run: Callable[[], str]) -> Outcome:
    started = time.monotonic()
    try:
        kind = run()
        detail = ""
    except (StackFileError, ConfigError, cli.PreviewError) as err:
        kind, detail = "refused", str(err)
    except Exception:
        kind, detail = "crashed", traceback.format_exc()
    return Outcome(kind, time.monotonic() - started, detail)


def load_outcome(mutation: Mutation, folder: Path) -> Outcome:
    """The mutation through the preview's config loading path."""
    path = folder / f"Pulumi.fuzz{mutation.index}.yaml"
    path.write_bytes(mutation.data)

    def run() -> str:
        document = read_stack_file(path, f"stacks/{path.name}")
        secrets = undecryptable(document, f"stacks/{path.name}")
        if secrets:
            raise cli.PreviewError("\n".join(secrets))
        load_program_stack(pulumi_config_map(document), f"fuzz{mutation.index}")
        return "accepted"

    return _timed(run)


def cli_outcome(mutation: Mutation, folder: Path) -> Outcome:
    """The mutation through the CLI's entry, as `make preview` runs it (the plan against no base)."""
    name = f"fuzz{mutation.index}"
    (folder / f"Pulumi.{name}.yaml").write_bytes(mutation.data)
    args = ["--stack", name, "--stacks-dir", str(folder), "--rendered", str(folder / "rendered")]
    args += ["--base-dir", str(folder / "no-base")]

    def run() -> str:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            code = cli.main(args)
        if code != 0 and "Traceback" in err.getvalue():
            raise RuntimeError(err.getvalue())
        return "accepted" if code == 0 else "refused"

    return _timed(run)
