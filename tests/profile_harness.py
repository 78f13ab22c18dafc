"""The checks every profile passes, and where the tests find the profiles and their goldens.

As pre-commit tests each language with tests/languages/*_test.py on testing/language_helpers.py,
each check here takes a profile name or a golden spec, and tests/test_profiles_harness.py applies
them to every profile of the registry (paddlegen.profiles.PROFILES) and every golden
(golden/<name>/spec.yaml, its profile read from the spec). A new profile is tested by registering
it and adding its golden; a test of what only one profile does lives in its own module
(tests/test_eks.py, tests/test_kubernetes.py, ...).

Tests that loop over profiles or goldens take them from here, and an expected value that differs
per golden is derived from the golden's own facts (its spec, its build's plan target), not kept
in a list that each new profile must extend.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import stat
import subprocess
import sys
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from paddlegen.compiler.build import Build, build
from paddlegen.compiler.problems import FieldPath, dotted
from paddlegen.profiles import MODULES, PROFILES

from conftest import GOLDEN, GOLDEN_SPECS, run_cli, sh_blocks

_YAML = YAML(typ="safe", pure=True)
# The starter's first line: editors that read it validate the spec against `paddlegen schema`.
MODELINE = "# yaml-language-server: $schema=paddlegen.schema.json\n"
# A value the user must put in: `<what to put here>` (compiler/spec.py's placeholder rule).
PLACEHOLDER = re.compile(r"<[^<>\n]+>")


# --- discovery ------------------------------------------------------------------------------

def profile_names() -> list[str]:
    """Every registered profile, in the registry's order."""
    return list(PROFILES)


def golden_names() -> list[str]:
    """Every golden example: the directories of golden/ that hold a spec.yaml."""
    return [spec.parent.name for spec in GOLDEN_SPECS]


def spec_of(golden: str) -> Path:
    return GOLDEN / golden / "spec.yaml"


@cache
def spec_values(golden: str) -> dict[str, Any]:
    """The golden's spec as plain data (what the user wrote, before the profile's defaults)."""
    values: dict[str, Any] = _YAML.load(spec_of(golden))
    return values


def profile_of(golden: str) -> str:
    """The profile a golden's spec names."""
    profile: str = spec_values(golden)["profile"]
    return profile


def goldens_of(profile: str) -> list[str]:
    """The goldens of one profile, by name."""
    return [golden for golden in golden_names() if profile_of(golden) == profile]


@cache
def built(golden: str) -> Build:
    """The golden's build, once per test process (a Build is not changed by its readers)."""
    return build(spec_of(golden).read_bytes(), "spec.yaml")


def module_path(profile: str) -> Path:
    """The source file of a profile's module (found, not imported)."""
    found = find_spec(f"paddlegen.profiles.{MODULES[profile]}")
    assert found is not None and found.origin is not None, profile
    return Path(found.origin)


@cache
def uses_aws(profile: str) -> bool:
    """Whether the profile's module imports the AWS package (paddlegen.profiles.aws): its trees
    then have an aws/ directory and its runbooks an AWS bill."""
    tree = ast.parse(module_path(profile).read_text())
    aws = "paddlegen.profiles.aws"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module == aws or node.module.startswith(aws + "."):
                return True
            if node.module == "paddlegen.profiles" and any(a.name == "aws" for a in node.names):
                return True
        if isinstance(node, ast.Import) and any(
                a.name == aws or a.name.startswith(aws + ".") for a in node.names):
            return True
    return False


