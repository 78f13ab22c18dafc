"""PaddlePaddle 3, collective (data-parallel): `python -m paddle.distributed.launch` in every pod,
wired so that the launchers find each other. Plan, object builders and explanation.

What decides whether a run works, read in paddle/distributed/launch/ of paddlepaddle 3.3.1:
- The launcher's own address is POD_IP (context/args_envs.py maps it to --host; with a dot in it,
  plugins.rewrite_host_ip makes it the node's address). Its HTTP rendezvous starts only on the
  pod whose own address equals the host part of the master (controllers/master.py HTTPMaster),
  and every other pod waits for it with no time limit. So every Indexed Job pod names itself by
  its stable DNS name, <job>-<index>.<job>, and the master is index 0's: index 0 sees itself.
- An explicit rank (PADDLE_RANK) on every pod orders the nodes (master.py sync_peers): trainer i
  is the pod of index i.
- Environment variables override the flags. The training operator (v1.9.4, envvar.go) appends
  PADDLE_MASTER, PADDLE_NNODES and PADDLE_JOB_ID to a PaddleJob's containers, so the kubeflow
  launcher passes none of them and leaves them to it.
- Only the master port is fixed. The launcher takes its other ports in 35100-64000, and gloo and
  NCCL connect on ephemeral ports both ways: the job's pods must reach each other on every port.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from paddlegen.compiler.explain import shell_words
from paddlegen.compiler.kube_objects import (
    Object,
    headless_service,
    job,
    metadata,
    pod_disruption_budget,
    pod_template,
    reader_pod,
    trainer_selector,
    worker_paddle_job,
)
from paddlegen.compiler.plan import COMPLETION_INDEX, REPLICA_INDEX, Meta
from paddlegen.compiler.profile import Explanation

CollectiveLauncher = Literal["indexed", "kubeflow"]

LAUNCH = ("python", "-m", "paddle.distributed.launch")
MASTER_PORT_NAME = "master"  # the training operator reads the port by this name
CONTAINER = "paddle"  # the training operator takes only a container named so
GPU_RESOURCE = "nvidia.com/gpu"
SHARED_VOLUME, SHARED_MOUNT = "shared", "/mnt/shared"
TMP_VOLUME, TMP_MOUNT = "tmp", "/tmp"  # Python and the launcher need it, root read-only or not
SHM_VOLUME, SHM_MOUNT = "dshm", "/dev/shm"  # NCCL and data loaders outgrow the runtime's 64 MB
LOCAL_LOG_ROOT = "/tmp/paddle-logs"
# Variables the pod template declares so that later entries, the command and the args can use
# them ($(VAR) expands only what is declared before it; the Job controller appends its own
# JOB_COMPLETION_INDEX after the template's).
INDEX_VARIABLE = "JOB_COMPLETION_INDEX"
POD_NAME_VARIABLE = "POD_NAME"


@dataclass(frozen=True)
class CollectiveTraining:
    """The training run: `nodes` pods, each a launcher with one trainer process per GPU (one on
    CPU, over gloo)."""

    name: str  # the Job's or PaddleJob's, also its job id and the Service's
    image: str
    script: str  # absolute, inside the image
    args: tuple[str, ...]
    nodes: int
    gpus_per_node: int
    launcher: CollectiveLauncher
    master_port: int
    claim_name: str | None  # the shared volume, mounted at SHARED_MOUNT in every pod
    deadline_seconds: int
    resources: dict[str, dict[str, str]]
    ttl_seconds: int | None = None
    # What the platform adds for a fabric (an RDMA adapter): device limits and the environment the
    # collective library needs for them.
    device_limits: tuple[tuple[str, str], ...] = ()
    device_env: tuple[tuple[str, str], ...] = ()

    @property
    def processes_per_node(self) -> int:
        return max(1, self.gpus_per_node)

    @property
    def log_dir(self) -> str:
        """Where each pod's launcher writes its logs: its own directory on the shared volume."""
        root = f"{SHARED_MOUNT}/{self.name}/logs" if self.claim_name else LOCAL_LOG_ROOT
        return f"{root}/$({POD_NAME_VARIABLE})"

    def pod_name(self, index: int) -> str:
        """Pod i's stable DNS name: an Indexed Job pod's hostname in the Service's subdomain, or
        the training operator's worker Service."""
        if self.launcher == "indexed":
            return f"{self.name}-{index}.{self.name}"
        return f"{self.name}-worker-{index}"

    @property
    def master(self) -> str:
        return f"{self.pod_name(0)}:{self.master_port}"


