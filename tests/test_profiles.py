"""The kube-up and local profiles (seeds 000 and 004), the registry, and what the kube-aws
runbook and `explain` say (the checks of every profile and golden: tests/profile_harness.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from paddlegen.compiler.build import build
from paddlegen.profiles import PROFILES

from conftest import GOLDEN, run_cli, sh_blocks
from profile_harness import built


def objects(profile: str) -> list[dict[str, Any]]:
    yaml = YAML(typ="safe", pure=True)
    return [yaml.load(p) for p in sorted((GOLDEN / profile / "out" / "k8s").glob("*.yaml"))]


def test_the_registry_names_each_profile_and_imports_only_the_one_used() -> None:
    assert [PROFILES[name].name for name in PROFILES] == list(PROFILES)
    code = ("import sys; from paddlegen.compiler.build import build; "
            f"build(open({str(GOLDEN / 'local' / 'spec.yaml')!r}, 'rb').read(), 'spec.yaml'); "
            "print(sorted(m for m in sys.modules if m.startswith('paddlegen.profiles.')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout == "['paddlegen.profiles.local']\n"


def test_local_is_one_paddle_train_with_the_seed_flags_and_no_aws() -> None:
    [job] = [obj for obj in objects("local") if obj["kind"] == "Job"]
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 1
    pod = job["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["command"] == ["paddle", "train"]
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in container["args"])
    assert flags == {
        "config": "trainer_config.lr.py",
        "save_dir": "/root/paddle/demo/quick_start/output",
        "trainer_count": "4",
        "log_period": "20",
        "num_passes": "15",
        "use_gpu": "false",
        "show_parameter_stats_period": "100",
        "test_all_data_in_one_period": "true",  # the seed's =1, as gflags reads it
    }
    assert container["workingDir"] == "/root/paddle/demo/quick_start"
    [volume] = pod["volumes"]
    assert volume["hostPath"]["path"] == "/home/work/paddle_output"
    assert container["volumeMounts"] == [{"name": volume["name"],
                                          "mountPath": flags["save_dir"]}]
    assert pod["restartPolicy"] == "Never"
    assert not (GOLDEN / "local" / "out" / "aws").exists()


def test_kube_up_env_sets_a_region_not_a_zone() -> None:
    env = dict(re.findall(r"^export (\w+)=(.*)$",
                          (GOLDEN / "kube-up" / "out" / "aws" / "kube-up.env").read_text(), re.M))
    assert env == {
        "KUBERNETES_PROVIDER": "aws",
        "KUBE_AWS_ZONE": "us-west-2a",
        "NUM_NODES": "3",
        "MASTER_SIZE": "m3.medium",
        "NODE_SIZE": "m3.large",
        "AWS_S3_REGION": "us-west-2",
        "AWS_S3_BUCKET": "mycompany-kubernetes-artifacts",
        "KUBE_AWS_INSTANCE_PREFIX": "k8s",
    }


def test_kube_up_trainers_mount_the_hosts_efs_directory() -> None:
    # Kubernetes 1.5: kube-up's ABAC policy lets every service account read the pods
    [job] = objects("kube-up")
    assert job["kind"] == "Job"
    pod = job["spec"]["template"]["spec"]
    [volume] = pod["volumes"]
    assert volume["hostPath"] == {"path": "/home/admin/efs"}  # no type before 1.8
    [container] = pod["containers"]
    assert container["volumeMounts"] == [{"name": volume["name"], "mountPath": "/home/jobpath"}]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["JOB_PATH"] == "/home/jobpath"
    assert env["TRAIN_CONFIG_DIR"] == "recommendation"
    assert [p["hostPort"] for p in container["ports"]] == [7164, 7165, 7166, 7167]
    assert job["spec"]["parallelism"] == 3
    assert "serviceAccountName" not in pod and "backoffLimit" not in job["spec"]


def test_kube_up_runbook_attaches_nine_policies_without_kms() -> None:
    runbook = (GOLDEN / "kube-up" / "out" / "RUNBOOK.md").read_text()
    attach = runbook[:runbook.index("attach-group-policy")].rsplit("for arn in", 1)[1]
    arns = re.findall(r"arn:aws:iam::aws:policy/[\w/-]+", attach)
    assert len(arns) == 9
    assert not any("KeyManagement" in arn for arn in arns)
    assert "kube-up.sh" in runbook and "kube-down.sh" in runbook


def test_runbook_quotes_values_for_the_shell(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text((GOLDEN / "kube-aws" / "spec.yaml").read_text()
                    .replace("keyName: paddle-keypair", "keyName: k $(touch pwned) x"))
    from paddlegen.compiler.build import build

    [runbook] = [a.text for a in build(spec.read_bytes(), "spec.yaml").artifacts
                 if a.path == "RUNBOOK.md"]
    assert "--key-name='k $(touch pwned) x'" in runbook
    for block in sh_blocks(runbook):
        assert subprocess.run(["bash", "-n"], input=block, text=True,
                              check=False).returncode == 0


def test_kube_aws_runbook_steps_are_in_the_order_that_works() -> None:
    runbook = (GOLDEN / "kube-aws" / "out" / "RUNBOOK.md").read_text()
    steps = ["attach-group-policy", "add-user-to-group", "create-key-pair", "create-key ",
             "cloudformation deploy --stack-name paddle-cluster-efs",
             "describe-stacks --stack-name paddle-cluster-efs", "paddlegen build --check",
             "put-group-policy", "kube-aws init", "render credentials --generate-ca",
             "render stack", "kube-aws up --s3-uri s3://paddle-kube-aws-assets/paddle-cluster",
             "--parameter-overrides VpcId=\"$VPC_ID\"", 'create -f "$OUT/k8s/20-persistentvolume',
             "@.status==", 'create -f "$OUT/k8s/90-job-paddle-cluster-job.yaml"',
             "train.log", "server.log", "tar czf -", "^output/pass-",
             'delete --ignore-not-found -f "$OUT/k8s/"',
             "LoadBalancer", "delete-stack --stack-name paddle-cluster-efs", "kube-aws destroy",
             "wait stack-delete-complete --stack-name paddle-cluster\n",
             'aws s3 rm s3://paddle-kube-aws-assets/"$key"', "schedule-key-deletion",
             "delete-key-pair", "delete-group-policy", "detach-group-policy", "delete-group "]
    positions = [runbook.index(step) for step in steps]
    assert positions == sorted(positions)
    assert "$ASSETS/" in runbook and 'cd "$ASSETS"' in runbook  # secrets stay out of the tree
    init = runbook[runbook.index("kube-aws init"):runbook.index('cp "$OUT/aws/cluster.yaml"')]
    assert sorted(re.findall(r"--([\w-]+)=", init)) == sorted(
        ["cluster-name", "external-dns-name", "region", "availability-zone", "key-name",
         "kms-key-arn"])


def test_explain_lists_the_pserver_ports_and_trainer_ids(kube_aws_spec: Path) -> None:
    result = run_cli("explain", kube_aws_spec, "--format", "json")
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["ports"] == [7164, 7165, 7166, 7167]
    assert (facts["densePorts"], facts["sparsePorts"]) == ([7164, 7165], [7166, 7167])
    assert [p["trainerId"] for p in facts["processes"]] == [0, 1, 2]
    assert facts["splitCount"] == 3
    first = facts["processes"][0]
    assert first["pserver"]["argv"][:2] == ["paddle", "pserver"]
    assert "--num_gradient_servers=3" in first["pserver"]["argv"]
    assert "--trainer_id=0" in first["trainer"]["argv"]
    assert "--pservers=$PSERVERS" in first["trainer"]["argv"]
    assert facts["pservers"] == "<IP of trainer 0>,<IP of trainer 1>,<IP of trainer 2>"
    assert "--save_dir=/home/jobpath/paddle-cluster-job/output" in first["trainer"]["argv"]
    assert first["trainer"]["log"] == "/home/jobpath/paddle-cluster-job/output/node_0/train.log"
    assert first["pserver"]["log"].endswith("/output/node_0/server.log")

    text = run_cli("explain", kube_aws_spec).stdout
    assert "7164-7167" in text
    assert [int(n) for n in re.findall(r"^trainer (\d+)$", text, re.M)] == [0, 1, 2]
    assert "paddle train" in text and "paddle pserver" in text


def test_explain_grows_linearly_with_the_nodes(tmp_path: Path) -> None:
    golden = (GOLDEN / "kube-aws-v0.9.9" / "spec.yaml").read_text()

    def explained(nodes: int) -> str:
        spec = tmp_path / f"{nodes}.yaml"
        spec.write_text(golden.replace("  nodes: 3\n", f"  nodes: {nodes}\n")
                        .replace("  workerCount: 3\n", f"  workerCount: {nodes}\n"))
        result = run_cli("explain", spec)
        assert result.returncode == 0, result.stderr
        return result.stdout

    small, large = explained(100), explained(1000)
    assert large.count("\ntrainer ") == 1000
    assert len(large) < 11 * len(small)  # the pserver list is printed once, not per trainer
    assert large.count("<IP of trainer 999>") == 1


def test_explain_local_shows_the_single_trainer() -> None:
    facts = json.loads(run_cli("explain", GOLDEN / "local" / "spec.yaml", "--format",
                               "json").stdout)
    [process] = facts["processes"]
    assert process["trainer"]["argv"][:3] == ["paddle", "train", "--config=trainer_config.lr.py"]


def test_kube_up_needs_no_bucket() -> None:
    spec = (GOLDEN / "kube-up" / "spec.yaml").read_text()
    without = spec.replace("  s3Uri: s3://mycompany-kubernetes-artifacts\n", "")
    assert without != spec
    [env] = [a.text for a in build(without.encode(), "spec.yaml").artifacts
             if a.path == "aws/kube-up.env"]
    # kube-up.sh then stages in kubernetes-staging-<hash> of its own
    assert "AWS_S3_BUCKET" not in env and "export KUBE_AWS_ZONE=us-west-2a\n" in env


@pytest.mark.parametrize(("golden", "target"), [
    ("kube-aws", "kube-aws v0.9.1, Kubernetes 1.4.6"),
    ("kube-aws-v0.9.9", "kube-aws v0.9.9, Kubernetes 1.8.4"),
    ("kube-up", "cluster/kube-up.sh of Kubernetes v1.5.8, Kubernetes 1.5.8"),
])
def test_the_seed_goldens_target_the_seeds_releases(golden: str, target: str) -> None:
    # what the runbook and `explain` say of every golden's target: tests/profile_harness.py
    assert built(golden).plan.meta.target.describe().startswith(target)