def workload_pods(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates of a workload object (a Job's, each replica of a PaddleJob's, each
    replicated Job's of a JobSet or of a TrainingRuntime's JobSet; a TrainJob's pods are its
    runtime's)."""
    if obj["kind"] == "Job":
        return [obj["spec"]["template"]]
    if obj["kind"] == "PaddleJob":
        return [replica["template"] for replica in obj["spec"]["paddleReplicaSpecs"].values()]
    if obj["kind"] in ("JobSet", "TrainingRuntime"):
        spec = obj["spec"]["template"]["spec"] if obj["kind"] == "TrainingRuntime" else obj["spec"]
        return [job["template"]["spec"]["template"] for job in spec["replicatedJobs"]]
    return []


def golden_objects(golden: str) -> list[dict[str, Any]]:
    return [m.obj for m in built(golden).manifests]


def golden_pods(golden: str) -> list[dict[str, Any]]:
    """The pod templates of the golden's workloads (Jobs, PaddleJobs' replicas)."""
    return [pod for obj in golden_objects(golden) for pod in workload_pods(obj)]


def containers_of(pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    """A pod's init containers and containers."""
    return [*pod_spec.get("initContainers", []), *pod_spec["containers"]]


def image_version(image: str) -> str:
    """What app.kubernetes.io/version says of an image: its tag, or its digest's first 12."""
    if "@sha256:" in image:
        return image.rsplit("@sha256:", 1)[1][:12]
    name = image.rsplit("/", 1)[-1]
    return name.rsplit(":", 1)[1] if ":" in name else "latest"


# --- the checks of a profile ----------------------------------------------------------------

def check_registered(profile: str) -> None:
    """The registry's name is the profile's own, and its module and defaults are files of the
    profiles package."""
    assert PROFILES[profile].name == profile
    assert profile in PROFILES and profile in MODULES
    directory = module_path(profile).parent
    assert (directory / PROFILES[profile].defaults_file).is_file(), profile


def check_has_golden(profile: str) -> None:
    assert goldens_of(profile), f"profile {profile} has no golden/<name>/spec.yaml"


def _placeholders(node: object, path: FieldPath = ()) -> set[str]:
    """The paths (as problems name them) of every value still written as a placeholder."""
    if isinstance(node, dict):
        return {found for key, value in node.items()
                for found in _placeholders(value, (*path, key))}
    if isinstance(node, list):
        return {found for index, value in enumerate(node)
                for found in _placeholders(value, (*path, index))}
    return {dotted(path)} if isinstance(node, str) and PLACEHOLDER.fullmatch(node) else set()


def _values(node: object, path: FieldPath = ()) -> dict[str, object]:
    """Every value of the document by the path problems name it with."""
    found: dict[str, object] = {dotted(path): node}
    if isinstance(node, dict):
        for key, value in node.items():
            found.update(_values(value, (*path, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.update(_values(value, (*path, index)))
    return found


def _problems(spec: Path, *options: str) -> list[dict[str, Any]]:
    result = run_cli("validate", "--format", "json", *options, spec)
    assert result.returncode in (0, 2), result.stderr
    problems: list[dict[str, Any]] = json.loads(result.stdout)
    return problems


def check_starter(profile: str, tmp_path: Path) -> None:
    """`paddlegen init --profile X` prints YAML that names the profile, and the spec it is fails
    only on its placeholders: every error is a `placeholder` at a `<...>` value, one each, and
    every warning is about a value the starter leaves for later (absent or empty: the values the
    runbook makes, such as kube-aws's `pending` ones), which `validate --strict` refuses too."""
    result = run_cli("init", "--profile", profile)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(MODELINE)
    data = _YAML.load(result.stdout)
    assert isinstance(data, dict) and data["profile"] == profile
    spec = tmp_path / "spec.yaml"
    spec.write_text(result.stdout)

    problems = _problems(spec)
    errors = sorted((p["path"], p["rule"]) for p in problems if p["severity"] == "error")
    assert errors == sorted((path, "placeholder") for path in _placeholders(data))
    values = _values(data)
    later = [p for p in problems if p["severity"] == "warning"]
    assert all(values.get(p["path"]) in (None, {}) for p in later), later
    assert len(problems) == len(errors) + len(later)

    strict = _problems(spec, "--strict")
    assert sorted((p["path"], p["rule"]) for p in strict) == sorted(
        (p["path"], p["rule"]) for p in problems)
    assert all(p["severity"] == "error" for p in strict)
    if not problems:  # nothing only the user knows: it builds as it is
        assert run_cli("build", spec, "-o", tmp_path / "out").returncode == 0


# `paddlegen rules`: | `rule` | severity | profiles | what it catches |
RULE_ROW = re.compile(r"^\| `([\w.-]+)` \| (error|warning) \| ([^|]+) \|", re.M)


@cache
def listed_rules() -> dict[str, list[tuple[str, set[str]]]]:
    """What `paddlegen rules` lists: by rule, each row's severity and profiles."""
    result = run_cli("rules")
    assert result.returncode == 0, result.stderr
    rows: dict[str, list[tuple[str, set[str]]]] = {}
    for name, severity, profiles in RULE_ROW.findall(result.stdout):
        rows.setdefault(name, []).append(
            (severity, {word.strip() for word in profiles.split(",")}))
    return rows


def check_rules_listed(profile: str) -> None:
    """Every rule of the profile has a row of `paddlegen rules` with its severity that names the
    profile (or every profile)."""
    rows = listed_rules()
    for rule in PROFILES[profile].rules:
        assert any(severity == rule.severity and ({profile, "every"} & profiles)
                   for severity, profiles in rows.get(rule.name, [])), (profile, rule.name)


# --- the checks of a golden -----------------------------------------------------------------

def produced(golden: str) -> dict[str, bytes]:
    """What the golden's spec compiles to, by path."""
    return {a.path: a.text.encode() for a in built(golden).artifacts}


def check_check_is_clean(golden: str) -> None:
    """`paddlegen check` finds the committed tree up to date with its spec."""
    result = run_cli("check", spec_of(golden))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def check_runbook(golden: str) -> None:
    """RUNBOOK.md is there, names the job, the profile and the target the build planned, holds
    shell blocks that bash parses, names only files of its tree, and makes every object of k8s/
    in apply order."""
    out = spec_of(golden).parent / "out"
    runbook = (out / "RUNBOOK.md").read_text()
    assert runbook.strip()
    meta = built(golden).plan.meta
    assert runbook.startswith(f"# Runbook: {meta.name} ({profile_of(golden)})\n")
    assert f"\nTarget: {meta.target.describe()}.\n" in runbook
    blocks = sh_blocks(runbook)
    assert blocks, "no ```sh block"
    for block in blocks:
        checked = subprocess.run(["bash", "-n"], input=block, text=True, capture_output=True,
                                 check=False)
        assert checked.returncode == 0, f"{checked.stderr}\n{block}"
    named = set(re.findall(r"(?<![\w/])(?:\$OUT/)?((?:aws|k8s)/[\w./-]+\.(?:yaml|json|env))",
                           runbook))
    assert named, "the runbook names no file"
    assert {path for path in named if not (out / path).is_file()} == set()
    manifests = sorted(p.relative_to(out).as_posix() for p in (out / "k8s").glob("*.yaml"))
    # each made once (a phase's runbook applies them again in each phase that needs them), in
    # apply order (not the files' order)
    made = list(dict.fromkeys(re.findall(r'kubectl (?:create|apply) -f "\$OUT/(k8s/[^"]+)"',
                                         runbook)))
    assert sorted(made) == manifests
    assert made == [m.path for m in built(golden).manifests]


def check_explain(golden: str) -> None:
    """`paddlegen explain` describes the job as the build planned it, as text and as JSON."""
    spec = spec_of(golden)
    meta = built(golden).plan.meta
    target = meta.target
    text = run_cli("explain", spec)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"{meta.name}  (profile {profile_of(golden)}, ")
    assert f"\n  target              {target.describe()}\n" in text.stdout
    as_json = run_cli("explain", spec, "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    facts = json.loads(as_json.stdout)
    assert (facts["name"], facts["profile"]) == (meta.name, profile_of(golden))
    assert facts["target"] == {"tool": target.tool, "kubernetes": target.kube.version,
                               "schema": target.kube.schema, "description": target.describe()}


# --- the runbook, run against stand-ins for its tools ---------------------------------------

STUB = Path(__file__).resolve().parent / "runbook_stub.py"
TOOLS = ("aws", "kubectl", "kube-aws", "kube-up.sh", "kube-down.sh", "eksctl", "ssh", "dig",
         "curl", "docker")
# What only an administrator does: the IAM group of the user that runs the cluster tool.
ADMINISTRATOR_CALLS = {"get-group", "create-group", "attach-group-policy", "add-user-to-group",
                       "remove-user-from-group", "detach-group-policy", "delete-group"}


def install_stubs(directory: Path, tools: tuple[str, ...] = TOOLS) -> Path:
    """The stand-in (tests/runbook_stub.py) under each tool's name in `directory`: a launcher
    that imports a copy of it, compiled once (a script is compiled on every call), run with -S
    (the stand-in imports site-packages only where it reads YAML)."""
    directory.mkdir(parents=True)
    shutil.copy(STUB, directory / STUB.name)
    script = directory / "stub.py"
    script.write_text(f"#!{sys.executable} -S\nimport sys\nsys.path.insert(0, {str(directory)!r})"
                      f"\nimport {STUB.stem}\nsys.exit({STUB.stem}.main())\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    for tool in tools:
        (directory / tool).symlink_to(script)
    (directory / "paddlegen").symlink_to(Path(sys.executable).parent / "paddlegen")
    return directory


# Sourced by every non-interactive bash (BASH_ENV): a pause advances bash's own clock, which the
# runbooks' waits read ($SECONDS), as far as a real one would, at once; TEST_CLOCK_RATE times as
# far, for a bound of days, which would take minutes of polls at the real rate.
FAST_SLEEP = 'sleep() { SECONDS=$((SECONDS + ${1%.*} * ${TEST_CLOCK_RATE:-1})); }\n'


def fresh_tree(golden: str, directory: Path) -> Path:
    """The golden's spec built afresh into directory/out (the committed tree may lag behind the
    templates), beside a copy of the spec; the tree's path."""
    directory.mkdir(parents=True, exist_ok=True)
    spec = directory / "spec.yaml"
    shutil.copy(spec_of(golden), spec)
    return rebuilt(spec)


def rebuilt(spec: Path) -> Path:
    """The tree of `spec` built into its out/, as the runbooks' rebuild step does."""
    result = run_cli("build", spec, "-o", spec.parent / "out")
    assert result.returncode == 0, result.stdout + result.stderr
    return spec.parent / "out"


def put_file_system(spec: Path, file_system: str) -> None:
    """Put the file system the runbook printed into the spec (storage.efs.fileSystemId), as its
    storage phase asks, keeping the rest of the spec as written."""
    yaml = YAML()  # round trip: the comments stay
    values = yaml.load(spec)
    values["storage"]["efs"]["fileSystemId"] = file_system
    yaml.dump(values, spec)


def seed_state(values: dict[str, Any]) -> dict[str, Any]:
    """What exists before a spec's runbook runs (`values`: the spec as written): for eks, the AWS
    CLI profiles the person has (dev, admin) and the file system the spec names, and no
    cluster; for kubernetes, the cluster's namespace, StorageClass or claim, nodes and
    LocalQueue; nothing is checked for the older profiles."""
    from runbook_stub import initial_state

    storage, training = values.get("storage", {}), values.get("training", {})
    if values["profile"] == "eks":
        given = storage.get("efs", {}).get("fileSystemId")
        return initial_state(api=False, profiles=["dev", "admin"],
                             file_systems=[given] if given else [])
    if values["profile"] == "kubernetes":
        namespace = values["metadata"].get("namespace", "default")
        claim = storage.get("existingClaim")
        return initial_state(
            api=True, namespaces=[namespace], nodes=training.get("nodes", 1),
            storage_classes=[storage["storageClassName"]] if "storageClassName" in storage
            else [], claims=[(namespace, claim)] if claim else [],
            local_queues=[(namespace, training["queue"])] if training.get("queue") else [])
    return initial_state()


def stand_in_env(values: dict[str, Any], tmp_path: Path, spec: Path,
                 **stub_env: str) -> dict[str, str]:
    """The environment of the runbook's shells: the stand-ins first on PATH, a home of their
    own, the stand-ins' log and state (seeded with seed_state), the fast pause, and what the
    runbook asks the person for (SOURCE_PROFILE, ADMIN_PROFILE, IAM_USER, CODE_DIR, SPEC)."""
    stubs = install_stubs(tmp_path / "stubs")
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "code").mkdir()
    data = tmp_path / "data"
    (data / "0" / "data").mkdir(parents=True)
    state = tmp_path / "state.json"
    state.write_text(json.dumps(seed_state(values)))
    bash_env = tmp_path / "bash_env.sh"
    bash_env.write_text(FAST_SLEEP)
    cluster = values.get("cluster", {})
    efs = values.get("storage", {}).get("efs", {})
    return {"HOME": str(home), "PATH": f"{stubs}:/usr/bin:/bin", "LC_ALL": "C.UTF-8",
            "BASH_ENV": str(bash_env), "STUB_LOG": str(tmp_path / "log"),
            "STUB_STATE": str(state), "SOURCE_PROFILE": "dev", "ADMIN_PROFILE": "admin",
            "IAM_USER": "alice", "CODE_DIR": str(tmp_path / "code"), "SPEC": str(spec),
            "DATA_DIR": str(data), "STUB_KMS_ARN": cluster.get("kmsKeyArn", ""),
            "STUB_EFS_DNS": efs.get("dnsName", ""),
            "STUB_KUBE_AWS": cluster.get("kubeAwsVersion", "v0.9.1"), **stub_env}


def read_log(path: Path) -> list[list[str]]:
    """The stand-ins' log: each call's tool and argv."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# What a storage phase prints when the file system is not the spec's (profiles/eks.md.j2).
PRINTED_FILE_SYSTEM = re.compile(r"^storage\.efs\.fileSystemId: (fs-[0-9a-f]+)$", re.M)


def run_blocks(golden: str, tmp_path: Path, **stub_env: str) -> list[list[str]]:
    """Run every block of the golden's RUNBOOK.md in order, each in a new
    `bash -euo pipefail` (as a person pastes it), with the stand-ins on PATH; their log.

    The tree is built afresh from the golden's spec. The stand-ins start from what exists
    before (seed_state) and answer with the spec's own values (KMS key, file system, kube-aws
    release)."""
    out = fresh_tree(golden, tmp_path / "tree")
    log = run_tree_blocks(out, spec_values(golden), tmp_path, **stub_env)
    cluster = spec_values(golden).get("cluster", {})
    assert_aws_profiles(tmp_path / "log.profiles", cluster.get("name"))
    return log


def run_tree_blocks(out: Path, values: dict[str, Any], tmp_path: Path,
                    **stub_env: str) -> list[list[str]]:
    """Every block of the tree's RUNBOOK.md in order (`values`: its spec as written, beside it
    as out/../spec.yaml), as run_blocks runs a golden's; the stand-ins' log. Where a block
    prints the file system the runbook's stack made, it goes into the spec, the tree is rebuilt,
    and the rebuilt runbook goes on from that block, as the runbook says to."""
    spec = out.parent / "spec.yaml"
    env = stand_in_env(values, tmp_path, spec, **stub_env)
    number, rebuilds = 0, 0
    while number < len(blocks := sh_blocks((out / "RUNBOOK.md").read_text())):
        block = blocks[number]
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=out, env=env,
                                capture_output=True, text=True, timeout=60, check=False)
        printed = PRINTED_FILE_SYSTEM.search(result.stderr)
        if result.returncode != 0 and printed and not rebuilds:
            rebuilds += 1
            put_file_system(spec, printed[1])
            rebuilt(spec)
            continue
        assert result.returncode == 0, f"block {number + 1} failed:\n{block}\n{result.stderr}"
        assert "unbound variable" not in result.stderr
        number += 1
    return read_log(tmp_path / "log")


def assert_aws_profiles(profiles: Path, cluster: str | None) -> None:
    """The IAM group's set-up and removal run under ADMIN_PROFILE, and so does every other IAM
    call unless the user's group has IAMFullAccess; every other AWS call runs under the profile
    of the user the runbook sets up, in whatever block it is."""
    calls = [json.loads(line) for line in profiles.read_text().splitlines()] \
        if profiles.exists() else []
    user_has_iam = any("arn:aws:iam::aws:policy/IAMFullAccess" in call for call in calls)
    for profile, tool, *argv in calls:
        iam = tool == "aws" and argv[0] == "iam"
        administrator = iam and (argv[1] in ADMINISTRATOR_CALLS or not user_has_iam)
        assert profile == ("admin" if administrator else f"paddlegen-{cluster}"), (tool, argv)


def check_runbook_runs(golden: str, log: list[list[str]]) -> None:
    """Every block ran (run_blocks), it asked the cluster, and only a profile of the AWS package
    called AWS."""
    tools = {call[0] for call in log}
    assert "kubectl" in tools, tools
    if not uses_aws(profile_of(golden)):
        assert not tools & {"aws", "eksctl", "kube-aws", "kube-up.sh", "ssh"}, tools