def launch_argv(training: CollectiveTraining) -> list[str]:
    """What every pod runs, $(VAR)s expanded by the kubelet."""
    wiring = ([] if training.launcher == "kubeflow" else
              ["--master", training.master, "--nnodes", str(training.nodes),
               "--job_id", training.name])
    return [*LAUNCH, *wiring, "--nproc_per_node", str(training.processes_per_node),
            "--log_dir", training.log_dir, training.script, *training.args]


def field_env(name: str, path: str) -> Object:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def launch_env(training: CollectiveTraining) -> list[Object]:
    """The pod's own identity, for the launcher: its address and its rank."""
    named = [field_env(POD_NAME_VARIABLE, "metadata.name")]
    if training.launcher == "indexed":
        index = f"$({INDEX_VARIABLE})"
        return [field_env(INDEX_VARIABLE, COMPLETION_INDEX), *named,
                {"name": "POD_IP", "value": f"{training.name}-{index}.{training.name}"},
                {"name": "PADDLE_RANK", "value": index}]
    return [*named, field_env("POD_IP", "status.podIP"), field_env("PADDLE_RANK", REPLICA_INDEX)]


def explained_env(training: CollectiveTraining, index: int) -> dict[str, str]:
    """Pod i's launcher environment as the kubelet and, for kubeflow, the operator make it."""
    pod = (f"{training.name}-{index}-<suffix>" if training.launcher == "indexed"
           else training.pod_name(index))
    env = {POD_NAME_VARIABLE: pod}
    if training.launcher == "indexed":
        env |= {INDEX_VARIABLE: str(index), "POD_IP": training.pod_name(index),
                "PADDLE_RANK": str(index)}
    else:
        ip = "<the pod's IP>"
        env |= {"POD_IP": ip, "PADDLE_RANK": str(index), "PYTHONUNBUFFERED": "1",
                "PADDLE_JOB_ID": training.name, "PADDLE_NNODES": str(training.nodes),
                "PADDLE_MASTER": (f"{ip}:{training.master_port}" if index == 0
                                  else training.master)}
    return env


def container(training: CollectiveTraining) -> Object:
    resources = {kind: dict(values) for kind, values in training.resources.items()}
    limits = ((GPU_RESOURCE, str(training.gpus_per_node)),) if training.gpus_per_node else ()
    for name, value in (*limits, *training.device_limits):
        resources.setdefault("limits", {})[name] = value
    mounts = [{"name": TMP_VOLUME, "mountPath": TMP_MOUNT}]
    if training.gpus_per_node:
        mounts.append({"name": SHM_VOLUME, "mountPath": SHM_MOUNT})
    if training.claim_name:
        mounts.append({"name": SHARED_VOLUME, "mountPath": SHARED_MOUNT})
    return {"name": CONTAINER, "image": training.image, "command": launch_argv(training),
            "env": [*launch_env(training),
                    *({"name": name, "value": value} for name, value in training.device_env)],
            "ports": [{"name": MASTER_PORT_NAME, "containerPort": training.master_port}],
            "resources": resources, "volumeMounts": mounts}


def volumes(training: CollectiveTraining) -> list[Object]:
    found: list[Object] = [{"name": TMP_VOLUME, "emptyDir": {}}]
    if training.gpus_per_node:
        found.append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}})
    if training.claim_name:
        found.append({"name": SHARED_VOLUME,
                      "persistentVolumeClaim": {"claimName": training.claim_name}})
    return found


def pod(training: CollectiveTraining) -> Object:
    """The pod of every launcher; no API access (the launchers rendezvous among themselves)."""
    spec: Object = {"automountServiceAccountToken": False}
    if training.launcher == "indexed":
        spec["subdomain"] = training.name  # <job>-<index>.<job>: the stable names
    return {**spec, "containers": [container(training)], "volumes": volumes(training)}


def indexed_job(meta: Meta, training: CollectiveTraining) -> Object:
    """completions = parallelism = nodes, fail-fast: collective training cannot take a
    replacement for a lost rank mid-run, so the first failed pod fails the Job."""
    return job(meta, training.name, "trainer", pod(training), parallelism=training.nodes,
               deadline_seconds=training.deadline_seconds, backoff_limit=0,
               ttl_seconds=training.ttl_seconds, completion_mode="Indexed")


