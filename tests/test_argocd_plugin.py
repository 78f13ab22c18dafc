"""integrations/argocd/plugin.yaml, run as Argo CD's sidecar runs a Config Management Plugin
(argoproj/argo-cd v3.5.1): its commands exec'd as command + args, in the Application's source
directory, with the sidecar's environment, the build environment and ARGOCD_ENV_*."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from paddlegen.compiler.cli import is_spec

from conftest import GOLDEN, ROOT

PLUGIN = ROOT / "integrations" / "argocd" / "plugin.yaml"
GITOPS_DOC = ROOT / "docs" / "gitops.md"
VENV_BIN = Path(sys.executable).parent
# The fields of cmpserver/plugin/config.go's PluginConfig (v3.5.1). Argo CD unmarshals the file
# leniently: a misspelt field would be dropped without a word, so the test refuses one.
PLUGIN_FIELDS = {"apiVersion", "kind", "metadata", "spec"}
SPEC_FIELDS = {"version", "init", "generate", "discover", "parameters", "preserveFileMode",
               "provideGitCreds"}
COMMAND_FIELDS = {"command", "args"}
DISCOVER_FIELDS = {"find", "fileName"}
FIND_FIELDS = {"command", "args", "glob"}
SOURCE_PATH = "jobs/linear"  # the Application's spec.source.path
REVISION = "f913b6cbf58aa5ae5ca1f8a2b149477aebcbd9d8"


def plugin() -> dict[str, Any]:
    loaded: dict[str, Any] = YAML(typ="safe", pure=True).load(PLUGIN)
    return loaded


def argocd_environment(plugin_env: dict[str, str]) -> dict[str, str]:
    """What a plugin command's environment holds: the sidecar's own (here: this one, with the
    image's paddlegen first on PATH), the build environment (reposerver/repository/
    repository.go, newEnv and getPluginEnvs) and each `spec.source.plugin.env` entry prefixed
    with ARGOCD_ENV_ (getPluginParamEnvs)."""
    sidecar = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    build = {
        "ARGOCD_APP_NAME": "linear",
        "ARGOCD_APP_NAMESPACE": "ml-team",
        "ARGOCD_APP_PROJECT_NAME": "default",
        "ARGOCD_APP_REVISION": REVISION,
        "ARGOCD_APP_REVISION_SHORT": REVISION[:7],
        "ARGOCD_APP_REVISION_SHORT_8": REVISION[:8],
        "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/ml-team/training.git",
        "ARGOCD_APP_SOURCE_PATH": SOURCE_PATH,
        "ARGOCD_APP_SOURCE_TARGET_REVISION": "main",
        "KUBE_VERSION": "1.35.0",
        "KUBE_API_VERSIONS": "v1,apps/v1,batch/v1",
    }
    return {**sidecar, **build, **{f"ARGOCD_ENV_{k}": v for k, v in plugin_env.items()}}


def run_command(command: dict[str, list[str]], app_dir: Path,
                plugin_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """As cmpserver/plugin/plugin.go's runCommand: exec.Command(command[0], command[1:] +
    args...), no shell of Argo CD's own, in the app's directory."""
    argv = [*command["command"], *command.get("args", [])]
    return subprocess.run(argv, cwd=app_dir, env=argocd_environment(plugin_env or {}),
                          capture_output=True, timeout=120, check=False)


def application(root: Path, files: dict[str, bytes]) -> Path:
    """A repository as Argo CD hands it to the sidecar, with the Application's source path
    holding `files`; the source directory."""
    app_dir = root / SOURCE_PATH
    app_dir.mkdir(parents=True)
    (root / "README.md").write_text("training jobs\n")
    for name, data in files.items():
        (app_dir / name).write_bytes(data)
    return app_dir


def discovers(app_dir: Path, plugin_env: dict[str, str] | None = None) -> bool:
    """Whether the plugin matches: Argo CD's find command must exit 0 and print something
    (matchRepository); a non-zero exit is an error, never a quiet no."""
    found = run_command(plugin()["spec"]["discover"]["find"], app_dir, plugin_env)
    assert found.returncode == 0, found.stderr
    return found.stdout.strip() != b""


def test_the_plugin_is_a_config_management_plugin_argocd_accepts() -> None:
    config = plugin()
    # ValidatePluginConfig: a name, the kind, a generate command
    assert config["apiVersion"] == "argoproj.io/v1alpha1"
    assert config["kind"] == "ConfigManagementPlugin"
    assert config["metadata"] == {"name": "paddlegen"}
    spec = config["spec"]
    assert spec["generate"]["command"]
    assert set(config) <= PLUGIN_FIELDS and set(spec) <= SPEC_FIELDS
    assert set(spec["generate"]) <= COMMAND_FIELDS
    # one way of discovery: Argo CD evaluates only the first of fileName, find.glob,
    # find.command
    assert set(spec["discover"]) == {"find"} and set(spec["discover"]["find"]) <= FIND_FIELDS
    assert "glob" not in spec["discover"]["find"]
    # the name an Application gives it, as docs/gitops.md tells
    assert f"{config['metadata']['name']}-{spec['version']}" == "paddlegen-v1"
    assert "name: paddlegen-v1" in GITOPS_DOC.read_text(encoding="utf-8")


@pytest.mark.parametrize("golden", ["kubernetes", "eks-paddle-jobset", "kube-aws"])
def test_generate_prints_what_paddlegen_build_prints(golden: str, tmp_path: Path) -> None:
    spec = (GOLDEN / golden / "spec.yaml").read_bytes()
    app_dir = application(tmp_path / "repository", {"spec.yaml": spec})
    generated = run_command(plugin()["spec"]["generate"], app_dir)
    assert generated.returncode == 0, generated.stderr
    built = subprocess.run([VENV_BIN / "paddlegen", "build", "spec.yaml", "-o", "-"],
                           cwd=app_dir, capture_output=True, check=True)
    assert generated.stdout == built.stdout  # byte for byte
    assert generated.stderr == b""
    # Kubernetes objects only, as Argo CD wants of generate's stdout
    documents = list(YAML(typ="safe", pure=True).load_all(generated.stdout))
    assert documents and all({"apiVersion", "kind", "metadata"} <= set(d) for d in documents)


def test_the_spec_is_chosen_by_the_plugin_env_and_problems_fail_the_generation(
        tmp_path: Path) -> None:
    good = (GOLDEN / "kubernetes" / "spec.yaml").read_bytes()
    bad = (ROOT / "tests" / "bad_specs" / "port-zero.yaml").read_bytes()
    app_dir = application(tmp_path / "repository",
                          {"training.yaml": good, "-odd.yaml": good, "spec.yaml": bad})
    generate = plugin()["spec"]["generate"]
    chosen = run_command(generate, app_dir, {"SPEC": "training.yaml"})
    assert chosen.returncode == 0, chosen.stderr
    built = subprocess.run([VENV_BIN / "paddlegen", "build", "training.yaml", "-o", "-"],
                           cwd=app_dir, capture_output=True, check=True)
    assert chosen.stdout == built.stdout
    # a name that looks like an option is still a file name
    assert run_command(generate, app_dir, {"SPEC": "-odd.yaml"}).stdout == built.stdout
    # the default, spec.yaml, is broken: nothing on stdout, the problem on stderr, exit 2
    failed = run_command(generate, app_dir)
    assert (failed.returncode, failed.stdout) == (2, b"")
    assert re.match(rb"spec\.yaml:\d+:\d+: training\.port: ", failed.stderr), failed.stderr


def test_discover_matches_a_spec_directory_and_not_other_yaml(tmp_path: Path) -> None:
    spec = (GOLDEN / "kubernetes" / "spec.yaml").read_bytes()
    assert discovers(application(tmp_path / "spec", {"spec.yaml": spec}))
    assert discovers(application(tmp_path / "named", {"train.yml": spec}), {"SPEC": "train.yml"})
    other = b"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
    assert not discovers(application(tmp_path / "other", {"spec.yaml": other,
                                                          "deployment.yaml": other}))
    assert not discovers(application(tmp_path / "elsewhere", {"train.yml": spec}))
    assert not discovers(application(tmp_path / "empty", {}))


# Files the plugin's discovery and paddlegen's own test (compiler/cli.py, is_spec) agree on.
SPEC_HEAD = "apiVersion: paddlegen/v1\nkind: TrainingJob\nmetadata:\n  name: linear\n"
AGREED: list[tuple[str, bytes]] = [
    ("plain", SPEC_HEAD.encode()),
    ("quoted", b"'apiVersion': \"paddlegen/v1\"\n\"kind\": 'TrainingJob'\n"),
    ("comments", b"# a spec\napiVersion: paddlegen/v1  # the version\nkind: TrainingJob # k\n"),
    ("crlf", SPEC_HEAD.replace("\n", "\r\n").encode()),
    ("byte order mark", b"\xef\xbb\xbf" + SPEC_HEAD.encode()),
    ("other version", SPEC_HEAD.replace("v1", "v2").encode()),
    ("another kind", SPEC_HEAD.replace("TrainingJob", "TrainingJobs").encode()),
    ("another api", SPEC_HEAD.replace("paddlegen/", "paddle/").encode()),
    ("nested", b"data:\n  apiVersion: paddlegen/v1\n  kind: TrainingJob\n"),
    ("in a block scalar", b"apiVersion: v1\nkind: ConfigMap\ndata:\n  spec.yaml: |\n"
                          b"    apiVersion: paddlegen/v1\n    kind: TrainingJob\n"),
    ("in comments", b"# apiVersion: paddlegen/v1\n# kind: TrainingJob\nkind: Other\n"),
    ("no space after the colon", b"apiVersion:paddlegen/v1\nkind:TrainingJob\n"),
    ("kind with more", b"apiVersion: paddlegen/v1\nkind: TrainingJob#1\n"),
]
# Where the shell's test is narrower: a flow mapping at the root (paddlegen init never writes one)
NARROWER = [("flow mapping", b"{apiVersion: paddlegen/v1, kind: TrainingJob}\n")]


@pytest.mark.parametrize(("case", "raw"), AGREED, ids=[case for case, _ in AGREED])
def test_discover_agrees_with_paddlegens_own_test(case: str, raw: bytes, tmp_path: Path) -> None:
    assert discovers(application(tmp_path, {"spec.yaml": raw})) == is_spec(raw)


@pytest.mark.parametrize(("case", "raw"), NARROWER, ids=[case for case, _ in NARROWER])
def test_discover_misses_what_the_doc_says_it_misses(case: str, raw: bytes,
                                                     tmp_path: Path) -> None:
    assert is_spec(raw) and not discovers(application(tmp_path, {"spec.yaml": raw}))
    assert "flow mapping" in PLUGIN.read_text() and "flow mapping" in GITOPS_DOC.read_text()


def test_the_install_guide_mounts_the_plugin_where_argocd_reads_it() -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", GITOPS_DOC.read_text(encoding="utf-8"), re.S)
    loaded = [list(YAML(typ="safe", pure=True).load_all(textwrap.dedent(block)))
              for block in blocks]  # the blocks of a list item are indented
    [patch] = [docs[0] for docs in loaded if "template" in docs[0].get("spec", {})]
    [sidecar] = patch["spec"]["template"]["spec"]["containers"]
    assert sidecar["command"] == ["/var/run/argocd/argocd-cmp-server"]
    assert sidecar["securityContext"]["runAsUser"] == 999
    [config] = [m for m in sidecar["volumeMounts"]
                if m["mountPath"] == "/home/argocd/cmp-server/config/plugin.yaml"]
    assert config["subPath"] == "plugin.yaml"
    [volume] = [v for v in patch["spec"]["template"]["spec"]["volumes"]
                if v["name"] == config["name"]]
    create = re.search(r"create configmap (\S+) \\\n\s+--from-file=plugin\.yaml=(\S+)",
                       GITOPS_DOC.read_text(encoding="utf-8"))
    assert create and volume["configMap"]["name"] == create[1]
    assert (ROOT / create[2]).samefile(PLUGIN)
    assert shutil.which("sh") and shutil.which("grep")  # all discovery needs
