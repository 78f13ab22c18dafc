"""A stand-in for aws, kubectl, kube-aws, kube-up.sh, eksctl, ssh, dig, curl and docker, for
running the runbooks' blocks in tests: it logs its argv and prints what the real tool prints for
the calls the runbooks make (a tab-padded `kube-aws status` included); any other call fails
loudly.

Installed as one script under each tool's name (install_stubs of tests/profile_harness.py).
Values that must agree with the spec come from the environment: STUB_KMS_ARN, STUB_EFS_DNS,
STUB_KUBE_AWS, STUB_FILE_SYSTEM (the eks stack's file system) and STUB_FILE_SYSTEM_OWNER (its
owner tag). So does how a run ends: STUB_JOB_STATE (the conditions of its Job, PaddleJob, JobSet
or TrainJob; done by default), STUB_FAILED_WHY (its Failed condition's reason and message),
STUB_RESTARTS (a JobSet's status.restarts), STUB_WORKLOAD_ACTIVE (its Kueue Workload's
spec.active: true, or false once Kueue gave up on it) and STUB_PODS (the names `get pods`
finds; empty: none yet).
"""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
from pathlib import Path

ELB = "paddle-cl-ElbAPISe-EEOI3EZPR86C-531251350.us-west-2.elb.amazonaws.com"


def log(tool: str, argv: list[str]) -> None:
    with open(os.environ["STUB_LOG"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps([tool, *argv]) + "\n")
    if tool in ("aws", "eksctl"):  # and the AWS CLI profile each AWS call runs under
        with open(os.environ["STUB_LOG"] + ".profiles", "a", encoding="utf-8") as handle:
            handle.write(json.dumps([os.environ.get("AWS_PROFILE", ""), tool, *argv]) + "\n")


def tar_gz(members: dict[str, bytes], executable: bool = False) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755 if executable else 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def wrapper(tool: str) -> bytes:
    """What a download installs: a tool that is this stub under the tool's name."""
    return f'#!/bin/sh\nexec "{Path(sys.argv[0]).parent / tool}" "$@"\n'.encode()


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) \
        else None


def fail(message: str, code: int = 99) -> int:
    print(f"stub: {message}", file=sys.stderr)
    return code


def aws(argv: list[str]) -> int:
    words = [w for i, w in enumerate(argv) if not w.startswith("-")
             and (i == 0 or not argv[i - 1].startswith("--"))]
    service, operation = [*words, "", ""][:2]
    query = option(argv, "--query") or ""
    absent = {("iam", "get-group"), ("ec2", "describe-key-pairs"), ("s3api", "head-bucket")}
    if (service, operation) in absent or (service, operation, query) == ("kms", "describe-key",
                                                                         ""):
        return fail("An error occurred (NotFound)", 254)
    answers = {
        ("ec2", "create-key-pair"): "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n"
                                    "-----END RSA PRIVATE KEY-----",
        ("kms", "create-key"): "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
        ("ec2", "describe-vpcs"): "vpc-0a1b2c3d",
        ("ec2", "describe-subnets"): "subnet-0a1b2c3d",
        ("ec2", "describe-security-groups"): "sg-0a1b2c3d",
        ("ec2", "describe-instances"): "54.1.2.3\t54.1.2.4",
        ("elb", "describe-load-balancers"): "",
        ("s3", "ls"): "",
        ("efs", "describe-mount-targets"): "",  # every one available
        ("ecr", "get-login-password"): "eyJwYXlsb2FkIjoi",
        ("ecr", "describe-repositories"): "{}",
        ("cloudformation", "deploy"): "Waiting for changeset to be created..\n"
                                      "Successfully created/updated stack",
    }
    quiet = {"iam": {"create-group", "attach-group-policy", "add-user-to-group",
                     "put-group-policy", "delete-group-policy", "remove-user-from-group",
                     "detach-group-policy", "delete-group"},
             "kms": {"create-alias", "schedule-key-deletion", "delete-alias"},
             "ec2": {"delete-key-pair"}, "s3": {"mb", "rm", "rb"},
             "cloudformation": {"delete-stack", "wait"}, "efs": {"delete-file-system"},
             "logs": {"delete-log-group"}}
    if (service, operation) == ("kms", "describe-key"):
        arn = os.environ["STUB_KMS_ARN"]
        print(arn if "Arn" in query else arn.rsplit("/", 1)[1])
    elif (service, operation) == ("cloudformation", "describe-stacks"):
        dns = os.environ["STUB_EFS_DNS"]
        print(os.environ["STUB_FILE_SYSTEM"] if "FileSystemId" in query and
              os.environ.get("STUB_FILE_SYSTEM") else dns if "DnsName" in query
              else dns.split(".")[0])
    elif (service, operation) == ("efs", "describe-file-systems"):
        print(os.environ.get("STUB_FILE_SYSTEM_OWNER", ""))
    elif (service, operation) in answers:
        print(answers[service, operation])
    elif operation not in quiet.get(service, set()):
        return fail(f"no answer for aws {' '.join(argv)}")
    return 0


