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
- Only the master port is fixed. The launcher takes its other ports from PORT_RANGE (default
  35100:64000, context/node.py Node.__init__, get_free_port), and gloo and NCCL connect on
  ephemeral ports both ways: the job's pods must reach each other on every port. The default
  master port 36543 lies in that range, so PORT_RANGE is set to leave it out: otherwise a
  trainer's store on pod 0 can take it.
- On the pod that is the master, HTTPMaster.lazy_init calls Node.is_server_ready (connect_ex on
  the master's name) outside its try: a name that does not resolve yet raises socket.gaierror
  and ends the launcher. The kubelet writes only the pod's own fully qualified name
  (<host>.<subdomain>.<ns>.svc.<domain>) and its host name into /etc/hosts; any shorter name
  comes from the cluster DNS once the EndpointSlice has the pod, seconds later
  (kubernetes/kubernetes#117819). So where the cluster domain is known the names are fully
  qualified; where it is not, every pod first waits, with the system resolver as the launcher
  resolves, until the master's name resolves. The other pods retry (KVClient swallows errors).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from paddlegen.compiler import kube_expansion
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
from paddlegen.compiler.render import Block

CollectiveLauncher = Literal["indexed", "kubeflow", "jobset", "trainjob"]
# The launchers that restart the whole gang after a failure (JobSet, and Trainer v2 on it).
GANG_LAUNCHERS = ("jobset", "trainjob")

LAUNCH = ("python", "-m", "paddle.distributed.launch")
MASTER_PORT_NAME = "master"  # the training operator reads the port by this name
CONTAINER = "paddle"  # the training operator takes only a container named so
# Kubeflow Trainer v2.3.0 takes only a container named `node` in the replicated Job it drives
# (pkg/runtime/framework/plugins/jobset/builder.go; the runtime webhook refuses other names).
TRAINJOB_CONTAINER = "node"
GPU_RESOURCE = "nvidia.com/gpu"
SHARED_VOLUME, SHARED_MOUNT = "shared", "/mnt/shared"
TMP_VOLUME, TMP_MOUNT = "tmp", "/tmp"  # Python and the launcher need it, root read-only or not
# Every trainer's, GPU or CPU: NCCL and DataLoader workers outgrow the runtime's 64 MB
SHM_VOLUME, SHM_MOUNT = "dshm", "/dev/shm"
LOCAL_LOG_ROOT = "/tmp/paddle-logs"
# Variables the pod template declares so that later entries, the command and the args can use
# them ($(VAR) expands only what is declared before it; the Job controller appends its own
# JOB_COMPLETION_INDEX after the template's).
INDEX_VARIABLE = "JOB_COMPLETION_INDEX"
POD_NAME_VARIABLE = "POD_NAME"
# The launcher's own port range (context/node.py: PORT_RANGE, "35100:64000" by default).
LAUNCHER_PORTS = (35100, 64000)
# How long a pod waits for the master's name where the cluster domain is unknown: the cluster DNS
# has it seconds after the pods run; a name that never comes fails the pod, not hangs it.
NAME_WAIT_SECONDS = 600
# kubeflow: a trainer whose peer is lost (a deleted pod comes back under another name and the
# launchers never regroup) fails its collective after this long (ms; Paddle's default is 30 min),
# so the run fails instead of holding its nodes until the deadline.
PG_TIMEOUT_MS = 600_000
# The contract with the training script: where to save the trained model and the checkpoints,
# on the shared volume, the same for every pod of the job and every run of it.
OUTPUT_DIR_VARIABLE = "PADDLEGEN_OUTPUT_DIR"
CHECKPOINT_DIR_VARIABLE = "PADDLEGEN_CHECKPOINT_DIR"
RESTART_ATTEMPT_VARIABLE = "PADDLEGEN_RESTART_ATTEMPT"
# JobSet v0.12.0 (github:kubernetes-sigs/jobset) and Kubeflow Trainer v2.3.0 (github:kubeflow/
# trainer): the replicated Job of the trainers (Trainer's must be `node`), the label JobSet puts
# on every Job and pod with its status.restarts at the time (pkg/controllers/jobset_controller.go
# labelAndAnnotateObject), the label Trainer's runtime marks its trainer Job with, and Kueue's.
JOBSET_API, TRAINER_API = "jobset.x-k8s.io/v1alpha2", "trainer.kubeflow.org/v1alpha1"
REPLICATED_JOB = {"jobset": "trainer", "trainjob": "node"}
RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
TRAINER_ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


@dataclass(frozen=True)
class CollectiveTraining:
    """The training run: `nodes` pods, each a launcher with one trainer process per GPU (one on
    CPU, over gloo)."""

    name: str  # the Job's or PaddleJob's, also its job id and the Service's
    namespace: str
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
    # The cluster's DNS domain where the platform fixes it (EKS: cluster.local): the pods are then
    # named by the fully qualified names the kubelet writes into /etc/hosts. None: unknown, and
    # every pod waits for the master's name before it launches.
    cluster_domain: str | None = None
    # /dev/shm's sizeLimit: memory-backed, it counts against the pod's memory limit
    shm_size: str = "1Gi"
    restarts: int = 0  # whole-gang restarts after a failure (jobset, trainjob)
    grace_period_seconds: int = 120  # SIGTERM to SIGKILL: time to save a checkpoint
    queue: str | None = None  # Kueue's LocalQueue

    @property
    def processes_per_node(self) -> int:
        return max(1, self.gpus_per_node)

    def ranks(self, index: int) -> range:
        """The global ranks of pod i's trainer processes."""
        return range(index * self.processes_per_node, (index + 1) * self.processes_per_node)

    @property
    def job_dir(self) -> str:
        """The run's directory: on the shared volume, else in the pod."""
        return f"{SHARED_MOUNT}/{self.name}" if self.claim_name else LOCAL_LOG_ROOT

    @property
    def log_dir(self) -> str:
        """Where each pod's launcher writes its logs: its own directory on the shared volume."""
        root = f"{self.job_dir}/logs" if self.claim_name else LOCAL_LOG_ROOT
        return f"{root}/$({POD_NAME_VARIABLE})"

    @property
    def output_dirs(self) -> tuple[tuple[str, str], ...]:
        """The script's directories (PADDLEGEN_*), per job on the shared volume."""
        return ((OUTPUT_DIR_VARIABLE, f"{self.job_dir}/output"),
                (CHECKPOINT_DIR_VARIABLE, f"{self.job_dir}/checkpoints"))

    @property
    def job_name(self) -> str:
        """The name of the Indexed Job whose pods train: the JobSet's child Job is
        <jobset>-<replicated job>-<job index> (JobSet v0.12.0, pkg/controllers/placement.go)."""
        if self.launcher in GANG_LAUNCHERS:
            return f"{self.name}-{REPLICATED_JOB[self.launcher]}-0"
        return self.name

    def pod_name(self, index: int | str) -> str:
        """Pod i's stable DNS name: an Indexed Job pod's host name, <job>-<index> (the Job
        controller's), in the headless Service's subdomain, <name> (ours, or the JobSet's own),
        fully qualified where the domain is known; or the training operator's worker Service."""
        if self.launcher == "kubeflow":
            return f"{self.name}-worker-{index}"
        short = f"{self.job_name}-{index}.{self.name}"
        if self.cluster_domain is None:
            return short
        return f"{short}.{self.namespace}.svc.{self.cluster_domain}"

    @property
    def waits_for_names(self) -> bool:
        """Whether each pod waits for the master's name before it launches."""
        return self.launcher != "kubeflow" and self.cluster_domain is None

    @property
    def container_name(self) -> str:
        return TRAINJOB_CONTAINER if self.launcher == "trainjob" else CONTAINER

    @property
    def master(self) -> str:
        return f"{self.pod_name(0)}:{self.master_port}"


def launch_argv(training: CollectiveTraining) -> list[str]:
    """What every pod runs, as its command says it: paddlegen's $(VAR)s for the kubelet to
    expand, the spec's args with every `$` doubled. The args are the user's words, passed as
    written (training.args): none is a reference, and none may change with the pod's
    environment (a service-link variable of the cluster's) or lose a `$` of `$$`."""
    wiring = ([] if training.launcher == "kubeflow" else
              ["--master", training.master, "--nnodes", str(training.nodes),
               "--job_id", training.name])
    return [*LAUNCH, *wiring, "--nproc_per_node", str(training.processes_per_node),
            "--log_dir", training.log_dir, training.script,
            *map(kube_expansion.literal, training.args)]


# Waits, with the system resolver (getent reads /etc/hosts, then DNS, as the launcher's
# getaddrinfo does; nslookup and dig skip /etc/hosts), until $1 resolves, then execs the rest: the
# launcher stays the container's PID 1 and gets its signals.
NAME_WAIT = f"""\
waited=0
until getent hosts "$1" >/dev/null; do
  if [ "$waited" -ge {NAME_WAIT_SECONDS} ]; then
    echo "$1 did not resolve in {NAME_WAIT_SECONDS} s" >&2
    exit 1
  fi
  sleep 1
  waited=$((waited + 1))
done
shift
exec "$@"
"""


def container_argv(training: CollectiveTraining) -> list[str]:
    """The container's command: the launcher, after the wait for the master's name if any."""
    argv = launch_argv(training)
    if not training.waits_for_names:
        return argv
    return ["sh", "-c", Block(NAME_WAIT), "wait-for-master", training.pod_name(0), *argv]


def port_range(master_port: int) -> str:
    """The launcher's port range without the master port: the larger side of it."""
    low, high = LAUNCHER_PORTS
    if not low <= master_port <= high:
        return f"{low}:{high}"
    return f"{low}:{master_port - 1}" if master_port - low > high - master_port \
        else f"{master_port + 1}:{high}"


def field_env(name: str, path: str) -> Object:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def fixed_env(training: CollectiveTraining) -> list[tuple[str, str]]:
    """The same for every pod: the launcher's port range, the script's directories, unbuffered
    output (or, with kubeflow, a bound on a lost peer), the fabric's."""
    # kubeflow: the training operator appends PYTHONUNBUFFERED; elsewhere the launcher's stdout
    # (trainer 0's log, which the runbook follows) would come in blocks, and a killed pod's last
    # lines never.
    own = [("PADDLE_PG_TIMEOUT", str(PG_TIMEOUT_MS))] if training.launcher == "kubeflow" \
        else [("PYTHONUNBUFFERED", "1")]
    return [("PORT_RANGE", port_range(training.master_port)), *training.output_dirs, *own,
            *training.device_env]


def restart_attempt_env(training: CollectiveTraining) -> Object:
    """PADDLEGEN_RESTART_ATTEMPT: the attempt JobSet records on each pod (status.restarts when
    it made the Job), 0 where nothing restarts the run."""
    if training.launcher in GANG_LAUNCHERS:
        return field_env(RESTART_ATTEMPT_VARIABLE, f"metadata.labels['{RESTART_ATTEMPT_LABEL}']")
    return {"name": RESTART_ATTEMPT_VARIABLE, "value": "0"}


def launch_env(training: CollectiveTraining) -> list[Object]:
    """The pod's own identity, for the launcher (its address and its rank), then fixed_env."""
    named = [field_env(POD_NAME_VARIABLE, "metadata.name")]
    fixed = [{"name": name, "value": value} for name, value in fixed_env(training)]
    fixed.append(restart_attempt_env(training))
    if training.launcher != "kubeflow":
        index = f"$({INDEX_VARIABLE})"
        return [field_env(INDEX_VARIABLE, COMPLETION_INDEX), *named,
                {"name": "POD_IP", "value": training.pod_name(index)},
                {"name": "PADDLE_RANK", "value": index}, *fixed]
    return [*named, field_env("POD_IP", "status.podIP"), field_env("PADDLE_RANK", REPLICA_INDEX),
            *fixed]


def explained_env(training: CollectiveTraining, index: int) -> dict[str, str]:
    """Pod i's launcher environment as the kubelet and, for kubeflow, the operator make it."""
    pod = (training.pod_name(index) if training.launcher == "kubeflow"
           else f"{training.job_name}-{index}-<suffix>")
    env = {POD_NAME_VARIABLE: pod}
    attempt = ("<the restart attempt>" if training.launcher in GANG_LAUNCHERS else "0")
    fixed = {**dict(fixed_env(training)), RESTART_ATTEMPT_VARIABLE: attempt}
    if training.launcher != "kubeflow":
        env |= {INDEX_VARIABLE: str(index), "POD_IP": training.pod_name(index),
                "PADDLE_RANK": str(index), **fixed}
    else:
        ip = "<the pod's IP>"
        env |= {"POD_IP": ip, "PADDLE_RANK": str(index), **fixed,
                "PYTHONUNBUFFERED": "1",
                "PADDLE_JOB_ID": training.name, "PADDLE_NNODES": str(training.nodes),
                "PADDLE_MASTER": (f"{ip}:{training.master_port}" if index == 0
                                  else training.master)}
    return env


def container(training: CollectiveTraining) -> Object:
    resources = {kind: dict(values) for kind, values in training.resources.items()}
    limits = ((GPU_RESOURCE, str(training.gpus_per_node)),) if training.gpus_per_node else ()
    for name, value in (*limits, *training.device_limits):
        resources.setdefault("limits", {})[name] = value
    mounts = [{"name": TMP_VOLUME, "mountPath": TMP_MOUNT},
              {"name": SHM_VOLUME, "mountPath": SHM_MOUNT}]
    if training.claim_name:
        mounts.append({"name": SHARED_VOLUME, "mountPath": SHARED_MOUNT})
    return {"name": training.container_name, "image": training.image,
            "command": container_argv(training),
            "env": launch_env(training),
            "ports": [{"name": MASTER_PORT_NAME, "containerPort": training.master_port}],
            "resources": resources, "volumeMounts": mounts}


def volumes(training: CollectiveTraining) -> list[Object]:
    found: list[Object] = [
        {"name": TMP_VOLUME, "emptyDir": {}},
        {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": training.shm_size}}]
    if training.claim_name:
        found.append({"name": SHARED_VOLUME,
                      "persistentVolumeClaim": {"claimName": training.claim_name}})
    return found


def pod(training: CollectiveTraining) -> Object:
    """The pod of every launcher; no API access (the launchers rendezvous among themselves).
    JobSet sets the subdomain of its own pods (network.subdomain)."""
    spec: Object = {"automountServiceAccountToken": False}
    if training.launcher == "indexed":
        spec["subdomain"] = training.name  # <job>-<index>.<job>: the stable names
    spec["terminationGracePeriodSeconds"] = training.grace_period_seconds
    return {**spec, "containers": [container(training)], "volumes": volumes(training)}


def indexed_job(meta: Meta, training: CollectiveTraining) -> Object:
    """completions = parallelism = nodes, fail-fast: collective training cannot take a
    replacement for a lost rank mid-run, so the first failed pod fails the Job."""
    found = job(meta, training.job_name, "trainer", pod(training), parallelism=training.nodes,
                deadline_seconds=training.deadline_seconds, backoff_limit=0,
                ttl_seconds=training.ttl_seconds, completion_mode="Indexed")
    return with_queue(found, training) if training.launcher == "indexed" else found


def paddle_job(meta: Meta, training: CollectiveTraining) -> Object:
    """Kubeflow's PaddleJob, Worker replicas only (the operator's collective mode): worker 0 is
    the master."""
    return with_queue(worker_paddle_job(meta, training.name, training.nodes,
                                        pod_template(meta, "trainer", pod(training)),
                                        training.deadline_seconds, training.ttl_seconds),
                      training)


# JobSet v0.12.0's failure policy (pkg/controllers/failure_policy.go): a failed child Job that
# matches no rule restarts the whole set and counts (RestartJobSet); these rules come first.
# A pod with the DisruptionTarget condition (evicted, drained, preempted, its node shut down or
# gone) fails its Job by the Job's podFailurePolicy, with reason PodFailurePolicy: the restart
# that follows does not count. The Job's deadline ends the run: restarting it would start the
# clock again. Rule names follow the webhook's pattern, ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$.
DISRUPTION_RULE = {"name": "DisruptionsDoNotCount", "action": "RestartJobSetAndIgnoreMaxRestarts",
                   "onJobFailureReasons": ["PodFailurePolicy"]}
DEADLINE_RULE = {"name": "DeadlineEndsTheRun", "action": "FailJobSet",
                 "onJobFailureReasons": ["DeadlineExceeded"]}
DISRUPTION_POLICY = {"rules": [{"action": "FailJob", "onPodConditions": [
    {"type": "DisruptionTarget", "status": "True"}]}]}


def gang_job_template(meta: Meta, training: CollectiveTraining) -> Object:
    """The replicated Job of the trainers: the Indexed Job of the indexed launcher, whose
    disruptions fail it by its podFailurePolicy (which needs the pods' restartPolicy Never: the
    JobSet webhook would default it to OnFailure)."""
    indexed = indexed_job(meta, training)
    labels = dict(indexed["metadata"]["labels"])
    if training.launcher == "trainjob":
        labels[TRAINER_ANCESTOR_LABEL] = "trainer"
    # the TTL is the JobSet's: a child Job's own would take the pods (and their logs) early
    spec = {key: value for key, value in indexed["spec"].items()
            if key != "ttlSecondsAfterFinished"}
    return {"metadata": {"labels": labels}, "spec": {**spec, "podFailurePolicy": DISRUPTION_POLICY}}


def jobset_spec(meta: Meta, training: CollectiveTraining) -> Object:
    """One replicated Job of `nodes` pods; JobSet's own headless Service names them
    <jobset>-<job>-0-<index>.<jobset>, ready or not."""
    spec: Object = {
        "network": {"enableDNSHostnames": True, "subdomain": training.name,
                    "publishNotReadyAddresses": True},
        "failurePolicy": {"maxRestarts": training.restarts,
                          "rules": [DISRUPTION_RULE, DEADLINE_RULE]},
        "successPolicy": {"operator": "All"},
        "replicatedJobs": [{"name": REPLICATED_JOB[training.launcher], "replicas": 1,
                            "template": gang_job_template(meta, training)}]}
    if training.ttl_seconds is not None:
        spec["ttlSecondsAfterFinished"] = training.ttl_seconds
    return spec


def with_queue(top: Object, training: CollectiveTraining) -> Object:
    """The run's top-level object, with Kueue's queue label if the run has a queue: Kueue
    admits (unsuspends) the object that carries it, all of its pods at once."""
    if training.queue:
        top["metadata"]["labels"][QUEUE_LABEL] = training.queue
    return top


def jobset(meta: Meta, training: CollectiveTraining) -> Object:
    return with_queue({"apiVersion": JOBSET_API, "kind": "JobSet",
                       "metadata": metadata(meta, training.name, component="trainer"),
                       "spec": jobset_spec(meta, training)}, training)


def training_runtime(meta: Meta, training: CollectiveTraining) -> Object:
    """The Paddle runtime Trainer v2.3.0 lacks: plainML (no mlPolicy: Trainer then sets no
    framework's environment, only the node count), its JobSet template carrying the wiring."""
    runtime = metadata(meta, training.name, component="trainer")
    return {"apiVersion": TRAINER_API, "kind": "TrainingRuntime", "metadata": runtime,
            "spec": {"template": {"metadata": {"labels": dict(runtime["labels"])},
                                  "spec": jobset_spec(meta, training)}}}


def train_job(meta: Meta, training: CollectiveTraining) -> Object:
    """The TrainJob of the runtime above (a namespaced one: runtimeRef's kind defaults to
    ClusterTrainingRuntime); numNodes sets the trainer Job's parallelism and completions."""
    return with_queue({"apiVersion": TRAINER_API, "kind": "TrainJob",
                       "metadata": metadata(meta, training.name, component="trainer"),
                       "spec": {"runtimeRef": {"apiGroup": TRAINER_API.split("/")[0],
                                               "kind": "TrainingRuntime",
                                               "name": training.name},
                                "trainer": {"numNodes": training.nodes}}}, training)


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
    """The training's objects in apply order (after the shared volume's). The gang launchers
    get no PodDisruptionBudget: a drain should go ahead, and the run restarts from its newest
    checkpoint without counting; JobSet makes their Service."""
    if training.launcher == "jobset":
        return [network_policy(meta), jobset(meta, training)]
    if training.launcher == "trainjob":
        return [network_policy(meta), training_runtime(meta, training),
                train_job(meta, training)]
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
    if training.launcher != "kubeflow":
        return {"job-name": training.job_name, "batch.kubernetes.io/job-completion-index": "0"}
    return {"training.kubeflow.org/job-name": training.name,
            "training.kubeflow.org/replica-index": "0"}


def explanation(meta: Meta, profile: str, training: CollectiveTraining,
                common: dict[str, Any]) -> Explanation:
    """Each pod's exact command and launcher environment."""
    argv = launch_argv(training)
    processes = []
    for index in range(training.nodes):
        env = explained_env(training, index)
        processes.append({"trainerId": index, "ranks": list(training.ranks(index)),
                          "pod": training.pod_name(index), "env": env,
                          "trainer": {"argv": [kube_expansion.expanded(word, env)
                                               for word in argv],
                                      "log": "stdout"}})
    facts = {**common, "framework": "paddle", "launcher": training.launcher,
             "stableNames": [training.pod_name(i) for i in range(training.nodes)],
             "master": training.master, "processesPerNode": training.processes_per_node,
             "gpusPerNode": training.gpus_per_node,
             "worldSize": training.nodes * training.processes_per_node,
             "logDir": training.log_dir, "deadlineSeconds": training.deadline_seconds,
             "gracePeriodSeconds": training.grace_period_seconds,
             "processes": processes}
    if training.launcher in GANG_LAUNCHERS:
        facts["restarts"] = training.restarts
    if training.queue:
        facts["queue"] = training.queue
    gpus = "1 GPU" if training.gpus_per_node == 1 else f"{training.gpus_per_node} GPUs"
    device = (f"{gpus}, one trainer process each, over NCCL"
              if training.gpus_per_node else "CPU, one trainer process, over gloo")
    rows = (("framework", "PaddlePaddle 3, collective (paddle.distributed.launch)"),
            ("launcher", training.launcher), ("master", training.master),
            ("each pod", device),
            ("world size", str(training.nodes * training.processes_per_node)),
            ("logs", training.log_dir),
            *((label, f"{path} (${name})") for label, (name, path)
              in zip(("output", "checkpoints"), training.output_dirs, strict=True)),
            *((("before", f"each pod waits until {training.pod_name(0)} resolves (getent "
                          f"hosts, at most {NAME_WAIT_SECONDS} s), then execs the launcher"),)
              if training.waits_for_names else ()),
            ("command", shell_words(argv)),
            ("deadline", f"{training.deadline_seconds} s"
                         f"{' for each attempt' if training.launcher in GANG_LAUNCHERS else ''}"
                         ", then the run fails"),
            ("on SIGTERM", f"{training.grace_period_seconds} s to SIGKILL; the launcher kills "
                           "its trainers after 30 s"),
            *((("restarts", f"at most {training.restarts} after a failure, from the newest "
                            "checkpoint; disruptions do not count"),)
              if training.launcher in GANG_LAUNCHERS else ()),
            *((("queue", f"{training.queue} (Kueue: all pods admitted, or none)"),)
              if training.queue else ()))
    notes: tuple[str, ...] = ("$(VAR) in the command and the environment is expanded by the "
                              "kubelet from the variables declared before it, and $$ is $: "
                              "the args' $ are doubled, so that they arrive as written; each "
                              "pod's command below is what its process gets",)
    if training.launcher == "kubeflow":
        notes += ("the training operator appends PYTHONUNBUFFERED, PADDLE_JOB_ID, "
                  "PADDLE_NNODES, POD_IP_DUMMY and PADDLE_MASTER (worker 0: its own IP)",)
    return Explanation(facts, rows, notes)
