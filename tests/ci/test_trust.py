"""What a pull request's code can reach in CI (issue 36): runner pools, tool homes, preview credentials, the
policy pack a pull request is judged by, code owners, and the reviewed plan a deploy applies."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from preview.mock_runtime import ROOT
from tests.strict_yaml import load_file

from .test_workflows import CLOUD_JOBS, oci_cli_action, pulumi_steps, workflow

RUNS_ON = re.compile(r"^\$\{\{ vars\.(\w+) \|\| '([\w.-]+)' \}\}$")


def _pool(file: str, job: str) -> tuple[str, str]:
    """(variable, default) of a job's `runs-on: ${{ vars.X || 'default' }}`."""
    match = RUNS_ON.match(workflow(file)["jobs"][job]["runs-on"])
    assert match, f"{file} {job}: runs-on is not a repository variable with a default"
    return match.group(1), match.group(2)


# --- finding 2 (High): pull requests' code and deploys on one runner ----------------------------------


def test_previews_and_deploys_run_on_separate_runner_pools() -> None:
    # A self-hosted runner keeps what a job leaves on it: the pool that runs a pull request's code must not
    # be the one that deploys. One variable, or one default, for both would make them one pool.
    preview = _pool("pull-request.yml", "preview")
    deploys = {_pool("deploy.yml", job) for job in ("plan", "up")}
    assert len(deploys) == 1
    (deploy,) = deploys
    assert preview[0] != deploy[0], "previews and deploys name the same runner variable"
    assert preview[1] != deploy[1], "previews and deploys share a default runner"
    everything = "\n".join(path.read_text() for path in (ROOT / ".github").rglob("*.yml"))
    assert "vars.RUNNER " not in everything and "vars.RUNNER}" not in everything
    assert f"vars.{deploy[0]}" not in (ROOT / ".github/workflows/pull-request.yml").read_text()
    assert f"vars.{preview[0]}" not in (ROOT / ".github/workflows/deploy.yml").read_text()
    page = (ROOT / "docs/ci-credentials-and-runners.md").read_text()
    assert "instance principal must not be reachable from the preview pool" in page


def _job_homes_script() -> str:
    action = yaml.safe_load((ROOT / ".github/actions/job-homes/action.yml").read_text())
    (step,) = action["runs"]["steps"]
    script: str = step["run"]
    return script


@pytest.mark.parametrize(("file", "job"), CLOUD_JOBS)
def test_cloud_jobs_give_every_tool_a_fresh_home_first(file: str, job: str) -> None:
    steps = workflow(file)["jobs"][job]["steps"]
    uses = [str(s.get("uses", "")).split("@")[0] for s in steps]
    homes = uses.index("./.github/actions/job-homes")
    # Right after the checkout it comes from, before anything installs or runs a tool.
    assert uses[:homes] == ["actions/checkout"]
    first_tool = min(
        i
        for i, s in enumerate(steps)
        if "run" in s
        or str(s.get("uses", "")).startswith(("actions/setup-python", "pulumi/", "./.github/actions/oci"))
    )
    assert homes < first_tool


def test_the_tool_homes_are_under_the_jobs_temporary_directory() -> None:
    script = _job_homes_script()
    assert 'homes="$RUNNER_TEMP/tool-homes"' in script and 'rm -rf "$homes"' in script
    written = dict(re.findall(r'echo "(\w+)=([^"]*)"', script))
    for name in (
        "PULUMI_HOME",
        "PIPX_HOME",
        "PIPX_BIN_DIR",
        "UV_CACHE_DIR",
        "PIP_CACHE_DIR",
        "XDG_CACHE_HOME",
    ):
        assert written.get(name, "").startswith("$homes/"), name
    assert written["PIP_CONFIG_FILE"] == "/dev/null" and written["UV_NO_CONFIG"] == "1"
    assert '>> "$GITHUB_ENV"' in script


