"""Stack files read as the Pulumi CLI reads them, or refused in one line, quickly (preview/stack_file.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.nodes.gpu_node_pool import typed_provider_settings
from preview.stack_file import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_VALUES,
    StackFileError,
    read_stack_file,
    undecryptable,
)

SHOWN = "stacks/Pulumi.x.yaml"
BOMB = "".join(
    f"  {name}: &{name} [{', '.join([f'*{prev}' if prev else 'lol'] * 10)}]\n"
    for prev, name in zip(["", "a", "b", "c", "d", "e", "f", "g"], "abcdefgh", strict=True)
)


def refused(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "Pulumi.x.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(StackFileError) as caught:
        read_stack_file(path, SHOWN)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "config:\n  oci:region: us-ashburn-1\n  oke-gpu-rdma:dranet: {}\n  oci:region: us-phoenix-1\n",
            "is not a valid stack file: line 4, column 3: the key 'oci:region' is given twice in one mapping "
            "(lines 2 and 4); keep one",
        ),
        (
            "config:\n  1: x\n",
            "is not a valid stack file: line 2, column 3: the key '1' is not text; quote it (\"1\") or fix the key",
        ),
        (
            "config:\n  oke-gpu-rdma:nodePools:\n    - labels:\n        2025-01-15: x\n",
            "is not a valid stack file: line 4, column 9: the key '2025-01-15' is not text; quote it "
            '("2025-01-15") or fix the key',
        ),
        (
            "config:\n  oke-gpu-rdma:dranet: !!binary aGVsbG8=\n",
            "is not a valid stack file: line 2, column 24: a !!binary value, which stack config cannot hold "
            "(values are text, numbers, booleans, lists and mappings); write it as one of those",
        ),
        (
            "config:\n  oke-gpu-rdma:dranet: !!set {a, b}\n",
            "is not a valid stack file: line 2, column 24: a !!set value, which stack config cannot hold "
            "(values are text, numbers, booleans, lists and mappings); write it as one of those",
        ),
        (
            "config:\n  oke-gpu-rdma:dranet: &a [*a]\n",
            "a value contains itself (a recursive alias); no setting can hold it",
        ),
        (
            "config:\n  oke-gpu-rdma:dranet: " + "[" * 3000 + "]" * 3000 + "\n",
            f"values nest deeper than {MAX_DEPTH} levels; no setting nests that deep",
        ),
        (
            "config:\n  oke-gpu-rdma:dranet: " + "[" * 40 + "]" * 40 + "\n",
            f"values nest deeper than {MAX_DEPTH} levels; no setting nests that deep",
        ),
        (
            "config:\n  oke-gpu-rdma:nodePools: [{count: " + "7" * 4301 + "}]\n",
            "is not a valid stack file: line 2, column 36: an integer of 4301 digits; no setting takes a number "
            "that large",
        ),
        (
            "config:\n" + BOMB,
            f"it holds more than {MAX_VALUES:,} values once its aliases are expanded (an alias bomb?); write "
            "each value once",
        ),
        (
            b"config:\n  oci:region: us-ashburn-1\n  x: \xff\n",
            "is not UTF-8 text (byte 0xff at line 3); save it as UTF-8",
        ),
        (
            "configs:\n  oci:region: us-ashburn-1\n",
            "configs is not a key of a stack file (they are config, environment, secretsprovider, encryptedkey, "
            "encryptionsalt); did you mean config?",
        ),
        (
            "config: {}\nenvironment: [prod]\n",
            "environment: the offline preview cannot open Pulumi ESC environments, so it would judge the stack "
            "without their values; put the settings under config: (or check with pulumi preview)",
        ),
        ("- config\n", "must be a mapping with a `config:` mapping of keys to values"),
        (
            "config:\n  oke-gpu-rdma:dranet: !!float abc\n",
            "is not a valid stack file: line 2, column 24: 'abc' is no float (its tag !!float says it is); remove the "
            "tag or fix the value",
        ),
        (
            "config:\n  oke-gpu-rdma:dranet: !!bool maybe\n",
            "is not a valid stack file: line 2, column 24: 'maybe' is no bool (its tag !!bool says it is); remove "
            "the tag or fix the value",
        ),
        (
            "config:\n\toci:region: x\n",
            "is not a valid stack file: line 2, column 1: while scanning for the next token found character "
            "'\\t' that cannot start any token",
        ),
    ],
)
def test_a_malformed_stack_file_is_one_line(tmp_path: Path, text: str | bytes, message: str) -> None:
    assert refused(tmp_path, text) == f"{SHOWN}: {message}"


def test_a_file_past_the_size_bound_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    text = "config:\n" + "".join(f"  oke-gpu-rdma:k{i}: {'x' * 60}\n" for i in range(MAX_BYTES // 70))
    assert refused(tmp_path, text) == (
        f"{SHOWN}: is {len(text.encode()):,} bytes, more than the {MAX_BYTES:,} a stack file may hold here (the "
        "largest stack OKE could run takes about 320 KB); write each setting once"
    )


def test_dates_stay_the_text_the_cli_passes(tmp_path: Path) -> None:
    # yaml.v3 gives a timestamp decoded into interface{} as its text; an impossible date is text anyway.
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(
        "config:\n  oke-gpu-rdma:dranet:\n    imageTag: 2025-01-15\n    chartVersion: 2025-02-30\n"
    )
    assert read_stack_file(path, SHOWN) == {
        "config": {"oke-gpu-rdma:dranet": {"imageTag": "2025-01-15", "chartVersion": "2025-02-30"}}
    }


def test_merge_keys_are_no_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(
        "config:\n  oke-gpu-rdma:dranet:\n    <<: {enabled: true, imageTag: a}\n    imageTag: b\n"
    )
    assert read_stack_file(path, SHOWN)["config"]["oke-gpu-rdma:dranet"] == {"enabled": True, "imageTag": "b"}


def test_secrets_of_the_program_are_named_not_judged() -> None:
    document = {
        "config": {
            "oke-gpu-rdma:compartmentId": {"secure": "v1:AAA="},
            "oke-gpu-rdma:network": {"existing": {"workerSubnet": {"id": {"secure": "v1:BBB="}}}},
            "oci:privateKey": {"secure": "v1:CCC="},
            "oci:retryDurationSeconds": {"secure": "v1:DDD="},
        }
    }
    why = (
        "is a secret (secure:) the offline preview cannot decrypt, so it cannot judge the value; keep this "
        "setting in plain text (a compartment or subnet OCID is no secret), or check the stack with pulumi preview"
    )
    assert undecryptable(document, SHOWN, typed_provider_settings()) == [
        f"{SHOWN}: oke-gpu-rdma:compartmentId {why}",
        f"{SHOWN}: oke-gpu-rdma:network.existing.workerSubnet.id {why}",
        # Read as an int, so offline its ciphertext would be judged; the private key is handed on as text.
        f"{SHOWN}: oci:retryDurationSeconds {why}",
    ]
