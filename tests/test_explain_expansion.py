"""`explain` shows what each pod's process gets: its argv equals the kubelet's expansion of the
pod's command (tests/podsim.py plays the kubelet, from the objects as YAML, with the service
links of the `kubernetes` Service every pod sees), for args full of `$`, and that argv ends with
the spec's args as written (paddlegen doubles their `$`: compiler/kube_expansion.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import podsim
import pytest

from paddlegen.compiler import kube_expansion
from paddlegen.compiler.build import checked

from conftest import GOLDEN, run_cli

# Each a `$` pattern the kubelet treats in its own way (expand.go), and one with an escape
# sequence and one with text beyond ASCII.
ARGS = ["--price=$$5", "--tmpl=$$(POD_NAME)", "$(POD_NAME)", "$(KUBERNETES_SERVICE_HOST)",
        "$(UNDEFINED)", "$", "$$$", "a$b", "$((1+1))", "$(", "$$$$(POD_NAME)", "é$é$(é)",
        "--resume-from=s3://attacker/evil.pdparams\x1b[43D\x1b[K"]
# What the kubelet adds to every container, enableServiceLinks or not: the `kubernetes`
# Service's variables (pkg/kubelet/kubelet_pods.go, getServiceEnvVarMap).
SERVICE_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
               "KUBERNETES_SERVICE_PORT_HTTPS": "443", "KUBERNETES_PORT": "tcp://10.96.0.1:443"}
COLLECTIVE = ["kubernetes", "kubernetes-trainjob", "eks-paddle", "eks-paddle-efa",
              "eks-paddle-jobset", "eks-paddle-kubeflow"]
INDEX_KEYS = ("batch.kubernetes.io/job-completion-index", "training.kubeflow.org/replica-index")


def with_args(spec: str, args: list[str]) -> str:
    """A golden's spec with `args` (as a JSON flow sequence, which YAML reads as it is)."""
    line = f"  args: {json.dumps(args)}\n"
    if re.search(r"^  args: .*\n", spec, re.M):
        return re.sub(r"^  args: .*\n", lambda _: line, spec, count=1, flags=re.M)
    return re.sub(r"^(  script: .*\n)", lambda m: m[1] + line, spec, count=1, flags=re.M)


def launched(argv: list[str]) -> list[str]:
    """The argv the container's command execs: the launcher's, after the wait for the master's
    name (`sh -c SCRIPT wait-for-master HOST ARGV...`, whose script ends `shift; exec "$@"`)."""
    if argv[:2] == ["sh", "-c"]:
        assert argv[3] == "wait-for-master" and argv[2].rstrip().endswith('exec "$@"')
        return argv[5:]
    return argv


def pod_index(pod: podsim.Pod) -> int:
    return int(next(pod.labels[key] for key in INDEX_KEYS if key in pod.labels))


def kubelet_argvs(spec: str) -> dict[int, tuple[str, list[str]]]:
    """Each trainer pod's name and the argv its launcher gets, as the kubelet and the shell
    make it from the built objects (as YAML, as the API server gets them)."""
    from ruamel.yaml import YAML

    stream = checked(spec.encode(), "spec.yaml", None, False).stream()
    objects = [doc for doc in YAML(typ="safe", pure=True).load_all(stream) if doc]
    cluster = podsim.simulate_controllers(objects)
    found = {}
    for pod in cluster.pods:
        [container] = pod.spec["containers"]
        env = podsim.container_env(container, pod, cluster.config_maps, SERVICE_ENV)
        found[pod_index(pod)] = (pod.name, launched(podsim.container_argv(container, env)))
    return found


@pytest.mark.parametrize("golden", COLLECTIVE)
def test_explain_argv_is_the_kubelets_expansion_and_the_args_as_written(golden: str,
                                                                        tmp_path: Path) -> None:
    spec = with_args((GOLDEN / golden / "spec.yaml").read_text(), ARGS)
    (tmp_path / "spec.yaml").write_text(spec)
    result = run_cli("explain", "--format", "json", tmp_path / "spec.yaml")
    assert result.returncode == 0, result.stderr
    processes: list[dict[str, Any]] = json.loads(result.stdout)["processes"]
    pods = kubelet_argvs(spec)
    assert sorted(pods) == [process["trainerId"] for process in processes]
    for process in processes:
        name, argv = pods[process["trainerId"]]
        # explain cannot know the suffix the Job controller draws: it names the pod by its
        # placeholder, wherever the pod's name is (its log directory)
        argv = [word.replace(name, process["env"]["POD_NAME"]) for word in argv]
        assert process["trainer"]["argv"] == argv
        assert argv[-len(ARGS):] == ARGS