# The kinds of a run's top-level object: the conditions (status True) of one that is done, and
# the reason and message of its Failed condition (Kubernetes' Job controller, the training
# operator v1.9.4, JobSet v0.12.0; Trainer v2.3.0 copies JobSet's).
RUNS = {"job": ("Complete", "BackoffLimitExceeded: Job has reached the specified backoff limit"),
        "paddlejob": ("Created Succeeded",
                      "PaddleJobFailed: PaddleJob linear is failed because 1 Worker replica(s) "
                      "failed."),
        "jobset": ("Completed", "ReachedMaxRestarts: jobset failed due to reaching max number "
                                "of restarts"),
        "trainjob": ("Complete", "ReachedMaxRestarts: jobset failed due to reaching max number "
                                 "of restarts")}


def kubectl(argv: list[str]) -> int:
    words = [w for w in argv if not w.startswith("--namespace")]
    verb = words[0] if words else ""
    output = option(words, "-o") or ""
    if verb == "create":
        source = option(words, "-f")
        if source == "-":
            sys.stdin.read()
        elif source is None or not Path(source).is_file():
            return fail(f"kubectl create: no file {source}", 1)
        print("created")
    elif verb == "get" and words[1] in RUNS and 'type=="Failed"' in output:
        print(os.environ.get("STUB_FAILED_WHY", RUNS[words[1]][1]), end="")
    elif verb == "get" and words[1] in RUNS and "conditions" in output:
        print(os.environ.get("STUB_JOB_STATE", RUNS[words[1]][0]), end="")
    elif verb == "get" and words[1] in RUNS and output.endswith("{.metadata.uid}"):
        print("0c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f", end="")
    elif verb == "get" and words[1] == "jobset" and output.endswith("{.status.restarts}"):
        print(os.environ.get("STUB_RESTARTS", ""), end="")  # none before its first status
    elif verb == "get" and words[1] == "job":
        print("1" if "succeeded" in output else "", end="")
    elif verb == "get" and words[1] == "workloads.kueue.x-k8s.io":
        print(os.environ.get("STUB_WORKLOAD_ACTIVE", "true"), end="")
    elif verb == "get" and words[1] == "localqueues.kueue.x-k8s.io":
        print(f"NAME     CLUSTERQUEUE   PENDING WORKLOADS   ADMITTED WORKLOADS\n{words[2]}   "
              "trainers       0                   0")
    elif verb == "get" and words[1] == "pod" and "phase" in output:
        # the image's CUDA check on a node runs to its end; other pods run
        print("Succeeded" if words[2].endswith("-cuda-check") else "Running", end="")
    elif verb == "get" and words[1] == "pods":
        if output == "name":
            pass  # gone
        elif "metadata.name" in output:
            print(os.environ.get("STUB_PODS", "paddle-cluster-job-a1b2c paddle-cluster-job-d3e4f"),
                  end="")
        else:
            print("NAME                       READY     STATUS    RESTARTS   AGE")
    elif verb == "get" and words[1] in ("svc", "nodes"):
        pass
    elif verb == "get" and words[1] in ("storageclass", "pvc"):  # what the cluster already has
        print(f"NAME    AGE\n{words[2] if len(words) > 2 else 'shared'}    90d")
    elif verb == "version":
        print("Client Version: v1.37.0\nServer Version: v1.37.0")
    elif verb == "exec" and "tar" in words:
        sys.stdout.buffer.write(tar_gz({"output/pass-00000/done": b"",
                                        "output/node_0/train.log": b"I1116 pass 0\n"}))
    elif verb in ("logs", "delete", "describe", "wait", "apply", "rollout"):
        print(f"{verb} done")
    else:
        return fail(f"no answer for kubectl {' '.join(argv)}")
    return 0