def test_the_tool_homes_action_sets_them_for_the_later_steps(tmp_path: Path) -> None:
    env_file, path_file = tmp_path / "env", tmp_path / "path"
    runner_temp = tmp_path / "temp"
    (runner_temp / "tool-homes" / "pulumi" / "plugins").mkdir(parents=True)
    (runner_temp / "tool-homes" / "pulumi" / "plugins" / "planted").write_text("")
    env = {"PATH": os.environ["PATH"], "RUNNER_TEMP": str(runner_temp)}
    env |= {"GITHUB_ENV": str(env_file), "GITHUB_PATH": str(path_file)}
    subprocess.run(["bash", "-c", _job_homes_script()], env=env, check=True)
    written = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
    assert written["PULUMI_HOME"] == f"{runner_temp}/tool-homes/pulumi"
    assert not (runner_temp / "tool-homes" / "pulumi" / "plugins").exists()
    assert Path(written["UV_CACHE_DIR"]).is_dir() and Path(written["PIPX_BIN_DIR"]).is_dir()


def test_pipx_installs_only_with_force() -> None:
    # Without --force, pipx keeps a virtualenv already in PIPX_HOME, whoever put it there.
    for path in [*(ROOT / ".github").rglob("*.yml"), ROOT / "Makefile"]:
        for line in path.read_text().splitlines():
            if re.search(r"\bpipx install\b", line) and not line.lstrip().startswith("#"):
                assert "--force" in line, f"{path.relative_to(ROOT)}: {line.strip()}"


# --- finding 4: preview credentials that decrypt every stack secret --------------------------------


def test_the_pull_request_preview_gets_no_credential_that_decrypts() -> None:
    # The passphrase decrypts every secret of every stack; the bucket's keys read the state it encrypts.
    document = workflow("pull-request.yml")
    text = (ROOT / ".github/workflows/pull-request.yml").read_text()
    for secret in (
        "PULUMI_CONFIG_PASSPHRASE",
        "AWS_SECRET_ACCESS_KEY",
        "AZURE_STORAGE_KEY",
        "AWS_ACCESS_KEY_ID",
    ):
        assert f"secrets.{secret}" not in text, secret
    (step,) = pulumi_steps(document["jobs"]["preview"])
    assert set(step["env"]) == {"PULUMI_ACCESS_TOKEN"}
    assert "cloud-url" not in step["with"]


def test_the_ci_page_grants_previews_no_secret_contents() -> None:
    # `read all-resources` covers secret-family, and `read secret-bundles` returns a secret's contents.
    page = " ".join((ROOT / "docs/ci-credentials-and-runners.md").read_text().split())
    statements = re.findall(r"Allow group <preview-group> to (\w+) ([\w-]+)", page)
    assert statements
    refused = {"all-resources", "secret-family", "secret-bundles", "secrets", "vaults", "keys"}
    assert [s for s in statements if s[1] in refused] == []
    assert "read all-resources" not in page.replace("`read all-resources` includes", "")
    # The Pulumi token of the preview environment cannot decrypt (Stack Read can).
    assert "no `stack:decrypt`" in page


def _run_oci_action(tmp_path: Path, stack_text: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.prod.yaml").write_text(stack_text)
    env = {"PATH": os.environ["PATH"], "STACK": "prod", "RUNNER_TEMP": str(tmp_path / "temp")}
    env |= {"GITHUB_PATH": str(tmp_path / "path"), "GITHUB_ENV": str(tmp_path / "env"), "HOME": str(tmp_path)}
    script = oci_cli_action()["runs"]["steps"][0]["run"]
    return subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)