def paddle_job(meta: Meta, training: CollectiveTraining) -> Object:
    """Kubeflow's PaddleJob, Worker replicas only (the operator's collective mode): worker 0 is
    the master."""
    return worker_paddle_job(meta, training.name, training.nodes,
                             pod_template(meta, "trainer", pod(training)),
                             training.deadline_seconds, training.ttl_seconds)


def network_policy(meta: Meta) -> Object:
    """Traffic to the job's pods only from its own pods, on every TCP port: the launcher's
    ports after the master's are random, and gloo and NCCL connect on ephemeral ones."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": metadata(meta, meta.name), "spec": {
                "podSelector": {"matchLabels": {"app.kubernetes.io/instance": meta.name}},
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": {"matchLabels": trainer_selector(meta)}}],
                             "ports": [{"protocol": "TCP"}]}]}}


def objects(meta: Meta, training: CollectiveTraining) -> list[Object]:
    """The training's objects in apply order (after the shared volume's)."""
    budget = pod_disruption_budget(meta, training.name, training.nodes)
    if training.launcher == "kubeflow":
        return [network_policy(meta), *budget, paddle_job(meta, training)]
    service = headless_service(meta, training.name, [(MASTER_PORT_NAME, training.master_port)])
    return [service, network_policy(meta), *budget, indexed_job(meta, training)]


def output_pod(meta: Meta, training: CollectiveTraining) -> Object:
    """A pod that mounts the shared volume read-only, for the runbook to copy the run's
    directory (its logs and what the script saved there) off it."""
    return reader_pod(meta, f"{training.name}-output", "output", {
        "name": SHARED_VOLUME,
        "persistentVolumeClaim": {"claimName": training.claim_name, "readOnly": True}})


def first_pod_selector(training: CollectiveTraining) -> dict[str, str]:
    """Labels of pod 0, whose launcher prints trainer 0's log."""
    if training.launcher == "indexed":
        return {"job-name": training.name, "batch.kubernetes.io/job-completion-index": "0"}
    return {"training.kubeflow.org/job-name": training.name,
            "training.kubeflow.org/replica-index": "0"}


def expanded(word: str, env: dict[str, str]) -> str:
    """A word with the kubelet's $(VAR) references to env replaced."""
    for name, value in env.items():
        word = word.replace(f"$({name})", value)
    return word


def explanation(meta: Meta, profile: str, training: CollectiveTraining,
                common: dict[str, Any]) -> Explanation:
    """Each pod's exact command and launcher environment."""
    argv = launch_argv(training)
    processes = []
    for index in range(training.nodes):
        env = explained_env(training, index)
        processes.append({"trainerId": index, "pod": training.pod_name(index), "env": env,
                          "trainer": {"argv": [expanded(word, env) for word in argv],
                                      "log": "stdout"}})
    facts = {**common, "framework": "paddle", "launcher": training.launcher,
             "stableNames": [training.pod_name(i) for i in range(training.nodes)],
             "master": training.master, "processesPerNode": training.processes_per_node,
             "gpusPerNode": training.gpus_per_node,
             "worldSize": training.nodes * training.processes_per_node,
             "logDir": training.log_dir, "deadlineSeconds": training.deadline_seconds,
             "processes": processes}
    gpus = "1 GPU" if training.gpus_per_node == 1 else f"{training.gpus_per_node} GPUs"
    device = (f"{gpus}, one trainer process each, over NCCL"
              if training.gpus_per_node else "CPU, one trainer process, over gloo")
    rows = (("framework", "PaddlePaddle 3, collective (paddle.distributed.launch)"),
            ("launcher", training.launcher), ("master", training.master),
            ("each pod", device),
            ("world size", str(training.nodes * training.processes_per_node)),
            ("logs", training.log_dir),
            ("command", shell_words(argv)),
            ("deadline", f"{training.deadline_seconds} s, then the run fails"))
    notes: tuple[str, ...] = ("$(VAR) in the command and the environment is expanded by the "
                              "kubelet from the variables declared before it",)
    if training.launcher == "kubeflow":
        notes += ("the training operator appends PYTHONUNBUFFERED, PADDLE_JOB_ID, "
                  "PADDLE_NNODES, POD_IP_DUMMY and PADDLE_MASTER (worker 0: its own IP)",)
    return Explanation(facts, rows, notes)
