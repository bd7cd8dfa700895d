"""The GitHub workflows cover every stack in stacks/ (.github/workflows/)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tools.mock_runtime import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def stacks() -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))


def workflow(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    return document


def pulumi_steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@")]


@pytest.mark.parametrize(("file", "job"), [("pull-request.yml", "preview"), ("deploy.yml", "up")])
def test_every_stack_is_in_the_matrix(file: str, job: str) -> None:
    assert sorted(workflow(file)["jobs"][job]["strategy"]["matrix"]["stack"]) == stacks()


def test_preview_posts_a_diff_with_the_policy_pack() -> None:
    (step,) = pulumi_steps(workflow("pull-request.yml")["jobs"]["preview"])
    assert step["with"]["command"] == "preview"
    assert step["with"]["comment-on-pr"] is True and step["with"]["diff"] is True
    assert step["with"]["policyPacks"] == "policies"
    assert step["with"]["policyPackConfigs"] == "rendered/${{ matrix.stack }}/policy-pack-config.json"


def test_deploy_runs_up_behind_an_environment_per_stack() -> None:
    job = workflow("deploy.yml")["jobs"]["up"]
    assert job["environment"] == "${{ matrix.stack }}"
    (step,) = pulumi_steps(job)
    assert step["with"]["command"] == "up" and step["with"]["policyPacks"] == "policies"


def test_offline_job_checks_rendered_is_current() -> None:
    runs = [s.get("run", "") for s in workflow("pull-request.yml")["jobs"]["offline"]["steps"]]
    assert "make test" in runs and "make render" in runs
    assert any("git status --porcelain rendered/" in r for r in runs)


def test_preview_is_skipped_without_credentials() -> None:
    preview = workflow("pull-request.yml")["jobs"]["preview"]
    assert preview["if"] == "needs.credentials.outputs.present == 'true'"


@pytest.mark.parametrize(("file", "job"), [("pull-request.yml", "preview"), ("deploy.yml", "up")])
def test_oci_cli_is_configured_before_pulumi_runs(file: str, job: str) -> None:
    # The kubeconfig's token command is the OCI CLI; without it every Kubernetes resource fails.
    uses = [str(s.get("uses", "")) for s in workflow(file)["jobs"][job]["steps"]]
    assert uses.index("./.github/actions/oci-cli") < uses.index("pulumi/actions@v7")
    action = yaml.safe_load((ROOT / ".github/actions/oci-cli/action.yml").read_text())
    script = action["runs"]["steps"][0]["run"]
    assert "pipx install oci-cli" in script and "~/.oci/config" in script