@pytest.mark.parametrize("key", ["oci:privateKey", "oci:privateKeyPassword"])
def test_an_oci_key_in_the_stack_config_is_refused_before_anything_runs(tmp_path: Path, key: str) -> None:
    # The key comes from the environment's OCI_PRIVATE_KEY, in the jobs of that environment only.
    done = _run_oci_action(tmp_path, f"config:\n  oci:region: us-phoenix-1\n  {key}:\n    secure: AAAB\n")
    assert done.returncode == 1
    assert done.stdout.startswith(
        "::error::stacks/Pulumi.prod.yaml sets oci:privateKey or oci:privateKeyPassword"
    )
    assert not (tmp_path / "temp").exists() and not (tmp_path / ".oci").exists()


# --- finding 7: a pull request judged by its own copy of the pack ------------------------------------


def test_the_pull_request_preview_runs_the_base_commits_pack() -> None:
    steps = workflow("pull-request.yml")["jobs"]["preview"]["steps"]
    (base,) = [s for s in steps if s.get("with", {}).get("path") == "base"]
    assert str(base["uses"]).startswith("actions/checkout@")
    assert base["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    venv = next(i for i, s in enumerate(steps) if s.get("run") == "make -C base policies/venv/.installed")
    (pulumi,) = pulumi_steps({"steps": steps})
    assert steps.index(base) < venv < steps.index(pulumi)
    assert pulumi["with"]["policyPacks"] == "base/policies"
    # The CLI starts the pack with the virtualenv its PulumiPolicy.yaml names, which that make target builds.
    policy = load_file(ROOT / "policies/PulumiPolicy.yaml")
    assert policy["runtime"]["options"]["virtualenv"] == "venv"


def _base_pack_step() -> dict[str, Any]:
    steps: list[dict[str, Any]] = workflow("pull-request.yml")["jobs"]["offline"]["steps"]
    (step,) = [s for s in steps if s.get("name") == "The base branch's policy pack on this branch's stacks"]
    assert step["env"]["BASE"] == "${{ github.event.pull_request.base.sha }}"
    render = next(s for s in steps if str(s.get("run", "")).startswith("make render"))
    assert steps.index(render) < steps.index(step)
    return step


def _git(repo: Path, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


@pytest.mark.parametrize("base_pack_passes", [True, False])
def test_a_pull_request_that_drops_a_rule_meets_the_base_pack_offline(
    tmp_path: Path, base_pack_passes: bool
) -> None:
    repo = tmp_path / "repo"
    (repo / "policies" / "rules").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "policies" / "rules" / "kept.py").write_text("kept\n")
    (repo / "policies" / "rules" / "dropped.py").write_text("dropped\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "policies" / "rules" / "dropped.py").unlink()
    _git(repo, "commit", "-q", "-am", "the pull request drops a rule")
    # `make` stands in for make render: it records the pack it would run.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "make").write_text(
        f'#!/bin/bash\nls policies/rules > "{tmp_path}/pack-seen"\necho "make $*"\n'
        + ("exit 0\n" if base_pack_passes else 'echo "mandatory: dropped"\nexit 1\n')
    )
    (bin_dir / "make").chmod(0o755)
    summary = tmp_path / "summary"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "BASE": base, "HOME": str(tmp_path)}
    env |= {"RUNNER_TEMP": str(tmp_path), "GITHUB_STEP_SUMMARY": str(summary), "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(
        ["bash", "-e", "-c", _base_pack_step()["run"]], cwd=repo, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "pack-seen").read_text().split() == ["dropped.py", "kept.py"]
    if base_pack_passes:
        assert "passes on every stack" in summary.read_text()
    else:
        assert (
            "finds mandatory violations" in summary.read_text()
            and "mandatory: dropped" in summary.read_text()
        )
        assert "::warning::this pull request changes policies/" in done.stdout


