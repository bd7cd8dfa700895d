"""The GitHub workflows: matrices from the user's stack files, previews with the policy pack (.github/workflows/)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from preview.mock_runtime import ROOT
from preview.stacks import EXAMPLES, stack_names

WORKFLOWS = ROOT / ".github" / "workflows"


def workflow(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    return document


def oci_cli_action() -> dict[str, Any]:
    action: dict[str, Any] = yaml.safe_load((ROOT / ".github/actions/oci-cli/action.yml").read_text())
    return action


def pulumi_steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@")]


@pytest.mark.parametrize(
    ("file", "job"), [("pull-request.yml", "preview"), ("deploy.yml", "plan"), ("deploy.yml", "up")]
)
def test_the_matrix_is_the_users_stack_files(file: str, job: str) -> None:
    # No list kept by hand: a stack file added to stacks/ is previewed and deployed, examples never.
    jobs = workflow(file)["jobs"]
    assert jobs[job]["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.list) }}"
    assert "stacks" in jobs[job]["needs"] and "needs.stacks.outputs.list != '[]'" in jobs[job]["if"]
    runs = [s.get("run", "") for s in jobs["stacks"]["steps"]]
    assert any("python3 tools/stack_list.py" in r for r in runs)


def test_the_stack_list_holds_only_the_users_stacks(tmp_path: Path) -> None:
    # In a copy of the repository's layout with stack files of its own, so the test never reads
    # stacks/: what a user keeps there (any name, a broken file) cannot fail it.
    for source in ("tools/stack_list.py", "preview/__init__.py", "preview/stacks.py"):
        (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / source).write_text((ROOT / source).read_text())
    (tmp_path / "stacks").mkdir()
    (tmp_path / "examples").mkdir()
    (tmp_path / "stacks" / "Pulumi.prod.yaml").write_text("config: {}\n")
    (tmp_path / "stacks" / "Pulumi.alpha.yaml").write_text("config: [not: valid\n")
    (tmp_path / "stacks" / "README.md").write_text("not a stack\n")
    (tmp_path / "examples" / "Pulumi.dev.yaml").write_text("config: {}\n")
    listed = subprocess.run(
        [sys.executable, "tools/stack_list.py"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert json.loads(listed.stdout) == ["alpha", "prod"]


def test_no_stack_files_of_yours_give_an_empty_matrix(tmp_path: Path) -> None:
    assert stack_names(tmp_path) == []
    assert stack_names(EXAMPLES) == ["dev", "fleet", "full", "gb200", "sriov"]


def test_preview_posts_a_diff_with_the_policy_pack() -> None:
    (step,) = pulumi_steps(workflow("pull-request.yml")["jobs"]["preview"])
    assert step["with"]["command"] == "preview"
    assert step["with"]["comment-on-pr"] is True and step["with"]["diff"] is True
    # The base commit's pack (tests/ci/test_trust.py), with the branch's stack config.
    assert step["with"]["policyPacks"] == "base/policies"
    assert step["with"]["policyPackConfigs"] == "rendered/${{ matrix.stack }}/policy-pack-config.json"


def test_deploy_runs_up_behind_an_environment_per_stack() -> None:
    job = workflow("deploy.yml")["jobs"]["up"]
    assert job["environment"] == "${{ matrix.stack }}"
    (step,) = pulumi_steps(job)
    assert step["with"]["command"] == "up" and step["with"]["policyPacks"] == "policies"


def test_offline_job_checks_rendered_is_current() -> None:
    runs = [s.get("run", "") for s in workflow("pull-request.yml")["jobs"]["offline"]["steps"]]
    assert "make test" in runs
    assert 'make render BASE="$BASE" SUMMARY="$GITHUB_STEP_SUMMARY"' in runs
    assert any("git status --porcelain rendered/" in r for r in runs)


def test_offline_job_plans_against_the_pull_requests_base() -> None:
    # Forks get no secrets, so this plan is the only preview their reviewers see.
    steps = workflow("pull-request.yml")["jobs"]["offline"]["steps"]
    render = next(s for s in steps if str(s.get("run", "")).startswith("make render"))
    fetch = next(s for s in steps if str(s.get("run", "")).startswith("git fetch"))
    for step in (render, fetch):
        assert step["env"]["BASE"] == "${{ github.event.pull_request.base.sha }}"
    assert steps.index(fetch) < steps.index(render)


def test_preview_is_skipped_without_credentials() -> None:
    preview = workflow("pull-request.yml")["jobs"]["preview"]
    assert preview["if"].startswith("needs.credentials.outputs.present == 'true'")


CLOUD_JOBS = [("pull-request.yml", "preview"), ("deploy.yml", "plan"), ("deploy.yml", "up")]


@pytest.mark.parametrize(("file", "job"), CLOUD_JOBS)
def test_oci_cli_is_configured_before_pulumi_runs(file: str, job: str) -> None:
    # The kubeconfig's token command is the OCI CLI; without it every Kubernetes resource fails.
    uses = [str(s.get("uses", "")).split("@")[0] for s in workflow(file)["jobs"][job]["steps"]]
    assert uses.index("./.github/actions/oci-cli") < uses.index("pulumi/actions")
    script = oci_cli_action()["runs"]["steps"][0]["run"]
    assert '-r "$ACTION_DIR/requirements.lock"' in script and "~/.oci/config" in script
    # On PATH for the later steps, where Pulumi runs the kubeconfig's `oci`.
    assert 'echo "$cli/bin" >> "$GITHUB_PATH"' in script


@pytest.mark.parametrize(("file", "job"), CLOUD_JOBS)
def test_pulumi_creates_the_stack_on_first_use(file: str, job: str) -> None:
    # A new stack file deploys without a `pulumi stack init` by hand (pulumi/actions' `upsert` input).
    (step,) = pulumi_steps(workflow(file)["jobs"][job])
    assert step["with"]["upsert"] is True


def test_the_ci_page_names_every_secret_and_variable_the_workflows_read() -> None:
    # What a user must set up is what the workflows read; a new one undocumented fails here.
    read = {
        name
        for path in [*WORKFLOWS.glob("*.yml"), *(ROOT / ".github" / "actions").rglob("*.yml")]
        for name in re.findall(r"\$\{\{\s*(?:secrets|vars)\.(\w+)", path.read_text())
    }
    page = "".join(path.read_text() for path in sorted((ROOT / "docs").glob("ci*.md")))  # ci.md and its parts
    assert read and sorted(name for name in read if f"`{name}`" not in page) == []


@pytest.mark.parametrize("file", ["pull-request.yml", "deploy.yml"])
def test_workflows_hold_nothing_of_a_particular_stack(file: str) -> None:
    # Stacks, regions and OCIDs come from stacks/ and the repository's secrets and variables.
    text = (WORKFLOWS / file).read_text()
    assert "ocid1." not in text
    assert not any(f"stack-name: {name}" in text for name in stack_names(EXAMPLES))
    assert "us-ashburn-1" not in text


def _runs(file: str) -> dict[str, list[str]]:
    return {
        name: [str(s.get("run", "")) for s in job["steps"]] for name, job in workflow(file)["jobs"].items()
    }


def test_a_pull_request_runs_the_tests_once() -> None:
    runs = [r for job in _runs("pull-request.yml").values() for r in job]
    assert sum("make test" in r for r in runs) == 1


def test_deploy_runs_the_guarding_checks_not_the_suite() -> None:
    jobs = workflow("deploy.yml")["jobs"]
    runs = _runs("deploy.yml")
    assert not any("make test" in r or "pytest" in r for job in runs.values() for r in job)
    # The rendering is current and the policy pack passes (make render fails on a mandatory violation).
    assert "make render" in runs["checks"]
    assert any("git status --porcelain rendered/" in r for r in runs["checks"])
    assert set(jobs["plan"]["needs"]) == {"stacks", "checks"}
    assert set(jobs["up"]["needs"]) == {"stacks", "checks", "plan"}


def test_deploy_runs_the_stacks_in_parallel() -> None:
    strategy = workflow("deploy.yml")["jobs"]["up"]["strategy"]
    assert "max-parallel" not in strategy and strategy["fail-fast"] is False


@pytest.mark.parametrize(("file", "job"), CLOUD_JOBS)
def test_cloud_jobs_install_with_uv_through_make(file: str, job: str) -> None:
    runs = _runs(file)[job]
    assert "make venvs" in runs and not any("pip install" in r for r in runs)
    makefile = (ROOT / "Makefile").read_text()
    assert "venvs: $(RUNTIME_STAMP) $(PACK_STAMP)" in makefile


@pytest.mark.parametrize(("file", "job"), [("deploy.yml", "plan"), ("deploy.yml", "up")])
def test_a_self_managed_backend_works_as_pulumi_cloud_does(file: str, job: str) -> None:
    definition = workflow(file)["jobs"][job]
    (step,) = pulumi_steps(definition)
    # On the step that runs Pulumi, not the job: nothing else sees them.
    assert step["env"]["PULUMI_BACKEND_URL"] == "${{ vars.PULUMI_BACKEND_URL }}"
    assert step["env"]["PULUMI_CONFIG_PASSPHRASE"] == "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"
    assert step["with"]["cloud-url"] == "${{ vars.PULUMI_BACKEND_URL }}"
    # An <org>/ prefix only for Pulumi Cloud.
    assert "!vars.PULUMI_BACKEND_URL" in step["with"]["stack-name"]


def test_a_self_managed_backend_gets_no_pull_request_preview() -> None:
    # Its preview would need the passphrase, which decrypts every stack secret (docs/ci.md).
    (check,) = workflow("pull-request.yml")["jobs"]["credentials"]["steps"]
    script = check["run"]
    backend = script.index('if [ -n "$PULUMI_BACKEND_URL" ]; then')
    assert script.index('echo "present=false"', backend) < script.index('echo "present=true"')
    assert '[ -n "$PULUMI_ACCESS_TOKEN" ] || [ -n "$PULUMI_BACKEND_URL" ]' not in script


def test_deploy_lists_only_the_stacks_not_opted_out() -> None:
    assert any("python3 tools/stack_list.py --deploy" in r for r in _runs("deploy.yml")["stacks"])
    assert not any("--deploy" in r for r in _runs("pull-request.yml")["stacks"])


def _stack_list(tmp_path: Path, no_deploy: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    for source in ("tools/stack_list.py", "preview/__init__.py", "preview/stacks.py"):
        (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / source).write_text((ROOT / source).read_text())
    (tmp_path / "stacks").mkdir(exist_ok=True)
    for name in ("prod", "lab", "staging"):
        (tmp_path / "stacks" / f"Pulumi.{name}.yaml").write_text("config: {}\n")
    listing = tmp_path / "stacks" / "no-deploy.txt"
    if no_deploy is None:
        listing.unlink(missing_ok=True)
    else:
        listing.write_text(no_deploy)
    return subprocess.run(
        [sys.executable, "tools/stack_list.py", *args], cwd=tmp_path, capture_output=True, text=True
    )


def test_a_stack_in_no_deploy_is_previewed_not_deployed(tmp_path: Path) -> None:
    listed = _stack_list(tmp_path, "# hand-managed\nlab  # a lab cluster\n\n", "--deploy")
    assert listed.returncode == 0 and json.loads(listed.stdout) == ["prod", "staging"]
    previewed = _stack_list(tmp_path, None)
    assert json.loads(previewed.stdout) == ["lab", "prod", "staging"]
    assert json.loads(_stack_list(tmp_path, None, "--deploy").stdout) == ["lab", "prod", "staging"]


def test_a_misspelt_name_in_no_deploy_fails_the_list_naming_it(tmp_path: Path) -> None:
    # A typo must not deploy the stack it meant to keep out.
    listed = _stack_list(tmp_path, "labb\n", "--deploy")
    assert listed.returncode == 1 and listed.stdout == ""
    assert listed.stderr == (
        "error: stacks/no-deploy.txt: labb is no stack file stacks/Pulumi.<name>.yaml (stacks: lab, prod, "
        "staging); fix the name or remove the line\n"
    )


def test_make_test_takes_its_workers_from_the_measurement() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "JOBS ?= $(shell cat $(JOBS_FILE) 2>/dev/null || nproc)" in makefile
    assert "$(PY) benchmarks/bench_make_test.py $(if $(SWEEP),--sweep --write $(JOBS_FILE))" in makefile
    assert "-n $(JOBS) --dist loadfile" in makefile


# --- credentials by trust level ------------------------------------------------------------------


def _mentions_a_secret(value: Any) -> bool:
    return "secrets." in yaml.safe_dump(value)


def test_no_secret_reaches_a_pull_request_job_without_an_environment() -> None:
    # A pull request's code runs in these jobs; repository secrets would reach it. Environment secrets
    # reach only the jobs that name the environment (and pass its reviewers).
    document = workflow("pull-request.yml")
    # YAML 1.1 reads the key `on` as true.
    triggers = {str(key): value for key, value in document.items()}["True"]
    assert "pull_request_target" not in triggers and "pull_request" in triggers
    assert not _mentions_a_secret(document.get("env", {}))
    unguarded = [
        name for name, job in document["jobs"].items() if _mentions_a_secret(job) and "environment" not in job
    ]
    assert unguarded == []
    for name in ("credentials", "preview"):
        assert document["jobs"][name]["environment"] == "preview"
    # The jobs that run the branch's tests and renderings get no secret at all.
    assert not _mentions_a_secret(document["jobs"]["offline"]) and not _mentions_a_secret(
        document["jobs"]["stacks"]
    )


def test_each_stack_deploys_with_its_own_environments_credentials() -> None:
    job = workflow("deploy.yml")["jobs"]["up"]
    assert job["environment"] == "${{ matrix.stack }}"
    assert job["permissions"] == {"contents": "read", "id-token": "write"}


@pytest.mark.parametrize("file", ["pull-request.yml", "deploy.yml"])
def test_secrets_are_on_the_steps_that_need_them_only(file: str) -> None:
    document = workflow(file)
    assert not _mentions_a_secret(document.get("env", {}))
    for name, job in document["jobs"].items():
        assert not _mentions_a_secret(job.get("env", {})), f"{file} {name}: secrets at job level"
        for step in job["steps"]:
            uses, run = str(step.get("uses", "")), str(step.get("run", ""))
            if _mentions_a_secret(step):
                # The OCI credentials, Pulumi, or the presence check (which only tests them).
                assert (
                    uses.startswith(("./.github/actions/oci-cli", "pulumi/actions@"))
                    or step.get("id") == "check"
                )
            if run.startswith(("make", "git ")):
                assert not _mentions_a_secret(step), f"{file} {name}: {run!r} gets a secret"


USES = re.compile(r"^\s*-?\s*uses:\s*(\S+)", re.MULTILINE)


def test_every_third_party_action_is_pinned_by_commit() -> None:
    # A tag can be moved to other code; a commit cannot.
    files = [*WORKFLOWS.glob("*.yml"), *(ROOT / ".github" / "actions").rglob("*.yml")]
    uses = [u for path in files for u in USES.findall(path.read_text())]
    assert uses
    third_party = [u for u in uses if not u.startswith("./")]
    assert (
        third_party
        and [u for u in third_party if not re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", u)] == []
    )


def test_tools_are_pinned_by_version() -> None:
    # The OCI CLI at its pin, from a lock of every package it needs (tests/ci/test_locks.py checks the hashes).
    pins = (ROOT / ".github/actions/oci-cli/requirements.txt").read_text()
    assert re.search(r"^oci-cli==\d+\.\d+\.\d+$", pins, re.M)
    assert "pipx install" not in oci_cli_action()["runs"]["steps"][0]["run"]
    # The Pulumi CLI at the SDK's pin, not pulumi/actions' default (the newest 3.x).
    (sdk,) = re.findall(r"^pulumi==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M)
    for file, job in CLOUD_JOBS:
        (step,) = pulumi_steps(workflow(file)["jobs"][job])
        assert str(step["with"]["pulumi-version"]) == sdk, f"{file} {job}"


@pytest.mark.parametrize(("file", "job"), CLOUD_JOBS)
def test_credentials_are_removed_whatever_the_outcome(file: str, job: str) -> None:
    steps = workflow(file)["jobs"][job]["steps"]
    cleanup = steps[-1]
    assert cleanup["if"] == "always()" and cleanup["run"] == "rm -rf ~/.oci"
    assert steps.index(pulumi_steps(workflow(file)["jobs"][job])[0]) < len(steps) - 1


@pytest.mark.parametrize("file", ["pull-request.yml", "deploy.yml"])
def test_checkouts_leave_no_token_for_the_branchs_code(file: str) -> None:
    checkouts = [
        s
        for job in workflow(file)["jobs"].values()
        for s in job["steps"]
        if str(s.get("uses", "")).startswith("actions/checkout@")
    ]
    assert checkouts and all(c["with"]["persist-credentials"] is False for c in checkouts)


def test_short_lived_credentials_come_from_the_oidc_token_exchange() -> None:
    script = oci_cli_action()["runs"]["steps"][0]["run"]
    # Oracle, "Token Exchange Grant Type: Exchanging a JSON Web Token for a UPST".
    assert "$DOMAIN_URL/oauth2/v1/token" in script
    assert "requested_token_type=urn:oci:token-type:oci-upst" in script
    assert "grant_type=urn:ietf:params:oauth:grant-type:token-exchange" in script
    assert "security_token_file=" in script and "TF_VAR_auth=SecurityToken" in script
    for file, job in CLOUD_JOBS:
        assert workflow(file)["jobs"][job]["permissions"]["id-token"] == "write"


def test_the_credentials_step_runs_nothing_the_branch_installed() -> None:
    # make venvs installed the pull request's requirements; the step that holds the OCI secrets must not
    # run that virtualenv's interpreter (a dependency's code would see them).
    script = oci_cli_action()["runs"]["steps"][0]["run"]
    assert "venv/bin/" not in script and "make " not in script
