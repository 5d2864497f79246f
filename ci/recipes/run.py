"""Runs the commands of the CI recipes (github/*.yml, gitlab/*.gitlab-ci.yml) as written, on a fresh
clone of this repository, the way those CI systems would run them on a Debian machine:

- GitHub Actions: each job's `run:` steps in order (bash, `set -eo pipefail`, `working-directory`,
  `env:`), `$GITHUB_PATH` and `$GITHUB_ENV` honoured between steps. `actions/checkout` with
  `repository: incus-operations/incus-operations` clones this repository (committed HEAD) into its
  `path`; without `repository` it is the user's repository, which is example-project/. Other `uses:`
  steps (toolchains, caches, uploads) are what the CI machine already provides, and are skipped.
- GitLab CI: each job's `before_script` and `script` in one bash session (`set -eo pipefail`), with the
  job's `variables` ($CI_PROJECT_DIR expanded); `image`, `tags`, `rules`, `cache` and `artifacts` are
  the CI system's business.

As a CI system's project-level settings would, the runner sets a few variables over the recipes':
INCUS_OPERATIONS_REPO (this repository, for `git clone`), CARGO_TARGET_DIR (the CI's own target
directory: a warm cache) and, for the operator recipes, INCUS_SOCKET: the real Incus of
--operator-socket. Without one the operator recipes are reported skipped, never passed: they are an
operator's acceptance run of a real Incus, and a pass against a fake would prove less than it says. Fresh clones get the modification times their files have in this checkout (where that
cache was built) from a post-checkout hook (core.hooksPath, as `git restore-mtime` does for cached CI
builds), so that cargo reuses the CI's build instead of compiling the workspace again for each clone.

Usage: run.py --repo DIR --target-dir DIR --incus-conformance PATH [--operator-socket PATH] [--only NAME]...
Prints one line per job and ends with "N passed, N failed, N skipped"; logs in target/recipes/.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
THIS_REPOSITORY = "incus-operations/incus-operations"
HOOK = """#!/usr/bin/env python3
# post-checkout: every file and directory of the new clone gets the modification time it has in the
# warm checkout ($RECIPES_MTIME_SOURCE, where the cached target directory was built), so that cargo
# finds the clone's sources as old as that build's (as `git restore-mtime` does for cached CI builds).
import os, subprocess, sys
source = os.environ.get("RECIPES_MTIME_SOURCE")
if not source:
    sys.exit(0)
files = subprocess.run(["git", "ls-files", "-z"], capture_output=True, check=True).stdout.decode().split("\\0")
dirs = {"."}
for name in filter(None, files):
    parent = os.path.dirname(name)
    while parent and parent not in dirs:
        dirs.add(parent)
        parent = os.path.dirname(parent)
    try:
        st = os.lstat(os.path.join(source, name))
        os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    except OSError:
        pass
for name in sorted(dirs, key=len, reverse=True):
    try:
        st = os.stat(os.path.join(source, name))
        os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns))
    except OSError:
        pass