def test_the_offline_base_pack_step_skips_when_policies_are_the_bases(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "policies").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "policies" / "rule.py").write_text("rule\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    env = {"PATH": "/nonexistent-make-dir:" + os.environ["PATH"], "BASE": base, "HOME": str(tmp_path)}
    env |= {
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        ["bash", "-c", _base_pack_step()["run"]], cwd=repo, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and "the run above was the base branch's pack" in done.stdout


def _codeowners() -> list[tuple[str, list[str]]]:
    rules = []
    for line in (ROOT / ".github/CODEOWNERS").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            pattern, *owners = line.split()
            rules.append((pattern, owners))
    return rules


def _owners(path: str) -> list[str]:
    # GitHub's CODEOWNERS: gitignore-style patterns, the last matching line wins.
    found: list[str] = []
    for pattern, owners in _codeowners():
        anchored = pattern.lstrip("/")
        if (anchored.endswith("/") and path.startswith(anchored)) or fnmatch.fnmatchcase(path, anchored):
            found = owners
    return found


@pytest.mark.parametrize(
    "path",
    [
        "policies/oke_rdma_policies/rules/claims/gpu_rail_claims.py",
        "policies/PulumiPolicy.yaml",
        "policies/requirements.txt",
        "policies/requirements.lock",
        ".github/workflows/pull-request.yml",
        ".github/actions/oci-cli/action.yml",
        ".github/CODEOWNERS",
        "stacks/Pulumi.prod.yaml",
        "stacks/no-deploy.txt",
        "Makefile",
        "requirements.txt",
        "requirements-dev.txt",
        "requirements-preview.lock",
        "requirements-uv.lock",
        "provider/requirements.txt",
        "provider/requirements.lock",
        ".github/actions/oci-cli/requirements.lock",
    ],
)
def test_code_owners_cover_what_guards_a_deploy(path: str) -> None:
    owners = _owners(path)
    assert owners, f"{path} has no code owner"
    assert all(re.fullmatch(r"@[\w.-]+(/[\w.-]+)?|[^@\s]+@[^@\s]+\.[a-z]+", o) for o in owners), owners


def test_the_ci_page_says_branch_protection_must_require_code_owners() -> None:
    page = " ".join((ROOT / "docs/ci-credentials-and-runners.md").read_text().split())
    assert "`.github/CODEOWNERS`" in page and "must require *Review from Code Owners*" in page


# --- finding 11: the apply is the reviewed plan --------------------------------------------------------


def test_the_deploy_applies_the_plan_its_preview_saved() -> None:
    jobs = workflow("deploy.yml")["jobs"]
    plan_steps, up_steps = jobs["plan"]["steps"], jobs["up"]["steps"]
    (preview,) = pulumi_steps(jobs["plan"])
    (up,) = pulumi_steps(jobs["up"])
    assert preview["with"]["command"] == "preview" and up["with"]["command"] == "up"
    # Shown to the reviewers (the job summary) before the stack's environment lets `up` start.
    assert preview["with"]["comment-on-summary"] is True
    saved = preview["with"]["plan"]
    (upload,) = [s for s in plan_steps if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert upload["with"]["path"] == saved and upload["with"]["if-no-files-found"] == "error"
    assert plan_steps.index(preview) < plan_steps.index(upload)
    (download,) = [s for s in up_steps if str(s.get("uses", "")).startswith("actions/download-artifact@")]
    assert download["with"]["name"] == upload["with"]["name"] == "plan-${{ matrix.stack }}"
    assert up["with"]["plan"] == f"{download['with']['path']}/{Path(saved).name}"
    assert up_steps.index(download) < up_steps.index(up)
    assert "plan" in jobs["up"]["needs"] and jobs["up"]["environment"] == "${{ matrix.stack }}"
    # Same pack, same config, same stack name for both.
    for key in ("policyPacks", "policyPackConfigs", "stack-name", "cloud-url", "pulumi-version"):
        assert preview["with"][key] == up["with"][key], key


def test_the_plan_job_holds_no_write_identity() -> None:
    plan = workflow("deploy.yml")["jobs"]["plan"]
    assert plan["environment"] == "deploy-preview" and plan["permissions"] == {
        "contents": "read",
        "id-token": "write",
    }
    page = (ROOT / "docs/ci.md").read_text()
    assert "`deploy-preview`" in page and "`up --plan`" in page