def kube_aws(argv: list[str]) -> int:
    if argv[0] != "init" and not Path("cluster.yaml").is_file():
        return fail("cluster.yaml: no such file (run kube-aws in the assets directory)", 1)
    if argv[0] == "status":
        if os.environ.get("STUB_KUBE_AWS") == "v0.9.9":
            print("WARN: the worker node pool \"workers\" is associated to a k8s API endpoint")
            print(f"Cluster Name:\t\tpaddle-cluster\nController DNS Names:\t{ELB}, other.elb")
        else:
            print(f"Cluster Name:\t\tpaddle-cluster\nController DNS Name:\t{ELB}")
    elif argv[0] == "init":
        Path("cluster.yaml").write_text("clusterName: from-init\n")
    return 0


def curl(argv: list[str]) -> int:
    url = next(w for w in argv if w.startswith("https://"))
    target = option(argv, "-o") or option(argv, "-fLo")
    if url.endswith("/kubectl") and target:
        Path(target).write_bytes(wrapper("kubectl"))
    elif url.startswith("https://dl.k8s.io/release/stable-") and url.endswith(".txt"):
        print(f"v{url.rsplit('stable-', 1)[1].removesuffix('.txt')}.2")
    elif url.endswith("/eksctl_Linux_amd64.tar.gz"):
        sys.stdout.buffer.write(tar_gz({"eksctl": wrapper("eksctl")}, True))
    elif url.endswith("kube-aws-linux-amd64.tar.gz"):
        sys.stdout.buffer.write(tar_gz({"linux-amd64/kube-aws": wrapper("kube-aws")}, True))
    elif url.endswith("/kubernetes.tar.gz"):
        sys.stdout.buffer.write(tar_gz({
            "kubernetes/cluster/kube-up.sh": wrapper("kube-up.sh"),
            "kubernetes/cluster/kube-down.sh": wrapper("kube-down.sh"),
            "kubernetes/platforms/linux/amd64/kubectl": wrapper("kubectl")}, True))
    else:
        return fail(f"no download {url}")
    return 0


def eksctl(argv: list[str]) -> int:
    config = option(argv, "-f")
    if config is None or not Path(config).is_file():
        return fail(f"eksctl: no config file {config}", 1)
    if argv[:2] not in (["create", "cluster"], ["delete", "cluster"]):
        return fail(f"no answer for eksctl {' '.join(argv)}")
    return 0


def kube_up(argv: list[str]) -> int:
    if os.environ.get("KUBERNETES_PROVIDER") != "aws":
        return fail("KUBERNETES_PROVIDER is not aws: aws/kube-up.env was not sourced", 1)
    return 0


def main() -> int:
    tool, argv = Path(sys.argv[0]).name, sys.argv[1:]
    log(tool, argv)
    if tool in ("ssh", "docker"):
        # as the real ones do: ssh forwards its input, `docker login --password-stdin` reads it
        # (else the writer of the pipe may die of SIGPIPE, as `aws ecr get-login-password` did)
        if (tool == "ssh" or "--password-stdin" in argv) and not sys.stdin.isatty():
            sys.stdin.buffer.read()
        return 0
    if tool == "dig":
        print("54.241.164.52\n54.67.102.112")
        return 0
    handlers = {"aws": aws, "kubectl": kubectl, "kube-aws": kube_aws, "curl": curl,
                "kube-up.sh": kube_up, "kube-down.sh": kube_up, "eksctl": eksctl}
    return handlers[tool](argv)


if __name__ == "__main__":
    sys.exit(main())