"""

def sh(script: str, cwd: Path, env: dict, log, timeout: float) -> int:
    log.write(f"\n$ {script.strip()}\n")
    log.flush()
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )
    return done.returncode


def github_job(name: str, job: dict, work: Path, base_env: dict, overrides: dict, repo_url: str, log) -> int:
    runner_temp = work / "_runner_temp"
    runner_temp.mkdir()
    path_file, env_file = runner_temp / "github_path", runner_temp / "github_env"
    path_file.touch()
    env_file.touch()
    env = {**base_env, **{k: str(v) for k, v in (job.get("env") or {}).items()}, **overrides}
    env.update(GITHUB_WORKSPACE=str(work), RUNNER_TEMP=str(runner_temp), GITHUB_PATH=str(path_file),
               GITHUB_ENV=str(env_file), CI="true", GITHUB_ACTIONS="true")
    for step in job.get("steps", []):
        uses = step.get("uses", "")
        if uses.startswith("actions/checkout@"):
            options = step.get("with") or {}
            if options.get("repository") == THIS_REPOSITORY:
                target = work / options.get("path", ".")
                log.write(f"\n# {uses}: clone of this repository into {target.name}\n")
                code = sh(f'git clone -q "{repo_url}" "{target}"', work, env, log, 600)
                if code:
                    return code
            else:
                log.write(f"\n# {uses}: the user's repository (example-project/)\n")
            continue
        if uses:
            log.write(f"\n# {uses}: provided by the CI machine, skipped\n")
            continue
        step_env = {**env, **{k: str(v) for k, v in (step.get("env") or {}).items()}, **overrides}
        cwd = work / step.get("working-directory", ".")
        code = sh(step["run"], cwd, step_env, log, 3600)
        if code:
            log.write(f"# step {step.get('name', step['run'][:60])!r} failed with status {code}\n")
            return code
        extra = [line for line in path_file.read_text().splitlines() if line.strip()]
        env["PATH"] = os.pathsep.join(list(reversed(extra)) + [base_env["PATH"]])
        for line in env_file.read_text().splitlines():
            if "=" in line:
                key, value = line.split("=", 1)
                env[key] = value
    return 0


def gitlab_job(name: str, job: dict, work: Path, base_env: dict, overrides: dict, log) -> int:
    env = {**base_env, "CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": str(work)}
    for key, value in (job.get("variables") or {}).items():
        env[key] = os.path.expandvars(str(value).replace("$CI_PROJECT_DIR", str(work)))
    env.update(overrides)
    lines = list(job.get("before_script") or []) + list(job.get("script") or [])
    return sh("\n".join(lines), work, env, log, 3600)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--target-dir", required=True)
    parser.add_argument("--operator-socket", help="a real Incus's Unix socket for the operator recipes "
                        "(without it they are skipped)")
    parser.add_argument("--incus-conformance", required=True, help="writes the producer's operations.json")
    parser.add_argument("--logs", default="target/recipes")
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()

    repo = Path(args.repo).resolve()
    logs = Path(args.logs).resolve()
    logs.mkdir(parents=True, exist_ok=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo,
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        print(f"recipes: the clone is of HEAD; these changes are not in it:\n{dirty}", file=sys.stderr)

    recipes = sorted(HERE.glob("github/*.yml")) + sorted(HERE.glob("gitlab/*.gitlab-ci.yml"))
    if args.only:
        recipes = [r for r in recipes if any(o in str(r) for o in args.only)]
    passed = failed = skipped = 0
    with tempfile.TemporaryDirectory(prefix="recipes-") as scratch:
        scratch_path = Path(scratch)
        hooks = scratch_path / "hooks"
        hooks.mkdir()
        (hooks / "post-checkout").write_text(HOOK)
        (hooks / "post-checkout").chmod(0o755)
        base_env = dict(os.environ)
        base_env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="core.hooksPath", GIT_CONFIG_VALUE_0=str(hooks),
                        RECIPES_MTIME_SOURCE=str(repo))
        repo_url = f"file://{repo}"
        for recipe in recipes:
            platform = recipe.parent.name
            document = yaml.safe_load(recipe.read_text())
            jobs = document.get("jobs", {}) if platform == "github" else {
                k: v for k, v in document.items() if isinstance(v, dict) and ("script" in v)
            }
            for name, job in jobs.items():
                label = f"{platform}/{recipe.name}:{name}"
                work = scratch_path / f"{platform}-{recipe.stem}-{name}"
                shutil.copytree(HERE / "example-project", work)
                overrides = {"INCUS_OPERATIONS_REPO": repo_url, "CARGO_TARGET_DIR": args.target_dir}
                if "operator" in recipe.name:
                    if not args.operator_socket:
                        skipped += 1
                        print(f"skip   {label}: no real Incus to run an operator's acceptance run against "
                              "(--operator-socket; ci/real-incus.sh gives its daemon's)")
                        continue
                    overrides["INCUS_SOCKET"] = args.operator_socket
                if "producer" in recipe.name:
                    with open(work / "operations.json", "w") as out:
                        subprocess.run([args.incus_conformance, "tama", "export"], stdout=out, check=True)
                log_path = logs / f"{platform}-{recipe.stem}-{name}.log"
                started = time.monotonic()
                with open(log_path, "w") as log:
                    try:
                        if platform == "github":
                            code = github_job(name, job, work, base_env, overrides, repo_url, log)
                        else:
                            code = gitlab_job(name, job, work, base_env, overrides, log)
                    except subprocess.TimeoutExpired:
                        code = 124
                seconds = time.monotonic() - started
                if code == 0:
                    passed += 1
                    print(f"ok     {label} ({seconds:.0f} s)")
                else:
                    failed += 1
                    print(f"FAILED {label} (status {code}, {seconds:.0f} s); last lines of {log_path}:")
                    print("".join(log_path.read_text().splitlines(keepends=True)[-30:]))
    print(f"recipes: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