def test_the_pods_command_holds_the_args_with_every_dollar_doubled() -> None:
    spec = with_args((GOLDEN / "kubernetes" / "spec.yaml").read_text(), ["$(A)$$b$"])
    objects = [m.obj for m in checked(spec.encode(), "spec.yaml", None, False).manifests]
    [job] = [obj for obj in objects if obj["kind"] == "Job"]
    [container] = job["spec"]["template"]["spec"]["containers"]
    assert container["command"][-1] == "$$(A)$$$$b$$"
    # paddlegen's own reference stays one for the kubelet to expand
    assert "/mnt/shared/linear/logs/$(POD_NAME)" in container["command"]


# k8s.io/kubernetes third_party/forked/golang/expansion/expand_test.go, doExpansionTest (at
# commit 490ffa432a878f5a75e5b5906d820d06e672556e): input, and its expansion against CONTEXT.
CONTEXT = {"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}
UPSTREAM = [
    ("$(VAR_A)", "A"), ("$(VAR_A)-$(VAR_A)", "A-A"), ("$(VAR_A)-1", "A-1"),
    ("___$(VAR_B)___", "___B___"), ("___$(VAR_C)", "___C"), ("$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"),
    ("$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"), ("$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"),
    ("f000-$$VAR_A", "f000-$VAR_A"), ("foo\\$(VAR_C)bar", "foo\\Cbar"),
    ("foo\\\\$(VAR_C)bar", "foo\\\\Cbar"), ("foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar"),
    ("$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"), ("$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"),
    ("$(VAR_REF)", "$(VAR_A)"), ("%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%"),
    ("foo$(VAR_EMPTY)bar", "foobar"), ("foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"),
    ("f00__(VAR_A)__", "f00__(VAR_A)__"), ("$?_boo_$!", "$?_boo_$!"), ("$VAR_A", "$VAR_A"),
    ("$(VAR_DNE)", "$(VAR_DNE)"), ("$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"),
    ("$$$$$$(VAR_A)", "$$$(VAR_A)"), ("$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"),
    ("$$$$$$$(VAR_A)", "$$$A"), ("$VAR_A)", "$VAR_A)"), ("${VAR_A}", "${VAR_A}"),
    ("$(VAR_B)_______$(A", "B_______$(A"), ("$(VAR_C)_______$(", "C_______$("),
    ("$(VAR_A)foobarzab$", "Afoobarzab$"), ("foo-\\$(VAR_A", "foo-\\$(VAR_A"),
    ("--$($($($($--", "--$($($($($--"), ("$($($($($--foo$(", "$($($($($--foo$("),
    ("foo0--$($($($(", "foo0--$($($($("), ("$(foo$$var)", "$(foo$$var)"), ("\n", "\n"),
    # kubernetes/kubernetes#136325 (1.34 and later): a rune after `$` is kept whole
    ("$é$(VAR_A)", "$éA"),
]


@pytest.mark.parametrize(("text", "expanded"), UPSTREAM)
def test_both_expansions_follow_the_kubelets_tests(text: str, expanded: str) -> None:
    assert kube_expansion.expanded(text, CONTEXT) == expanded
    assert podsim.expand(text, CONTEXT) == expanded


@pytest.mark.parametrize("text", [*ARGS, "$$", "$(VAR_A)$", "x$$(VAR_REF)$(", ""])
def test_a_literal_comes_back_as_written_whatever_the_environment(text: str) -> None:
    assert kube_expansion.expanded(kube_expansion.literal(text), CONTEXT, SERVICE_ENV) == text
    assert podsim.expand(kube_expansion.literal(text), CONTEXT, SERVICE_ENV) == text
