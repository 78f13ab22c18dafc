"""A pod simulator: runs the pods of one training job's Kubernetes objects on this machine, each
wired as Kubernetes would wire it, so that tests can run real programs (PaddlePaddle's launcher)
across "pods" that find each other only through what their manifests say.

Input: the job's objects as loaded from YAML (ConfigMaps, Services, and one workload: a batch/v1
Job with `completionMode: Indexed`, a kubeflow.org/v1 PaddleJob, a jobset.x-k8s.io/v1alpha2
JobSet, or a trainer.kubeflow.org/v1alpha1 TrainJob with its TrainingRuntime). `run_pods` runs
them to the end; a `Simulation` runs them while a test acts on the run (kills a pod's container,
evicts a pod, waits for a line a pod writes, reads the JobSet's status). It:

- plays the workload's controllers (ControlPlane), each from the objects as built, never from
  what they are expected to say: the pods they create, with their names, hostnames, labels,
  annotations, and the env vars the controller appends to every container. The Job
  controller (syncJob): a Job's pod-failure policy, backoffLimit and activeDeadlineSeconds, in
  its order; its failure first as FailureTarget, the Failed condition only once none of its pods
  is terminating; its syncs batched a second after pod events. The training operator makes a
  PaddleJob's pods once. JobSet v0.12.0: its webhook's defaults, its child Jobs and headless
  Service, its failure policy (rules in order; RestartJobSet, counted against maxRestarts;
  RestartJobSetAndIgnoreMaxRestarts; FailJobSet), a restart's foreground deletion of the
  previous attempt's Jobs and their recreation under the same names, labelled with the new
  attempt, once the old ones are gone; its success policy. Kubeflow Trainer v2.3.0: a TrainJob's
  JobSet from its runtime (plainML), its Complete and Failed conditions. The garbage collector:
  foreground deletion. Each function cites its source;
- plays cluster DNS (see serve_cluster_dns): a DNS server on the nameserver address every pod's
  resolv.conf names, in the pods' network namespace, that answers as CoreDNS's kubernetes plugin
  answers for headless Services: A records for `<service>.<ns>.svc.<domain>` (every pod
  selected) and `<hostname>.<service>.<ns>.svc.<domain>` (a selected pod whose spec.hostname is
  set and whose subdomain is the Service); NXDOMAIN for any other name, as CoreDNS answers a pod
  record that the Service's EndpointSlice does not list yet (plugin/kubernetes/kubernetes.go,
  findServices); NOERROR with no answer (NODATA) for another type of a known name, such as
  AAAA. Short names resolve as in a real pod, through the resolver's search path
  (`<ns>.svc.<domain> svc.<domain> <domain>`, ndots:5). `run_pods(dns_delay=...)` is how long
  the EndpointSlice takes to list the pods, which can be seconds (kubernetes/kubernetes#117819,
  #127259): until then every name is NXDOMAIN. Names outside the cluster are NXDOMAIN too: no
  query leaves the machine;
- plays the kubelet: /etc/hosts as it writes it (pkg/kubelet/kubelet_pods.go,
  managedHostsFileContent: the localhost lines and the pod's own
  `<hostname>.<subdomain>.<ns>.svc.<domain>  <hostname>`, or its hostname alone without a
  subdomain; no other pod's name), /etc/hostname and resolv.conf; env from
  `value`/`valueFrom`/`envFrom` with `$(VAR)` expansion, `command` and `args` expanded against
  it, volumes (configMap, emptyDir, persistentVolumeClaim) mounted at their `mountPath`s, the
  container's `workingDir`;
- plays the kubelet's side of a pod's end: its container's exit code (128 + the signal that
  killed it), its phase (Succeeded if it exited 0, else Failed, deleted or not); a deleted pod's
  container gets SIGTERM at its PID 1, and SIGKILL once terminationGracePeriodSeconds have
  passed; a pod is in its Services' DNS records from `dns_delay` seconds after it was made
  until it ends (or is deleted, for a Service without publishNotReadyAddresses);
- plays the container runtime: each pod has its own mount, UTS and PID namespaces (as
  `unshare --mount --uts --pid --fork --mount-proc` makes them; see pod_parent_main),
  with its own hostname and a loopback address as pod IP (pod k gets 127.0.<k+1>.1), in the
  run's own network namespace (see start_network). Its root is an overlay of this machine's
  root filesystem (the "image") with a tmpfs upper layer, built inside the pod's mount
  namespace: the container's writes, and mount points that do not exist
  on the host (/workspace, /opt/paddlegen/launcher, ...), go to that tmpfs and vanish with the
  pod, so nothing on the host changes outside the caller's work directory. The caller's image
  filesystem mapping is bind-mounted read-only over it. The image's /etc/nsswitch.conf is this
  machine's if it looks up hosts in `files` then `dns` (as Debian-based images do), else such a
  one is mounted. The container process is the pod's PID 1, so killing it kills every process
  of the pod, including ones in their own sessions.

The pods of a run share one network namespace with only lo in it (a pod IP is an address on that
lo, not a stack of its own): runs, and the host's own listeners, never see each other's ports,
and no pod can send a packet off this machine.

Not simulated: ClusterIP Services and service-link env vars (KUBERNETES_SERVICE_HOST, ...),
Secrets, a container restarted in place (restartPolicy OnFailure is refused), a Job's failed pod
replaced (its backoffLimit is counted, no pod is made again), a PaddleJob's runPolicy, JobSet's
RestartJob actions, InPlaceRestart, startup policy, dependsOn and coordinator, TrainJob
runtimePatches and framework mlPolicies, scheduling, more than one container per pod (init
containers are run, in order), securityContext, resource enforcement, probes (a running pod is
ready); of DNS: TCP, PTR records, the `<ip-with-dashes>` names of pods without a hostname, SRV
records.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import ctypes
import functools
import hashlib
import json
import math
import os
import re
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

Obj = dict[str, Any]  # a Kubernetes object, or a part of one, as loaded from YAML

CLUSTER_DOMAIN = "cluster.local"
NODE_NAME = "podsim-node"
NODE_IP = "127.0.0.1"  # status.hostIP: the node is this machine
# The cluster DNS Service's ClusterIP is the tenth address of the service range (kubeadm
# 10.96.0.10, EKS 10.100.0.10 or 172.20.0.10); here, an address on the run's own lo.
CLUSTER_DNS_IP = "127.0.0.10"
DNS_TTL = 5  # seconds: CoreDNS's kubernetes plugin's default `ttl`
DEFAULT_BACKOFF_LIMIT = 6  # a Job's spec.backoffLimit when unset
JOB_INDEX_KEY = "batch.kubernetes.io/job-completion-index"
HOST_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"  # all nsenter's own environment holds
KILL_GRACE = 30.0  # seconds for a killed pod's processes to be gone before its parent is killed
ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")

# kubeflow/training-operator v1.9.4 (github:kubeflow/trainer, tag v1.9.4):
# pkg/apis/kubeflow.org/v1/paddlepaddle_types.go and pkg/apis/kubeflow.org/v1/common_types.go.
PADDLE_CONTAINER = "paddle"
PADDLE_PORT_NAME = "master"
PADDLE_DEFAULT_PORT = 36543
PADDLE_REPLICA_TYPES = ("Master", "Worker")
PADDLE_CONTROLLER = "paddlejob-controller"
KF_OPERATOR_LABEL = "training.kubeflow.org/operator-name"
KF_JOB_NAME_LABEL = "training.kubeflow.org/job-name"
KF_REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
KF_REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
KF_JOB_ROLE_LABEL = "training.kubeflow.org/job-role"


class PodConfigError(ValueError):
    """What the kubelet reports as CreateContainerConfigError: the pod would never start."""


@dataclass
class Pod:
    """A pod as its controller creates it, with the IP the simulated network gives it."""

    name: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: Obj
    ip: str = ""

    @property
    def uid(self) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"podsim/pod/{self.namespace}/{self.name}"))

    @property
    def hostname(self) -> str:
        """The kubelet's rule: spec.hostname, else the pod's name."""
        return str(self.spec.get("hostname") or self.name)

    @property
    def subdomain(self) -> str:
        return str(self.spec.get("subdomain") or "")


@dataclass(frozen=True)
class Cluster:
    """The pods of one job and the objects around them that the kubelet and DNS read."""

    pods: list[Pod]
    services: list[Obj]
    config_maps: dict[tuple[str, str], Obj]


# -- Objects -------------------------------------------------------------------------------------


def load_objects(*paths: Path) -> list[Obj]:
    """Every document of the given YAML files, in order."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    return [doc for path in paths for doc in yaml.load_all(path.read_text()) if doc]


def name_of(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def namespace_of(obj: Obj) -> str:
    return str(obj["metadata"].get("namespace") or "default")


def stable_suffix(text: str) -> str:
    """Five characters from the alphabet of generated names, the same on every run."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = hashlib.sha256(text.encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:5])


def containers_of(spec: Obj) -> list[Obj]:
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def pod_ip(ordinal: int) -> str:
    """Pod k's address: 127.0.<k+1>.1, never 127.0.0.1, never a string prefix of another."""
    if not 0 <= ordinal < 254:
        raise ValueError(f"podsim gives addresses to 254 pods, not {ordinal + 1}")
    return f"127.0.{ordinal + 1}.1"


# -- Controllers ---------------------------------------------------------------------------------


def indexed_job_pods(job: Obj) -> list[Pod]:
    """The pods the Job controller creates for an Indexed Job (pkg/controller/job): hostname
    `<job>-<index>`, the completion index as annotation and label, and JOB_COMPLETION_INDEX
    appended to every container that does not declare it (a fieldRef to that label)."""
    spec = job["spec"]
    if spec.get("completionMode") != "Indexed":
        raise ValueError("podsim runs Indexed Jobs only (spec.completionMode: Indexed)")
    name, namespace = name_of(job), namespace_of(job)
    job_uid = str(job["metadata"].get("uid")
                  or uuid.uuid5(uuid.NAMESPACE_URL, f"podsim/job/{namespace}/{name}"))
    count = min(int(spec.get("parallelism", 1)), int(spec["completions"]))
    template = copy.deepcopy(spec["template"])
    for container in containers_of(template["spec"]):
        env = container.setdefault("env", [])
        if all(var["name"] != "JOB_COMPLETION_INDEX" for var in env):
            field = {"fieldPath": f"metadata.labels['{JOB_INDEX_KEY}']"}
            env.append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": field}})
    # The API server's Job defaulting adds these selector labels to the template.
    labels = {**template.get("metadata", {}).get("labels", {}),
              "batch.kubernetes.io/controller-uid": job_uid, "batch.kubernetes.io/job-name": name,
              "controller-uid": job_uid, "job-name": name}
    pods = []
    for index in range(count):
        pod_spec = copy.deepcopy(template["spec"])
        pod_spec["hostname"] = f"{name}-{index}"
        pods.append(Pod(
            name=f"{name}-{index}-{stable_suffix(f'{job_uid}/{index}')}",
            namespace=namespace,
            labels={**labels, JOB_INDEX_KEY: str(index)},
            annotations={**template.get("metadata", {}).get("annotations", {}),
                         JOB_INDEX_KEY: str(index)},
            spec=pod_spec,
        ))
    return pods


def paddle_replica_specs(job: Obj) -> dict[str, Obj]:
    """spec.paddleReplicaSpecs with the operator's camel-case keys and defaults (replicas: 1),
    validated as its webhook does (pkg/webhooks/paddlepaddle)."""
    specs: dict[str, Obj] = {}
    for key, replica in job["spec"]["paddleReplicaSpecs"].items():
        rtype = next((t for t in PADDLE_REPLICA_TYPES if t.lower() == key.lower()), None)
        if rtype is None:
            raise ValueError(f"PaddleJob replica type {key!r} is not one of {PADDLE_REPLICA_TYPES}")
        containers = replica["template"]["spec"]["containers"]
        if all(c.get("name") != PADDLE_CONTAINER for c in containers):
            raise ValueError(f"PaddleJob {rtype}: no container named {PADDLE_CONTAINER!r}")
        specs[rtype] = {**replica, "replicas": int(replica.get("replicas", 1))}
    return specs


def paddle_port(replica: Obj) -> int:
    """getPortFromPaddleJob: the `master` port of the `paddle` container, else 36543."""
    for container in replica["template"]["spec"]["containers"]:
        if container.get("name") == PADDLE_CONTAINER:
            for port in container.get("ports", []):
                if port.get("name") == PADDLE_PORT_NAME:
                    return int(port["containerPort"])
    return PADDLE_DEFAULT_PORT


def paddle_operator_env(job: Obj, specs: Mapping[str, Obj], rtype: str, rank: int) -> list[Obj]:
    """What the training operator appends to every container of a PaddleJob pod.

    Source: kubeflow/training-operator tag v1.9.4, pkg/controller.v1/paddlepaddle/envvar.go,
    setPodEnv (the repository is now github:kubeflow/trainer; the tag is there)."""
    name = name_of(job)
    total = sum(int(spec["replicas"]) for spec in specs.values())
    env: list[Obj] = [
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "PADDLE_JOB_ID", "value": name},
        {"name": "PADDLE_NNODES", "value": str(total)},
    ]
    master_type = "Worker" if "Master" not in specs else "Master"  # collective, else PS mode
    port = paddle_port(specs[master_type])
    if rank == 0 and rtype == master_type:
        env += [{"name": "POD_IP_DUMMY", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "PADDLE_MASTER", "value": f"$(POD_IP_DUMMY):{port}"}]
    else:
        master = f"{name}-{master_type.lower()}-0".replace("/", "-")
        env.append({"name": "PADDLE_MASTER", "value": f"{master}:{port}"})
    if master_type == "Master":
        env.append({"name": "PADDLE_SERVER_NUM" if rtype == "Master" else "PADDLE_TRAINER_NUM",
                    "value": "1"})
    return env


def paddle_labels(job: Obj, rtype: str, index: int) -> dict[str, str]:
    """GenLabels plus the replica type and index (pkg/controller.v1/common/pod.go)."""
    labels = {KF_OPERATOR_LABEL: PADDLE_CONTROLLER,
              KF_JOB_NAME_LABEL: name_of(job).replace("/", "-"),
              KF_REPLICA_TYPE_LABEL: rtype.lower(), KF_REPLICA_INDEX_LABEL: str(index)}
    if rtype == "Master":
        labels[KF_JOB_ROLE_LABEL] = "master"
    return labels


def paddlejob_pods(job: Obj) -> list[Pod]:
    """The pods the training operator creates: `<job>-<type>-<index>`, hostname unset (so it is
    the pod's name), the operator's labels, its env appended to every container."""
    specs = paddle_replica_specs(job)
    pods = []
    for rtype in (t for t in PADDLE_REPLICA_TYPES if t in specs):
        for index in range(specs[rtype]["replicas"]):
            template = copy.deepcopy(specs[rtype]["template"])
            for container in template["spec"]["containers"]:
                container["env"] = [*container.get("env", []),
                                    *paddle_operator_env(job, specs, rtype, index)]
            metadata = template.get("metadata", {})
            pods.append(Pod(
                name=f"{name_of(job)}-{rtype.lower()}-{index}".replace("/", "-"),
                namespace=namespace_of(job),
                labels={**metadata.get("labels", {}), **paddle_labels(job, rtype, index)},
                annotations=dict(metadata.get("annotations", {})),
                spec=template["spec"],
            ))
    return pods


def paddlejob_services(job: Obj) -> list[Obj]:
    """The headless Service per replica that the operator creates (CreateNewService)."""
    services = []
    for rtype, spec in paddle_replica_specs(job).items():
        for index in range(spec["replicas"]):
            labels = paddle_labels(job, rtype, index)
            labels.pop(KF_JOB_ROLE_LABEL, None)
            services.append({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": f"{name_of(job)}-{rtype.lower()}-{index}".replace("/", "-"),
                             "namespace": namespace_of(job), "labels": labels},
                "spec": {"clusterIP": "None", "selector": labels},
            })
    return services


# -- The control plane: the Job, JobSet and Trainer controllers ------------------------------------
#
# Sources, read at their tags (the fact sheet of this work quotes them): Kubernetes'
# pkg/controller/job (job_controller.go, pod_failure_policy.go, indexed_job_utils.go), JobSet
# v0.12.0 (github:kubernetes-sigs/jobset: pkg/controllers/jobset_controller.go,
# failure_policy.go, success_policy.go; pkg/webhooks/jobset_webhook.go; pkg/constants), Kubeflow
# Trainer v2.3.0 (github:kubeflow/trainer: pkg/runtime/framework/plugins/jobset/{jobset,builder}.go,
# pkg/runtime/framework/plugins/plainml/plainml.go, pkg/runtime/core/trainingruntime.go,
# pkg/webhooks/trainingruntime_webhook.go). Times are seconds since the run began.

JOBSET_API, TRAINER_API = "jobset.x-k8s.io/v1alpha2", "trainer.kubeflow.org/v1alpha1"
# api/jobset/v1alpha2/jobset_types.go and pkg/constants/constants.go
JOBSET_NAME_KEY = "jobset.sigs.k8s.io/jobset-name"
JOBSET_UID_KEY = "jobset.sigs.k8s.io/jobset-uid"
REPLICATED_JOB_NAME_KEY = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS_KEY = "jobset.sigs.k8s.io/replicatedjob-replicas"
GLOBAL_REPLICAS_KEY = "jobset.sigs.k8s.io/global-replicas"
JOBSET_JOB_INDEX_KEY = "jobset.sigs.k8s.io/job-index"
JOB_KEY = "jobset.sigs.k8s.io/job-key"
JOB_GLOBAL_INDEX_KEY = "jobset.sigs.k8s.io/job-global-index"
GROUP_NAME_KEY = "jobset.sigs.k8s.io/group-name"
GROUP_REPLICAS_KEY = "jobset.sigs.k8s.io/group-replicas"
JOB_GROUP_INDEX_KEY = "jobset.sigs.k8s.io/job-group-index"
RESTARTS_KEY = "jobset.sigs.k8s.io/restart-attempt"
# the JobSet webhook's (validOnJobFailureReasons, ruleNameFmt)
JOB_FAILURE_REASONS = ("BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes",
                       "MaxFailedIndexesExceeded", "PodFailurePolicy")
RULE_NAME = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
# Trainer v2.3.0, pkg/constants/constants.go
TRAINER_ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_NODE = "node"
# The Job controller batches a Job's syncs after pod events (syncJobBatchPeriod).
JOB_SYNC_BATCH = 1.0
DEFAULT_GRACE_PERIOD = 30  # a pod's terminationGracePeriodSeconds when unset (core/v1)


def condition(type_: str, reason: str, message: str, at: float, status: str = "True") -> Obj:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": round(at, 3)}


def find_condition(conditions: Sequence[Obj], type_: str, status: str = "True") -> Obj | None:
    return next((c for c in conditions if c["type"] == type_ and c["status"] == status), None)


def set_condition(conditions: list[Obj], new: Obj) -> bool:
    """metav1 SetStatusCondition: one condition per type; a change of status moves its time."""
    old = next((c for c in conditions if c["type"] == new["type"]), None)
    if old is None:
        conditions.append(new)
        return True
    if (old["status"], old["reason"], old["message"]) == (new["status"], new["reason"],
                                                          new["message"]):
        return False
    time_ = old["lastTransitionTime"] if old["status"] == new["status"] \
        else new["lastTransitionTime"]
    old.update(new, lastTransitionTime=time_)
    return True


@dataclass(eq=False)
class PodState:
    """A pod object of the run, and what its node's kubelet knows of it."""

    pod: Pod
    job: JobState | None  # its Job (None: a PaddleJob's pod)
    created: float
    phase: str = "Pending"  # Pending, Running, Succeeded, Failed
    exit_code: int | None = None  # the container's, as the kubelet reports it: 128 + a signal
    conditions: list[Obj] = field(default_factory=list)
    deleted: float | None = None  # metadata.deletionTimestamp
    gone: bool = False  # the object is removed: deleted, and its containers stopped
    counted: bool = False  # the Job controller has counted how it ended
    # the node's side (Simulation)
    started: bool = False
    started_at: float | None = None  # when its process was started
    ended_at: float | None = None  # when its process, and with it every process of it, ended
    ended_boot: float | None = None  # the same, on boot_seconds' clock
    killed_at_end: bool = False  # podsim killed it when the run was over
    sigterm_at: float | None = None
    sigkill_sent: bool = False
    proc: subprocess.Popen[bytes] | None = None
    pidfd: int | None = None
    pod_dir: Path | None = None

    @property
    def name(self) -> str:
        return self.pod.name

    @property
    def index(self) -> int | None:
        value = self.pod.annotations.get(JOB_INDEX_KEY)
        return None if value is None else int(value)

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def running(self) -> bool:
        return self.started and not self.terminal

    @property
    def terminating(self) -> bool:
        """Being deleted, its containers not yet stopped (controller.FilterTerminatingPods)."""
        return self.deleted is not None and self.running

    @property
    def grace_period(self) -> float:
        value = self.pod.spec.get("terminationGracePeriodSeconds")
        return float(DEFAULT_GRACE_PERIOD if value is None else value)


@dataclass(eq=False)
class JobState:
    """A batch/v1 Job and what the Job controller records in its status."""

    obj: Obj
    created: float
    pods: list[PodState] = field(default_factory=list)
    conditions: list[Obj] = field(default_factory=list)
    started: float | None = None  # status.startTime
    failed: int = 0  # status.failed: failed pods that count towards the backoffLimit
    succeeded: set[int] = field(default_factory=set)  # completed indexes
    fail_job_message: str | None = None  # a FailJob rule's match (getFailJobMessage)
    sync_due: float | None = None  # a sync is queued for then
    deleting: bool = False  # deleted in the foreground: its pods go first
    gone: bool = False

    @property
    def name(self) -> str:
        return name_of(self.obj)

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.obj["metadata"].get("labels") or {})

    @property
    def spec(self) -> Obj:
        return dict(self.obj["spec"])

    @property
    def finished(self) -> str:
        """Complete or Failed once that condition is True (JobSet's JobFinished), else ''."""
        for type_ in ("Complete", "Failed"):
            if find_condition(self.conditions, type_):
                return type_
        return ""

    def status(self) -> Obj:
        return {"conditions": copy.deepcopy(self.conditions), "failed": self.failed,
                "succeeded": len(self.succeeded),
                "active": sum(1 for p in self.pods if not p.gone and not p.terminal)}


@dataclass(eq=False)
class JobSetState:
    """A JobSet as its webhook defaulted it, and its status."""

    obj: Obj
    uid: str
    restarts: int = 0
    restarts_count_towards_max: int = 0
    conditions: list[Obj] = field(default_factory=list)
    terminal_state: str = ""
    service_made: bool = False
    unmade: set[tuple[str, int]] = field(default_factory=set)  # refused (name, attempt)

    @property
    def name(self) -> str:
        return name_of(self.obj)

    @property
    def spec(self) -> Obj:
        return dict(self.obj["spec"])

    def status(self) -> Obj:
        return {"restarts": self.restarts,
                "restartsCountTowardsMax": self.restarts_count_towards_max,
                "terminalState": self.terminal_state,
                "conditions": copy.deepcopy(self.conditions)}


@dataclass(eq=False)
class TrainJobState:
    obj: Obj
    conditions: list[Obj] = field(default_factory=list)
    jobset_made: bool = False

    @property
    def name(self) -> str:
        return name_of(self.obj)

    def status(self) -> Obj:
        return {"conditions": copy.deepcopy(self.conditions)}


class ControlPlaneError(ValueError):
    """What an API server's validation or a webhook refuses: the object is never created."""


def job_failure_policy_match(policy: Obj | None, pod: PodState) -> tuple[str | None, bool]:
    """(the FailJob message, whether the failure counts towards the backoffLimit) of a failed
    pod: the podFailurePolicy's first matching rule, in order (pod_failure_policy.go,
    matchPodFailurePolicy; onExitCodes skips exit code 0; onPodConditions' status defaults to
    True). No rule matching: counted, no message."""
    if not policy:
        return None, True
    namespace, name = pod.pod.namespace, pod.name
    containers = {c["name"] for c in pod.pod.spec.get("containers", [])}
    for index, rule in enumerate(policy.get("rules", [])):
        action = rule["action"]
        matched: str | None = None
        if rule.get("onExitCodes") is not None:
            want = rule["onExitCodes"]
            wanted_container = want.get("containerName")
            code = pod.exit_code
            if code not in (None, 0) and (wanted_container is None or wanted_container in
                                           containers):
                inside = code in [int(v) for v in want["values"]]
                if inside == (want["operator"] == "In"):
                    container = wanted_container or sorted(containers)[0]
                    matched = (f"Container {container} for pod {namespace}/{name} failed with "
                               f"exit code {code} matching {action} rule at index {index}")
        elif rule.get("onPodConditions") is not None:
            for cond in pod.conditions:
                for pattern in rule["onPodConditions"]:
                    if cond["type"] == pattern["type"] and \
                            cond["status"] == pattern.get("status", "True"):
                        matched = matched or (f"Pod {namespace}/{name} has condition "
                                              f"{cond['type']} matching {action} rule at "
                                              f"index {index}")
        if matched is None:
            continue
        if action == "Ignore":
            return None, False
        if action == "Count":
            return None, True
        if action == "FailJob":
            return matched, True
        raise ValueError(f"podFailurePolicy action {action} is not simulated")
    return None, True


def jobset_defaults(jobset: Obj) -> Obj:
    """The JobSet as its webhook defaults and admits it (jobset_webhook.go, Default and
    ValidateCreate), with the CRD's own defaults (replicas 1, restartStrategy Recreate, groupName
    default); what podsim does not simulate is refused here too."""
    js = copy.deepcopy(jobset)
    spec = js["spec"]
    spec.setdefault("successPolicy", {"operator": "All"})
    spec.setdefault("startupPolicy", {"startupPolicyOrder": "AnyOrder"})
    network = spec.setdefault("network", {})
    network.setdefault("enableDNSHostnames", True)
    network.setdefault("publishNotReadyAddresses", True)
    for rjob in spec["replicatedJobs"]:
        rjob.setdefault("replicas", 1)
        rjob.setdefault("groupName", "default")
        job_spec = rjob["template"]["spec"]
        job_spec.setdefault("completionMode", "Indexed")
        pod_spec = job_spec["template"]["spec"]
        if not pod_spec.get("restartPolicy"):
            # even with a podFailurePolicy, which the API server then refuses (create_job)
            pod_spec["restartPolicy"] = "OnFailure"
        if rjob.get("dependsOn"):
            raise ValueError("JobSet dependsOn is not simulated")
    if spec["startupPolicy"].get("startupPolicyOrder") != "AnyOrder":
        raise ValueError("JobSet startupPolicy InOrder is not simulated")
    policy = spec.get("failurePolicy")
    if policy is not None:
        policy.setdefault("restartStrategy", "Recreate")
        if policy["restartStrategy"] == "InPlaceRestart":
            raise ControlPlaneError("InPlaceRestart restart strategy cannot be set when "
                                    "InPlaceRestart feature gate is disabled")
        names: list[str] = []
        for index, rule in enumerate(policy.get("rules", [])):
            rule.setdefault("name", f"failurePolicyRule{index}")
            names.append(rule["name"])
            if rule["action"] in ("RestartJob", "RestartJobAndIgnoreMaxRestarts"):
                raise ControlPlaneError("RestartJob and RestartJobAndIgnoreMaxRestarts failure "
                                        "policy actions are not allowed when RestartJob "
                                        "feature gate is disabled")
            if not RULE_NAME.fullmatch(rule["name"]):
                raise ControlPlaneError(f"invalid failure policy rule name '{rule['name']}'")
            for reason in rule.get("onJobFailureReasons", []):
                if reason not in JOB_FAILURE_REASONS:
                    raise ControlPlaneError(f"invalid job failure reason '{reason}' in failure "
                                            "policy is not a recognized job failure reason")
        if len(set(names)) != len(names):
            raise ControlPlaneError("rule names are not unique")
    if spec.get("coordinator") or spec.get("suspend"):
        raise ValueError("JobSet coordinator and suspend are not simulated")
    return js


def trainjob_jobset(trainjob: Obj, runtime: Obj) -> Obj:
    """The JobSet the TrainJob controller applies for a TrainJob of a runtime without a
    framework's mlPolicy (plainML), Trainer v2.3.0: named as the TrainJob, the runtime's
    template.metadata labels and annotations, its template.spec whole; the trainer's replicated
    Job (labelled trainjob-ancestor-step: trainer) gets replicas 1 (builder.go, Trainer),
    parallelism = completions = trainer.numNodes (plainml.go EnforceMLPolicy; jobset.go
    SyncParallelCount: every other replicated Job gets completions = its parallelism), and its
    `node` container the TrainJob's image, command and args where set, its env upserted."""
    policy = runtime["spec"].get("mlPolicy")
    if policy and any(policy.get(k) for k in ("torch", "mpi", "jax", "flux", "xgboost")):
        raise ValueError("TrainingRuntime mlPolicy frameworks are not simulated (plainML only)")
    if trainjob["spec"].get("runtimePatches") or trainjob["spec"].get("initializer"):
        raise ValueError("TrainJob runtimePatches and initializer are not simulated")
    template = runtime["spec"]["template"]
    spec = copy.deepcopy(template["spec"])
    trainer = trainjob["spec"].get("trainer") or {}
    for rjob in spec["replicatedJobs"]:
        metadata = rjob["template"].get("metadata") or {}
        job_spec = rjob["template"]["spec"]
        count = int(job_spec.get("parallelism", 1))
        if (metadata.get("labels") or {}).get(TRAINER_ANCESTOR_LABEL) == "trainer":
            if policy is not None:
                count = int(policy.get("numNodes", 1))
            if trainer.get("numNodes") is not None:
                count = int(trainer["numNodes"])
            rjob["replicas"] = 1
            for container in job_spec["template"]["spec"]["containers"]:
                if container["name"] != TRAINER_NODE:
                    continue
                for key in ("image", "command", "args"):
                    if trainer.get(key) is not None:
                        container[key] = copy.deepcopy(trainer[key])
                env = container.setdefault("env", [])
                for var in trainer.get("env", []):  # apply.UpsertEnvVars: in place, else added
                    names = [e["name"] for e in env]
                    if var["name"] in names:
                        env[names.index(var["name"])] = copy.deepcopy(var)
                    else:
                        env.append(copy.deepcopy(var))
        job_spec["parallelism"] = job_spec["completions"] = count
    tj_meta = trainjob["metadata"]
    metadata = {"name": tj_meta["name"], "namespace": namespace_of(trainjob),
                "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
                "ownerReferences": [{"apiVersion": TRAINER_API, "kind": "TrainJob",
                                     "name": tj_meta["name"], "controller": True,
                                     "blockOwnerDeletion": True}]}
    return {"apiVersion": JOBSET_API, "kind": "JobSet", "metadata": metadata, "spec": spec}


def validate_training_runtime(runtime: Obj) -> None:
    """The TrainingRuntime webhook (trainingruntime_webhook.go, validateReplicatedJobs): the
    trainer's replicated Job has replicas 1 and a container named `node`."""
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        labels = (rjob["template"].get("metadata") or {}).get("labels") or {}
        if labels.get(TRAINER_ANCESTOR_LABEL) != "trainer":
            continue
        if int(rjob.get("replicas", 1)) != 1:
            raise ControlPlaneError(f"replicatedJobs {rjob['name']} replicas: always must be 1")
        containers = rjob["template"]["spec"]["template"]["spec"]["containers"]
        if all(c["name"] != TRAINER_NODE for c in containers):
            raise ControlPlaneError("must contain the required container for the ancestor: "
                                    "trainer")


class ControlPlane:
    """The objects of a run and the controllers that act on them: the Job controller, the
    training operator (a PaddleJob's pods, made once), JobSet's and Trainer's controllers, the
    garbage collector (foreground deletion). It runs no process: the node (Simulation) starts
    the pods it makes, stops those it deletes and tells it how each ended (pod_ended)."""

    def __init__(self, objects: Sequence[Obj], clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.began = clock()
        self.pods: list[PodState] = []
        self.jobs: list[JobState] = []
        self.jobset: JobSetState | None = None
        self.trainjob: TrainJobState | None = None
        self.events: list[str] = []
        self.services = [o for o in objects if o.get("kind") == "Service"]
        self.config_maps = {(namespace_of(o), name_of(o)): o
                            for o in objects if o.get("kind") == "ConfigMap"}
        self._ordinal = 0
        self._job_serials: dict[tuple[str, str], int] = {}
        kinds = {("batch/v1", "Job"), ("kubeflow.org/v1", "PaddleJob"), (JOBSET_API, "JobSet"),
                 (TRAINER_API, "TrainJob")}
        workloads = [o for o in objects if (o.get("apiVersion"), o.get("kind")) in kinds]
        if len(workloads) != 1:
            raise ValueError("podsim runs exactly one workload: a batch/v1 Job, a PaddleJob, "
                             "a JobSet or a TrainJob")
        [workload] = workloads
        kind = workload["kind"]
        if kind == "Job":
            self.create_job(workload)
        elif kind == "PaddleJob":
            for pod in paddlejob_pods(workload):
                self.add_pod(pod, None)
            self.services += paddlejob_services(workload)
        elif kind == "JobSet":
            self.create_jobset(workload)
        else:
            self.trainjob = TrainJobState(copy.deepcopy(workload))
            self.runtimes = [o for o in objects if o.get("apiVersion") == TRAINER_API and
                             o.get("kind") in ("TrainingRuntime", "ClusterTrainingRuntime")]

    def now(self) -> float:
        return self.clock() - self.began

    # -- objects

    def add_pod(self, pod: Pod, job: JobState | None) -> PodState:
        pod.ip = pod_ip(self._ordinal)
        self._ordinal += 1
        state = PodState(pod=pod, job=job, created=self.now())
        self.pods.append(state)
        if job is not None:
            job.pods.append(state)
        return state

    def create_job(self, job: Obj) -> JobState:
        """The API server's part: validation (pkg/apis/batch/validation: a podFailurePolicy
        needs restartPolicy Never), a uid (a Job made again under its name gets another)."""
        spec = job["spec"]
        restart = spec["template"]["spec"].get("restartPolicy")
        if spec.get("podFailurePolicy") is not None and restart != "Never":
            raise ControlPlaneError(f'Job {name_of(job)}: spec.template.spec.restartPolicy: '
                                    f'Invalid value: "{restart}": only "Never" is supported '
                                    'when podFailurePolicy is specified')
        if restart == "OnFailure":
            raise ValueError("restartPolicy OnFailure (a container restarted in place) is not "
                             "simulated")
        key = (namespace_of(job), name_of(job))
        serial = self._job_serials.get(key, 0)
        self._job_serials[key] = serial + 1
        obj = copy.deepcopy(job)
        seed = f"podsim/job/{key[0]}/{key[1]}" + (f"/{serial}" if serial else "")
        obj["metadata"]["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, seed))
        state = JobState(obj=obj, created=self.now(), sync_due=self.now())
        self.jobs.append(state)
        return state

    def create_jobset(self, jobset: Obj) -> None:
        obj = jobset_defaults(jobset)
        uid = str(uuid.uuid5(uuid.NAMESPACE_URL,
                             f"podsim/jobset/{namespace_of(obj)}/{name_of(obj)}"))
        obj["metadata"]["uid"] = uid
        self.jobset = JobSetState(obj=obj, uid=uid)

    def delete_pod(self, pod: PodState) -> bool:
        """Graceful deletion: the deletionTimestamp; the kubelet then stops the containers
        (SIGTERM, the grace period, SIGKILL) and the object goes once they have stopped."""
        if pod.deleted is not None or pod.gone:
            return False
        pod.deleted = self.now()
        self.pod_changed(pod)
        return True

    def evict_pod(self, pod: PodState, reason: str, message: str) -> None:
        """The Eviction API (pkg/registry/core/pod/storage/eviction.go): the DisruptionTarget
        condition first, then the pod's deletion."""
        set_condition(pod.conditions, condition("DisruptionTarget", reason, message,
                                                self.now()))
        self.delete_pod(pod)

    def delete_job(self, job: JobState) -> bool:
        """Deletion with propagationPolicy Foreground (JobSet's deleteJobs): the garbage
        collector deletes its pods; the Job goes once they are gone."""
        if job.deleting or job.gone:
            return False
        job.deleting = True
        for pod in job.pods:
            self.delete_pod(pod)
        return True

    def pod_changed(self, pod: PodState) -> None:
        """A pod event: its Job's sync, batched (enqueueSyncJobBatched: syncJobBatchPeriod)."""
        job = pod.job
        if job is not None and not job.gone:
            due = self.now() + JOB_SYNC_BATCH
            job.sync_due = due if job.sync_due is None else min(job.sync_due, due)

    def pod_ended(self, pod: PodState, exit_code: int) -> None:
        """The kubelet's report: the container has stopped with this code. A pod that will not
        run again is Succeeded if it exited 0, else Failed, deleted or not (getPhase)."""
        pod.exit_code = exit_code
        pod.ended_at = self.now()
        pod.ended_boot = boot_seconds()
        pod.phase = "Succeeded" if exit_code == 0 else "Failed"
        self.pod_changed(pod)

    # -- controllers

    def reconcile(self) -> bool:
        """Every controller until none has anything more to do now; whether any did."""
        changed_at_all = False
        for _ in range(1000):
            changed = False
            if self.trainjob is not None:
                changed |= self.sync_trainjob(self.trainjob)
            if self.jobset is not None:
                changed |= self.sync_jobset(self.jobset)
            for job in list(self.jobs):
                changed |= self.sync_job(job)
            changed |= self.collect_garbage()
            if not changed:
                return changed_at_all
            changed_at_all = True
        raise RuntimeError("podsim's controllers do not settle")

    def next_due(self) -> float | None:
        """When a controller has something to do next without any event (a batched sync, a
        Job's activeDeadlineSeconds), or None."""
        times = [job.sync_due for job in self.jobs if job.sync_due is not None and not job.gone]
        for job in self.jobs:
            deadline = job.spec.get("activeDeadlineSeconds")
            if deadline is not None and job.started is not None and not job.gone \
                    and not job.deleting and not job.finished \
                    and not find_condition(job.conditions, "FailureTarget"):
                times.append(job.started + float(deadline))
        return min(times, default=None)

    def busy(self) -> bool:
        """Whether a controller has a sync queued (a pod event not yet acted on)."""
        return any(job.sync_due is not None and not job.gone for job in self.jobs)

    def sync_job(self, job: JobState) -> bool:
        """The Job controller's syncJob, for an Indexed Job whose pods it does not replace:
        the pods at its first sync; each pod's end counted once; a failure's reason, in the
        order syncJob decides it (an earlier FailureTarget; a podFailurePolicy FailJob match;
        more failed pods than the backoffLimit; past activeDeadlineSeconds) first recorded as
        the interim FailureTarget, the active pods deleted, and Failed (the same reason and
        message) written only once none of them is terminating (enactJobFinished, with
        JobManagedBy/JobPodReplacementPolicy on); every index succeeded: SuccessCriteriaMet,
        then Complete. A pod with a podFailurePolicy counts as failed once its phase is Failed;
        without one, from its deletion on (isPodFailed)."""
        now = self.now()
        spec = job.spec
        deadline = spec.get("activeDeadlineSeconds")
        past_deadline = (deadline is not None and job.started is not None
                         and now >= job.started + float(deadline))
        if job.gone or job.deleting or job.finished:
            job.sync_due = None
            return False
        if not past_deadline and (job.sync_due is None or job.sync_due > now):
            return False
        job.sync_due = None
        changed = False
        if job.started is None:
            job.started = now
            if not spec.get("suspend"):
                for new in indexed_job_pods(job.obj):
                    self.add_pod(new, job)
            changed = True
        policy = spec.get("podFailurePolicy")
        for pod in job.pods:
            if pod.counted:
                continue
            if pod.phase == "Succeeded":
                pod.counted = True
                job.succeeded.add(pod.index or 0)
            elif pod.phase == "Failed" or (policy is None and pod.deleted is not None):
                pod.counted = True
                message, counts = job_failure_policy_match(policy, pod)
                job.fail_job_message = job.fail_job_message or message
                job.failed += int(counts)
            else:
                continue
            changed = True
        target = find_condition(job.conditions, "FailureTarget")
        if target is None:
            backoff_limit = int(spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT))
            reason, message = None, ""
            if job.fail_job_message is not None:
                reason, message = "PodFailurePolicy", job.fail_job_message
            elif job.failed > backoff_limit:
                reason, message = ("BackoffLimitExceeded",
                                   "Job has reached the specified backoff limit")
            elif past_deadline:
                reason, message = ("DeadlineExceeded",
                                   "Job was active longer than specified deadline")
            if reason is not None:
                target = condition("FailureTarget", reason, message, now)
                job.conditions.append(target)
                changed = True
        completions = int(spec.get("completions") or spec.get("parallelism") or 1)
        met = find_condition(job.conditions, "SuccessCriteriaMet")
        if target is None and met is None and len(job.succeeded) >= completions:
            met = condition("SuccessCriteriaMet", "CompletionsReached",
                            "Reached expected number of succeeded pods", now)
            job.conditions.append(met)
            changed = True
        ending = target or met
        if ending is None:
            return changed
        for pod in job.pods:
            if not pod.terminal:
                changed |= self.delete_pod(pod)
        if not any(pod.terminating for pod in job.pods):
            final = "Failed" if ending is target else "Complete"
            job.conditions.append(condition(final, ending["reason"], ending["message"], now))
            changed = True
        return changed

    def collect_garbage(self) -> bool:
        """Foreground deletion: a Job being deleted goes once all its pods are gone."""
        changed = False
        for job in self.jobs:
            if job.deleting and not job.gone and all(pod.gone for pod in job.pods):
                job.gone = True
                changed = True
        return changed

    # -- JobSet

    def sync_jobset(self, js: JobSetState) -> bool:
        """JobSet's reconcile (jobset_controller.go): its child Jobs sorted by their
        restart-attempt label against status.restarts (getChildJobs: lower is `previous`);
        finished: its active Jobs deleted; else the previous ones deleted (foreground), the
        RestartingJobSet condition lifted once all Jobs are ready, a failed Job handled by the
        failure policy before any success, the success policy, the headless Service, and any
        Job of the current attempt that does not exist under its name (constructJobsFromTemplate,
        shouldCreateJob: an old Job still being deleted holds its name)."""
        mine = [j for j in self.jobs if not j.gone and j.labels.get(JOBSET_NAME_KEY) == js.name]
        previous = [j for j in mine if int(j.labels[RESTARTS_KEY]) < js.restarts]
        current = [j for j in mine if j not in previous]
        failed = [j for j in current if j.finished == "Failed"]
        successful = [j for j in current if j.finished == "Complete"]
        changed = False
        if js.terminal_state:
            for job in current:
                if not job.finished:
                    changed |= self.delete_job(job)
            return changed
        for job in previous:
            changed |= self.delete_job(job)
        if find_condition(js.conditions, "RestartingJobSet") and self.jobs_ready(js, current):
            changed |= set_condition(js.conditions, condition(
                "RestartingJobSet", "JobsReady", "all jobs are ready", self.now(), "False"))
        if failed:
            self.execute_failure_policy(js, failed)
            return True
        if successful and self.execute_success_policy(js, successful):
            return True
        network = js.spec.get("network") or {}
        if not js.service_made and network.get("enableDNSHostnames"):
            js.service_made = True
            self.services.append(self.jobset_service(js))
            changed = True
        policy = js.spec.get("failurePolicy") or {}
        if previous and policy.get("restartStrategy") == "BlockingRecreate":
            return changed
        names = {j.name for j in mine}
        for rjob in js.spec["replicatedJobs"]:
            for index in range(int(rjob["replicas"])):
                name = f"{js.name}-{rjob['name']}-{index}"
                if name in names or (name, js.restarts) in js.unmade:
                    continue
                try:
                    self.create_job(self.construct_job(js, rjob, index))
                except ControlPlaneError as refused:
                    js.unmade.add((name, js.restarts))
                    self.events.append(f"JobSet {js.name}: JobCreationFailed: {refused}")
                changed = True
        return changed

    def jobs_ready(self, js: JobSetState, current: Sequence[JobState]) -> bool:
        """allJobsReady: every Job of the attempt has all its pods running or succeeded."""
        total = sum(int(r["replicas"]) for r in js.spec["replicatedJobs"])
        ready = [j for j in current if j.pods and len(
            [p for p in j.pods if p.started and p.phase in ("Running", "Succeeded")]
        ) >= int(j.spec.get("parallelism", 1))]
        return len(ready) >= total

    def jobset_service(self, js: JobSetState) -> Obj:
        """createHeadlessSvcIfNecessary: named after the subdomain, selecting the JobSet's pods
        by its name alone."""
        network = js.spec["network"]
        return {"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": network.get("subdomain") or js.name,
                             "namespace": namespace_of(js.obj)},
                "spec": {"clusterIP": "None", "selector": {JOBSET_NAME_KEY: js.name},
                         "publishNotReadyAddresses": network.get("publishNotReadyAddresses",
                                                                 True)}}

    def construct_job(self, js: JobSetState, rjob: Obj, index: int) -> Obj:
        """constructJob: the replicated Job's template under <jobset>-<rjob>-<index>, the
        JobSet's labels and annotations on the Job and on its pod template
        (labelAndAnnotateObject, restart-attempt = status.restarts now), and the network's
        subdomain on its pods when DNS hostnames are enabled."""
        template = rjob["template"]
        name = f"{js.name}-{rjob['name']}-{index}"
        namespace = namespace_of(js.obj)
        rjobs = js.spec["replicatedJobs"]
        group = rjob["groupName"]
        in_group = [r for r in rjobs if r["groupName"] == group]
        before = rjobs[:rjobs.index(rjob)]
        values = {
            JOBSET_NAME_KEY: js.name, JOBSET_UID_KEY: js.uid,
            REPLICATED_JOB_NAME_KEY: rjob["name"], RESTARTS_KEY: str(js.restarts),
            REPLICATED_JOB_REPLICAS_KEY: str(rjob["replicas"]),
            GLOBAL_REPLICAS_KEY: str(sum(int(r["replicas"]) for r in rjobs)),
            JOBSET_JOB_INDEX_KEY: str(index),
            JOB_KEY: hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest(),
            JOB_GLOBAL_INDEX_KEY: str(sum(int(r["replicas"]) for r in before) + index),
            GROUP_NAME_KEY: group,
            GROUP_REPLICAS_KEY: str(sum(int(r["replicas"]) for r in in_group)),
            JOB_GROUP_INDEX_KEY: str(sum(int(r["replicas"]) for r in
                                         in_group[:in_group.index(rjob)]) + index),
        }
        spec = copy.deepcopy(template["spec"])
        pod_metadata = spec["template"].setdefault("metadata", {})
        pod_metadata["labels"] = {**(pod_metadata.get("labels") or {}), **values}
        pod_metadata["annotations"] = {**(pod_metadata.get("annotations") or {}), **values}
        if (js.spec.get("network") or {}).get("enableDNSHostnames"):
            spec["template"]["spec"]["subdomain"] = js.spec["network"].get("subdomain") \
                or js.name
        metadata = template.get("metadata") or {}
        return {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": name, "namespace": namespace,
                             "labels": {**(metadata.get("labels") or {}), **values},
                             "annotations": {**(metadata.get("annotations") or {}), **values}},
                "spec": spec}

    def execute_failure_policy(self, js: JobSetState, failed: Sequence[JobState]) -> None:
        """executeFailurePolicy (failure_policy.go): no failurePolicy fails the JobSet
        (FailedJobs); else the first rule, in order, that a failed Job matches (its Failed
        condition's reason in onJobFailureReasons, its replicated Job in targetReplicatedJobs;
        the earliest failure among several), none: RestartJobSet. FailJobSet fails it;
        RestartJobSet fails it (ReachedMaxRestarts) once restartsCountTowardsMax >= maxRestarts,
        else counts a restart; RestartJobSetAndIgnoreMaxRestarts restarts without counting."""
        now = self.now()
        policy = js.spec.get("failurePolicy")

        def failure(job: JobState) -> Obj:
            found = find_condition(job.conditions, "Failed")
            assert found is not None
            return found

        def first_failed(jobs: Sequence[JobState]) -> JobState:
            return min(jobs, key=lambda j: failure(j)["lastTransitionTime"])

        if policy is None:
            job = first_failed(failed)
            self.fail_jobset(js, "FailedJobs", "jobset failed due to one or more job failures "
                             f"(first failed job: {job.name})")
            return
        rule: Obj | None = None
        matched: JobState | None = None
        for candidate in policy.get("rules", []):
            applicable = [
                j for j in failed
                if (not candidate.get("onJobFailureReasons")
                    or failure(j)["reason"] in candidate["onJobFailureReasons"])
                and (not candidate.get("onJobFailureMessagePatterns")
                     or any(re.search(p, failure(j)["message"])
                            for p in candidate["onJobFailureMessagePatterns"]))
                and (not candidate.get("targetReplicatedJobs")
                     or j.labels.get(REPLICATED_JOB_NAME_KEY)
                     in candidate["targetReplicatedJobs"])]
            if applicable:
                rule, matched = candidate, first_failed(applicable)
                break
        job = matched or first_failed(failed)
        action = rule["action"] if rule else "RestartJobSet"
        if action == "FailJobSet":
            self.fail_jobset(js, "FailJobSetFailurePolicyAction",
                             "applying FailJobSet failure policy action "
                             f"(first failed job: {job.name})")
            return
        if action == "RestartJobSet" and \
                js.restarts_count_towards_max >= int(policy.get("maxRestarts", 0)):
            self.fail_jobset(js, "ReachedMaxRestarts", "jobset failed due to reaching max "
                             f"number of restarts (first failed job: {job.name})")
            return
        if action not in ("RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts"):
            raise ValueError(f"JobSet failure policy action {action} is not simulated")
        js.restarts += 1
        if action == "RestartJobSet":
            js.restarts_count_towards_max += 1
        reason = f"FailurePolicy_{rule['name']}" if rule else "DefaultFailurePolicy"
        set_condition(js.conditions, condition(
            "RestartingJobSet", reason, f"applying {action} failure policy action "
            f"(first failed job: {job.name})", now))
        self.events.append(f"JobSet {js.name}: {action} ({reason}): restarts {js.restarts}")

    def fail_jobset(self, js: JobSetState, reason: str, message: str) -> None:
        """setJobSetFailedCondition: Failed, RestartingJobSet False, terminalState Failed."""
        now = self.now()
        set_condition(js.conditions, condition("Failed", reason, message, now))
        if find_condition(js.conditions, "RestartingJobSet"):
            set_condition(js.conditions, condition("RestartingJobSet", "JobSetFailed",
                                                   "jobset failed", now, "False"))
        js.terminal_state = "Failed"

    def execute_success_policy(self, js: JobSetState, successful: Sequence[JobState]) -> bool:
        """executeSuccessPolicy (success_policy.go): operator All, every Job of the targeted
        replicated Jobs (all without targets) Complete; Any, one of them."""
        policy = js.spec["successPolicy"]
        targets = policy.get("targetReplicatedJobs") or []

        def targeted(name: str) -> bool:
            return not targets or name in targets
        done = sum(1 for j in successful if targeted(j.labels.get(REPLICATED_JOB_NAME_KEY, "")))
        needed = 1 if policy["operator"] == "Any" else sum(
            int(r["replicas"]) for r in js.spec["replicatedJobs"] if targeted(r["name"]))
        if done < needed:
            return False
        now = self.now()
        set_condition(js.conditions, condition("Completed", "AllJobsCompleted",
                                               "jobset completed successfully", now))
        if find_condition(js.conditions, "RestartingJobSet"):
            set_condition(js.conditions, condition("RestartingJobSet", "JobSetCompleted",
                                                   "jobset completed successfully", now,
                                                   "False"))
        js.terminal_state = "Completed"
        return True

    # -- Trainer

    def sync_trainjob(self, tj: TrainJobState) -> bool:
        """The TrainJob controller: its JobSet, once, from the referenced runtime (runtimeRef
        kind defaults to ClusterTrainingRuntime, apiGroup to trainer.kubeflow.org; a
        TrainingRuntime is looked up in the TrainJob's namespace); then its Complete and Failed
        conditions, the JobSet's Completed and Failed renamed, reason and message kept
        (plugins/jobset/jobset.go, Status)."""
        changed = False
        if not tj.jobset_made:
            tj.jobset_made = True
            ref = tj.obj["spec"]["runtimeRef"]
            kind = ref.get("kind", "ClusterTrainingRuntime")
            if ref.get("apiGroup", "trainer.kubeflow.org") != "trainer.kubeflow.org" or \
                    kind not in ("TrainingRuntime", "ClusterTrainingRuntime"):
                set_condition(tj.conditions, condition(
                    "Failed", "TrainingRuntimeNotSupported",
                    f"unsupported runtime: {kind}", self.now()))
                return True
            found = [r for r in self.runtimes if r["kind"] == kind and name_of(r) == ref["name"]
                     and (kind == "ClusterTrainingRuntime"
                          or namespace_of(r) == namespace_of(tj.obj))]
            if not found:
                self.events.append(f"TrainJob {tj.name}: TrainJobResourcesCreationFailed: "
                                   f"{kind} {ref['name']} not found")
                return True
            validate_training_runtime(found[0])
            self.create_jobset(trainjob_jobset(tj.obj, found[0]))
            changed = True
        if self.jobset is not None:
            for source, target in (("Completed", "Complete"), ("Failed", "Failed")):
                found_condition = find_condition(self.jobset.conditions, source)
                if found_condition is not None:
                    changed |= set_condition(tj.conditions, {**found_condition, "type": target})
        return changed


# -- Cluster DNS ---------------------------------------------------------------------------------


def dns_records(cluster: Cluster,
                terminating: Collection[str] = frozenset()) -> list[tuple[str, str, str]]:
    """(IP, name relative to its namespace, namespace) for each A record of the headless
    Services: `<service>` for every pod selected, `<hostname>.<service>` for each selected pod
    whose spec.hostname is set and whose subdomain is the Service. A pod being deleted (named
    in `terminating`) is not ready, so only a Service with publishNotReadyAddresses keeps it
    (k8s.io/endpointslice, podToEndpoint; CoreDNS answers with ready endpoints only)."""
    records = []
    for service in cluster.services:
        spec = service.get("spec", {})
        if spec.get("clusterIP") != "None" or not spec.get("selector"):
            continue  # no ClusterIP simulation: only headless Services with a selector resolve
        name, namespace = name_of(service), namespace_of(service)
        for pod in cluster.pods:
            if pod.namespace != namespace:
                continue
            if any(pod.labels.get(k) != str(v) for k, v in spec["selector"].items()):
                continue
            if pod.name in terminating and not spec.get("publishNotReadyAddresses"):
                continue
            records.append((pod.ip, name, namespace))
            if pod.spec.get("hostname") and pod.subdomain == name:
                records.append((pod.ip, f"{pod.hostname}.{name}", namespace))
    return records


def cluster_dns_zone(cluster: Cluster,
                     terminating: Collection[str] = frozenset()) -> dict[str, list[str]]:
    """The names the cluster DNS answers, fully qualified and in lower case, with their A
    records. Only these: a short name is found through the pod's search path."""
    zone: dict[str, list[str]] = {}
    for ip, name, namespace in dns_records(cluster, terminating):
        zone.setdefault(f"{name}.{namespace}.svc.{CLUSTER_DOMAIN}".lower(), []).append(ip)
    return zone


QTYPE_A, QTYPE_AAAA, QCLASS_IN = 1, 28, 1
RCODE_NOERROR, RCODE_FORMERR, RCODE_NXDOMAIN, RCODE_NOTIMP = 0, 1, 3, 4
FLAG_RESPONSE, FLAG_AUTHORITATIVE, FLAG_RECURSION_DESIRED = 0x8000, 0x0400, 0x0100
OPCODE_MASK = 0x7800
DNS_HEADER = struct.Struct("!HHHHHH")  # id, flags, qdcount, ancount, nscount, arcount


@dataclass(frozen=True)
class DnsQuestion:
    """A query's one question (RFC 1035, 4.1.2)."""

    query_id: int
    flags: int
    name: str  # in lower case, without the root's trailing dot
    qtype: int
    qclass: int
    wire: bytes  # the question section as sent, which the response repeats


def dns_question(packet: bytes) -> DnsQuestion | None:
    """The question of a query with exactly one, or None for anything else (a response, a
    truncated packet, a compressed or overlong name)."""
    if len(packet) < DNS_HEADER.size:
        return None
    query_id, flags, questions, *_ = DNS_HEADER.unpack_from(packet)
    if flags & FLAG_RESPONSE or questions != 1:
        return None
    labels, offset = [], DNS_HEADER.size
    while offset < len(packet) and packet[offset]:
        length = packet[offset]
        if length > 63 or offset + 1 + length > len(packet):
            return None  # a compression pointer (0xC0...) never starts a question's name
        labels.append(packet[offset + 1:offset + 1 + length])
        offset += 1 + length
    if offset + 5 > len(packet):
        return None
    qtype, qclass = struct.unpack_from("!HH", packet, offset + 1)
    name = b".".join(labels).decode("ascii", errors="replace").lower()
    return DnsQuestion(query_id, flags, name, qtype, qclass,
                       packet[DNS_HEADER.size:offset + 5])


def dns_answer(question: DnsQuestion, zone: Mapping[str, Sequence[str]]) -> tuple[int, list[str]]:
    """(rcode, A records) as CoreDNS answers: NXDOMAIN for a name it does not know, the A
    records for an A query of one it knows, and NODATA (NOERROR, no record) for any other type
    of a known name: a headless Service whose pods have IPv4 addresses only has no AAAA."""
    if question.name not in zone:
        return RCODE_NXDOMAIN, []
    if question.qtype == QTYPE_A and question.qclass == QCLASS_IN:
        return RCODE_NOERROR, list(zone[question.name])
    return RCODE_NOERROR, []


def dns_response(packet: bytes, zone: Mapping[str, Sequence[str]]) -> bytes | None:
    """The response to one query packet, or None when there is nothing to answer (a response,
    or too short to carry an id)."""
    if len(packet) < DNS_HEADER.size:
        return None
    query_id, query_flags, *_ = DNS_HEADER.unpack_from(packet)
    if query_flags & FLAG_RESPONSE:
        return None
    question = dns_question(packet)
    # authoritative for the cluster's zone, recursion not available: what dig shows of CoreDNS
    flags = (FLAG_RESPONSE | FLAG_AUTHORITATIVE
             | query_flags & (OPCODE_MASK | FLAG_RECURSION_DESIRED))
    if question is None:
        return DNS_HEADER.pack(query_id, flags | RCODE_FORMERR, 0, 0, 0, 0)
    if query_flags & OPCODE_MASK:  # only standard queries (opcode 0)
        return DNS_HEADER.pack(query_id, flags | RCODE_NOTIMP, 0, 0, 0, 0)
    rcode, addresses = dns_answer(question, zone)
    records = b"".join(
        # the name as a pointer to the question's (offset 12), type A, class IN, TTL, 4 bytes
        struct.pack("!HHHIH", 0xC000 | DNS_HEADER.size, QTYPE_A, QCLASS_IN, DNS_TTL, 4)
        + socket.inet_aton(address) for address in addresses)
    header = DNS_HEADER.pack(query_id, flags | rcode, 1, len(addresses), 0, 0)
    return header + question.wire + records


def dns_log_line(seconds: float, packet: bytes, response: bytes | None) -> str:
    """One query as the server's log shows it, four words: seconds since it was ready, the
    question's type and name (`- -` if unreadable), the answer's rcode (`-`: none sent)."""
    question = dns_question(packet)
    types = {QTYPE_A: "A", QTYPE_AAAA: "AAAA", 12: "PTR", 33: "SRV"}
    asked = f"{types.get(question.qtype, question.qtype)} {question.name}" if question else "- -"
    rcode = DNS_HEADER.unpack_from(response)[1] & 0xF if response else None
    names = {RCODE_NOERROR: "NOERROR", RCODE_FORMERR: "FORMERR", RCODE_NXDOMAIN: "NXDOMAIN",
             RCODE_NOTIMP: "NOTIMP", None: "-"}
    return f"{seconds:.3f} {asked} {names.get(rcode, rcode)}"


def serve_cluster_dns(config_file: str) -> int:
    """The cluster DNS server, run in the pods' network namespace (see start_cluster_dns).

    It binds the nameserver address, then says `ready` on stdout. Its zone starts empty; each
    line on its stdin, `{"zone": {...}}`, is its zone from then on (the names the EndpointSlices
    list now). It logs each query on stderr and exits when its stdin closes: the run is over."""
    config = json.loads(Path(config_file).read_text())
    zone: dict[str, list[str]] = {}
    pending = b""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server, \
            selectors.DefaultSelector() as selector:
        server.bind((config["address"], 53))
        ready = time.monotonic()
        print("ready", flush=True)
        selector.register(server, selectors.EVENT_READ)
        selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj is not server:
                    chunk = os.read(sys.stdin.fileno(), 65536)
                    if not chunk:
                        return 0
                    *lines, pending = (pending + chunk).split(b"\n")
                    for line in lines:
                        if line.strip():
                            zone = json.loads(line)["zone"]
                    continue
                packet, client = server.recvfrom(4096)
                response = dns_response(packet, zone)
                if response:
                    server.sendto(response, client)
                print(dns_log_line(time.monotonic() - ready, packet, response), file=sys.stderr,
                      flush=True)


def hosts_file(pod: Pod) -> str:
    """The pod's /etc/hosts as the kubelet writes it (managedHostsFileContent): localhost, and
    the pod's own name; every other name is the cluster DNS's."""
    own = pod.hostname
    if pod.subdomain:
        own = f"{pod.hostname}.{pod.subdomain}.{pod.namespace}.svc.{CLUSTER_DOMAIN}\t{pod.hostname}"
    return "".join(f"{line}\n" for line in (
        "# Kubernetes-managed hosts file.",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "fe00::0\tip6-localnet",
        "fe00::0\tip6-mcastprefix",
        "fe00::1\tip6-allnodes",
        "fe00::2\tip6-allrouters",
        f"{pod.ip}\t{own}",
    ))


def resolv_conf(pod: Pod) -> str:
    """The kubelet's resolv.conf for dnsPolicy ClusterFirst (search path, nameserver, ndots:5),
    with podsim's own timeout and attempts: should its DNS server be gone, a lookup fails in a
    second, not in glibc's 5 s times 2 attempts."""
    domain = CLUSTER_DOMAIN
    return (f"search {pod.namespace}.svc.{domain} svc.{domain} {domain}\n"
            f"nameserver {CLUSTER_DNS_IP}\noptions ndots:5 timeout:1 attempts:1\n")


def hosts_sources(nsswitch: str) -> list[str]:
    """The sources of the `hosts:` database in an nsswitch.conf, in order, without actions."""
    for line in nsswitch.splitlines():
        words = line.split("#", 1)[0].split()
        if words and words[0] == "hosts:":
            return [w for w in words[1:] if not w.startswith("[")]
    return []


def image_nsswitch_conf(host_nsswitch: str) -> str | None:
    """None when this machine's nsswitch.conf, which the pods' image root shows, looks up hosts
    as a Debian-based image does (`files dns`); else the one to mount instead. Another source
    would change what a pod resolves (myhostname answers the pod's own hostname with loopback
    addresses; mdns4_minimal [NOTFOUND=return] ends a `.local` lookup before dns)."""
    if hosts_sources(host_nsswitch) == ["files", "dns"]:
        return None
    others = [line for line in host_nsswitch.splitlines() if line.split()[:1] != ["hosts:"]]
    return "\n".join([*others, "hosts:          files dns"]) + "\n"


# -- The kubelet: env ----------------------------------------------------------------------------


def expand(text: str, *contexts: Mapping[str, str]) -> str:
    """`$(VAR)` expansion as Kubernetes does it (third_party/forked/golang/expansion/expand.go,
    read at commit fde22c3f9aacfd260225a9741de123a41157b7c0: a rune after `$` is kept whole,
    kubernetes/kubernetes#136325): a name found in the first context that has it is replaced,
    an unknown one stays `$(VAR)`, `$$` is `$`, and any other `$` (incomplete `$(`, `$x`, a
    trailing `$`) stays as written. Checked against expand_test.go's cases in
    tests/test_explain_expansion.py."""
    out: list[str] = []
    cursor = 0
    while cursor < len(text):
        char = text[cursor]
        if char != "$" or cursor + 1 == len(text):
            out.append(char)
            cursor += 1
            continue
        following = text[cursor + 1]
        close = text.find(")", cursor + 2) if following == "(" else -1
        if following == "$":
            out.append("$")
        elif close >= 0:
            name = text[cursor + 2:close]
            out.append(next((c[name] for c in contexts if name in c), f"$({name})"))
            cursor = close + 1
            continue
        else:
            out.append("$" + following)
        cursor += 2
    return "".join(out)


def field_ref(path: str, pod: Pod) -> str:
    """valueFrom.fieldRef, as the kubelet resolves it (podFieldSelectorRuntimeValue)."""
    subscript = re.fullmatch(r"metadata\.(labels|annotations)\['(.*)'\]", path)
    if subscript:
        source = pod.labels if subscript[1] == "labels" else pod.annotations
        return str(source.get(subscript[2], ""))
    values = {
        "metadata.name": pod.name, "metadata.namespace": pod.namespace, "metadata.uid": pod.uid,
        "status.podIP": pod.ip, "status.podIPs": pod.ip, "status.hostIP": NODE_IP,
        "status.hostIPs": NODE_IP, "spec.nodeName": str(pod.spec.get("nodeName") or NODE_NAME),
        "spec.serviceAccountName": str(pod.spec.get("serviceAccountName") or "default"),
    }
    if path not in values:
        raise ValueError(f"fieldRef {path!r} is not supported by the kubelet (or podsim)")
    return values[path]


_QUANTITY = re.compile(
    r"([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")
_QUANTITY_SUFFIX = {"": Decimal(1), "n": Decimal("1e-9"), "u": Decimal("1e-6"),
                    "m": Decimal("1e-3"), "k": Decimal(10**3), "M": Decimal(10**6),
                    "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15),
                    "E": Decimal(10**18), "Ki": Decimal(2**10), "Mi": Decimal(2**20),
                    "Gi": Decimal(2**30), "Ti": Decimal(2**40), "Pi": Decimal(2**50),
                    "Ei": Decimal(2**60)}


def parse_quantity(text: str) -> Decimal:
    """A Kubernetes resource quantity (`500m`, `2Gi`, `1e3`, ...) as an exact number."""
    match = _QUANTITY.fullmatch(text.strip())
    if not match:
        raise ValueError(f"not a Kubernetes quantity: {text!r}")
    if match[2]:
        return Decimal(match[1] + match[2])
    return Decimal(match[1]) * _QUANTITY_SUFFIX[match[3] or ""]


def node_allocatable(resource: str) -> str:
    """What the kubelet uses for an unset limit: the node's allocatable amount."""
    if resource == "cpu":
        return str(os.cpu_count() or 1)
    if resource == "memory":
        meminfo = Path("/proc/meminfo").read_text()
        kib = re.search(r"MemTotal:\s+(\d+) kB", meminfo)
        return f"{kib[1] if kib else 0}Ki"
    if resource == "ephemeral-storage":
        return str(shutil.disk_usage("/").total)
    raise ValueError(f"resourceFieldRef resource {resource!r} is not supported")


def resource_field_ref(ref: Obj, container: Obj) -> str:
    """valueFrom.resourceFieldRef: the container's limit or request (a request defaults to the
    limit, a limit to the node's allocatable), divided by the divisor and rounded up."""
    kind, _, resource = str(ref["resource"]).partition(".")
    limits = container.get("resources", {}).get("limits", {})
    requests = container.get("resources", {}).get("requests", {})
    if kind == "limits":
        text = limits.get(resource) or node_allocatable(resource)
    elif kind == "requests":
        text = requests.get(resource) or limits.get(resource) or "0"
    else:
        raise ValueError(f"resourceFieldRef resource {ref['resource']!r} is not supported")
    value, divisor = parse_quantity(str(text)), parse_quantity(str(ref.get("divisor", "1")))
    if resource == "cpu":  # convertResourceCPUToString works in millicores
        value, divisor = value * 1000, divisor * 1000
    value_units, divisor_units = math.ceil(value), math.ceil(divisor)  # Quantity.Value rounds up
    return str(-(-value_units // divisor_units))


def config_map_key_ref(ref: Obj, pod: Pod,
                       config_maps: Mapping[tuple[str, str], Obj]) -> str | None:
    """valueFrom.configMapKeyRef; None when it is optional and missing (the var is not set)."""
    config_map = config_maps.get((pod.namespace, str(ref["name"])))
    data = {**(config_map or {}).get("data", {}),
            **{k: base64.b64decode(v).decode() for k, v in
               (config_map or {}).get("binaryData", {}).items()}}
    if ref["key"] in data:
        return str(data[ref["key"]])
    if ref.get("optional"):
        return None
    raise PodConfigError(f"configMapKeyRef {ref['name']}/{ref['key']} not found")


def env_from(source: Obj, pod: Pod, config_maps: Mapping[tuple[str, str], Obj]) -> dict[str, str]:
    """One envFrom source (configMapRef): its keys, prefixed, that are valid env var names."""
    if "configMapRef" not in source:
        raise ValueError(f"envFrom source not simulated: {sorted(source)}")
    ref = source["configMapRef"]
    config_map = config_maps.get((pod.namespace, str(ref["name"])))
    if config_map is None:
        if ref.get("optional"):
            return {}
        raise PodConfigError(f"envFrom ConfigMap {ref['name']} not found")
    prefix = str(source.get("prefix", ""))
    pairs = ((prefix + k, str(v)) for k, v in config_map.get("data", {}).items())
    return {k: v for k, v in pairs if ENV_NAME.fullmatch(k)}


def container_env(container: Obj, pod: Pod, config_maps: Mapping[tuple[str, str], Obj],
                  service_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The container's environment as the kubelet builds it (makeEnvironmentVariables): envFrom,
    then env in order, each `value` expanded against the variables defined before it and the
    service env, each `valueFrom` resolved (never expanded); then the remaining service env."""
    service = dict(service_env or {})
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(env_from(source, pod, config_maps))
    for var in container.get("env", []):
        value = str(var.get("value") or "")
        if value:
            env[var["name"]] = expand(value, env, service)
        elif "valueFrom" in var:
            resolved = value_from(var["valueFrom"], pod, container, config_maps)
            if resolved is not None:
                env[var["name"]] = resolved
        else:
            env[var["name"]] = ""
    return {**service, **env}


def value_from(source: Obj, pod: Pod, container: Obj,
               config_maps: Mapping[tuple[str, str], Obj]) -> str | None:
    if "fieldRef" in source:
        return field_ref(str(source["fieldRef"]["fieldPath"]), pod)
    if "resourceFieldRef" in source:
        return resource_field_ref(source["resourceFieldRef"], container)
    if "configMapKeyRef" in source:
        return config_map_key_ref(source["configMapKeyRef"], pod, config_maps)
    raise ValueError(f"env valueFrom source not simulated: {sorted(source)}")


def container_argv(container: Obj, env: Mapping[str, str]) -> list[str]:
    """command + args, each expanded against the container's env (the image has no ENTRYPOINT
    or CMD, so `command` is required)."""
    if not container.get("command"):
        raise ValueError(f"container {container.get('name')!r}: podsim's image has no ENTRYPOINT")
    return [expand(str(a), env) for a in [*container["command"], *container.get("args", [])]]


def image_env(python: Path, hostname: str) -> dict[str, str]:
    """The image's environment (PATH with the interpreter's directory first, HOME), and the
    HOSTNAME that containerd's CRI adds; the container's env overrides them."""
    return {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": "/root", "HOSTNAME": hostname}


# -- The kubelet: volumes ------------------------------------------------------------------------


def config_map_files(config_map: Obj) -> dict[str, bytes]:
    files = {k: str(v).encode() for k, v in config_map.get("data", {}).items()}
    files.update({k: base64.b64decode(v) for k, v in config_map.get("binaryData", {}).items()})
    return files


def write_config_map_volume(source: Obj, config_map: Obj | None, path: Path) -> None:
    """The files of a configMap volume: every key, or just `items` (at their paths), with
    `defaultMode` (0644 unless set) or an item's `mode`."""
    path.mkdir(parents=True)
    optional = bool(source.get("optional"))
    if config_map is None:
        if optional:
            return
        raise PodConfigError(f"configMap volume: ConfigMap {source['name']} not found")
    files = config_map_files(config_map)
    default_mode = int(source.get("defaultMode", 0o644))
    items = source.get("items") or [{"key": key, "path": key} for key in files]
    for item in items:
        if item["key"] not in files:
            if optional:
                continue
            raise PodConfigError(f"configMap volume: key {item['key']} not in {source['name']}")
        target = path / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[item["key"]])
        target.chmod(int(item.get("mode", default_mode)))


def prepare_volumes(pod: Pod, cluster: Cluster, pod_dir: Path,
                    claims_dir: Path) -> dict[str, tuple[Path, bool]]:
    """Each volume's host directory and whether it is read-only: a fresh directory per pod for
    emptyDir and configMap (configMap volumes are always read-only), one directory per claim
    name, shared by all pods, for persistentVolumeClaim."""
    volumes: dict[str, tuple[Path, bool]] = {}
    for volume in pod.spec.get("volumes", []):
        path = pod_dir / "volumes" / volume["name"]
        if "emptyDir" in volume:
            path.mkdir(parents=True)
            volumes[volume["name"]] = (path, False)
        elif "configMap" in volume:
            source = volume["configMap"]
            config_map = cluster.config_maps.get((pod.namespace, str(source["name"])))
            write_config_map_volume(source, config_map, path)
            volumes[volume["name"]] = (path, True)
        elif "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]
            path = claims_dir / str(claim["claimName"])
            path.mkdir(parents=True, exist_ok=True)
            volumes[volume["name"]] = (path, bool(claim.get("readOnly")))
        else:
            raise ValueError(f"volume {volume['name']!r}: type not simulated")
    return volumes


def volume_mounts(container: Obj, volumes: Mapping[str, tuple[Path, bool]],
                  env: Mapping[str, str]) -> list[Obj]:
    """The container's volumeMounts as bind mounts: `subPath` (or `subPathExpr`, expanded
    against the env) selects, and creates if missing, a path inside the volume."""
    mounts = []
    for mount in container.get("volumeMounts", []):
        source, read_only = volumes[mount["name"]]
        sub_path = mount.get("subPath") or expand(str(mount.get("subPathExpr", "")), env)
        if sub_path:
            source = source / sub_path
            if not source.exists():
                source.mkdir(parents=True)
        mounts.append({"source": str(source), "target": str(mount["mountPath"]),
                       "read_only": read_only or bool(mount.get("readOnly"))})
    return mounts


# -- Plans: what each pod's PID 1 is told to do ---------------------------------------------------


def container_plan(container: Obj, pod: Pod, cluster: Cluster, *, pod_dir: Path,
                   volumes: Mapping[str, tuple[Path, bool]], image_fs: Mapping[str, Path],
                   python: Path) -> Obj:
    env = container_env(container, pod, cluster.config_maps)
    # the interpreter's environment is part of the "image": mounted where it is, since the
    # overlay root holds only the root file system (a venv under another mount, such as a tmpfs
    # /tmp, would be missing)
    interpreter = {str(python.parent.parent): python.parent.parent}
    image = [{"source": str(host), "target": target, "read_only": True}
             for target, host in {**interpreter, **image_fs}.items()]
    etc = [{"source": str(pod_dir / name), "target": f"/etc/{name}", "read_only": False}
           for name in ("hosts", "hostname", "resolv.conf", "nsswitch.conf")
           if (pod_dir / name).exists()]
    rootfs = pod_dir / f"rootfs-{container['name']}"
    rootfs.mkdir()
    return {
        "name": container["name"],
        "rootfs": str(rootfs),
        "mounts": [*image, *volume_mounts(container, volumes, env), *etc],
        "workdir": str(container.get("workingDir") or "/"),
        "argv": container_argv(container, env),
        "env": {**image_env(python, pod.hostname), **env},
    }


def pod_plan(pod: Pod, cluster: Cluster, *, workdir: Path, image_fs: Mapping[str, Path],
             python: Path) -> Path:
    """Writes the pod's files (hosts, resolv.conf, volumes, plan) and returns the plan's path."""
    pod_dir = workdir / "pods" / pod.name
    pod_dir.mkdir(parents=True)
    (pod_dir / "hosts").write_text(hosts_file(pod))
    (pod_dir / "hostname").write_text(pod.hostname + "\n")
    (pod_dir / "resolv.conf").write_text(resolv_conf(pod))
    host_nsswitch = Path("/etc/nsswitch.conf")  # glibc's default without one puts dns first
    nsswitch = image_nsswitch_conf(host_nsswitch.read_text() if host_nsswitch.exists() else "")
    if nsswitch is not None:
        (pod_dir / "nsswitch.conf").write_text(nsswitch)
    volumes = prepare_volumes(pod, cluster, pod_dir, workdir / "claims")
    containers = pod.spec.get("containers", [])
    if len(containers) != 1:
        raise ValueError(f"pod {pod.name}: podsim runs one container per pod (and init containers)")
    plans = [container_plan(c, pod, cluster, pod_dir=pod_dir, volumes=volumes, image_fs=image_fs,
                            python=python) for c in containers_of(pod.spec)]
    plan = {"hostname": pod.hostname, "pid_namespace_file": str(pod_dir / "pid-namespace"),
            "init_containers": plans[:-1], "container": plans[-1]}
    (pod_dir / "plan.json").write_text(json.dumps(plan, indent=1))
    return pod_dir


def claim_dir(workdir: Path, claim: str) -> Path:
    """The host directory that stands for a PersistentVolumeClaim (shared by all pods)."""
    return workdir / "claims" / claim


# -- Running pods (host side): the node ------------------------------------------------------------


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the simulator dies (PR_SET_PDEATHSIG); the
    pod's parent process then takes its PID 1 with it (pod_parent_main)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def host_tool(name: str) -> str:
    return shutil.which(name, path=HOST_PATH) or name


def start_network() -> subprocess.Popen[bytes]:
    """The cluster network: a network namespace whose only interface is lo, up, held by a
    process that sleeps until killed. Every pod of the run joins it, so the pods reach each
    other's 127.0.<k+1>.1 and ports, and nothing else: not the host's ports, not another run's
    pods, not any address off this machine."""
    script = "ip link set lo up && echo up && exec sleep infinity"
    holder = subprocess.Popen([host_tool("unshare"), "--net", "sh", "-c", script],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              env={"PATH": HOST_PATH}, preexec_fn=_die_with_parent)
    assert holder.stdout is not None
    if holder.stdout.readline() != b"up\n":
        holder.kill()
        holder.wait()
        raise OSError("could not make the cluster's network namespace (unshare --net, ip)")
    return holder


def start_cluster_dns(network: subprocess.Popen[bytes], *,
                      dns_dir: Path) -> subprocess.Popen[bytes]:
    """The cluster DNS server (serve_cluster_dns) in the network namespace, once it says it is
    ready (bound to its address), with an empty zone: update_cluster_dns gives it the names
    the EndpointSlices list. Its log is `dns_dir`/log."""
    dns_dir.mkdir(parents=True)
    config = dns_dir / "config.json"
    config.write_text(json.dumps({"address": CLUSTER_DNS_IP}, indent=1))
    argv = [host_tool("nsenter"), f"--net=/proc/{network.pid}/ns/net",
            sys.executable, "-I", str(Path(__file__).resolve()), "--dns", str(config)]
    with (dns_dir / "log").open("wb") as log:
        server = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=log, env={"PATH": HOST_PATH},
                                  preexec_fn=_die_with_parent)
    assert server.stdout is not None
    if server.stdout.readline() != b"ready\n":
        stop_cluster_dns(server)
        raise OSError(f"the cluster DNS did not start: {(dns_dir / 'log').read_text()}")
    return server


def update_cluster_dns(server: subprocess.Popen[bytes], zone: Mapping[str, Sequence[str]]) -> None:
    """The server's zone from now on: one JSON line on its stdin."""
    assert server.stdin is not None
    server.stdin.write(json.dumps({"zone": zone}).encode() + b"\n")
    server.stdin.flush()


def stop_cluster_dns(server: subprocess.Popen[bytes]) -> None:
    """Close its stdin, which ends it; kill it only if it has not ended after KILL_GRACE."""
    for pipe in (server.stdin, server.stdout):
        if pipe is not None:
            pipe.close()
    try:
        server.wait(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def start_pod(pod_dir: Path, network: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    """The pod's parent process (pod_parent_main) in the run's network namespace; its log,
    the container's stdout and stderr, is `pod_dir`/log."""
    argv = [host_tool("nsenter"), f"--net=/proc/{network.pid}/ns/net",
            sys.executable, "-I", str(Path(__file__).resolve()), "--pod",
            str(pod_dir / "plan.json")]
    with (pod_dir / "log").open("wb") as log:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env={"PATH": HOST_PATH},
                                preexec_fn=_die_with_parent)


def pid_one(proc: subprocess.Popen[bytes]) -> int | None:
    """The host PID of the pod's PID 1 (the parent's only child), None before it exists."""
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def signal_pod(proc: subprocess.Popen[bytes], signum: int) -> bool:
    """Send a signal to the pod's PID 1, as the container runtime does: whether it existed.
    From outside its PID namespace, PID 1 gets a signal it has no handler for only if it is
    SIGKILL (pid_namespaces(7)), as in a container."""
    pid = pid_one(proc)
    if pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)
    return True


def kill_pod(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the pod's PID 1, then wait for its parent: the kernel kills every other
    process of the PID namespace, and PID 1 is reaped (so the parent exits) only once they are
    all gone. Killing the parent itself (before its child exists, or as a last resort) would not
    wait."""
    if not signal_pod(proc, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    try:
        proc.wait(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@dataclass(frozen=True)
class PodResult:
    """A pod of the run as it ended."""

    name: str
    ip: str
    exit_code: int | None  # the container's (128 + a signal); None: podsim killed it at the end
    log: str  # the pod's stdout and stderr
    pid_namespace: str | None  # e.g. "pid:[4026532179]", to check that nothing of it is left
    labels: Mapping[str, str] = field(default_factory=dict)
    phase: str = ""
    conditions: tuple[str, ...] = ()  # the types of its True conditions (DisruptionTarget)
    deleted: bool = False  # a controller or an eviction deleted it
    started_at: float | None = None  # seconds since the run began: its process started
    ended_at: float | None = None  # ... and ended, every process of it with it
    ended_boot: float | None = None  # the same, on boot_seconds' clock (leftover_processes)

    @property
    def index(self) -> int | None:
        value = self.labels.get(JOB_INDEX_KEY)
        return None if value is None else int(value)


def pod_result(pod: PodState) -> PodResult:
    log, namespace = "", None
    if pod.pod_dir is not None:
        log = (pod.pod_dir / "log").read_text(errors="replace")
        namespace_file = pod.pod_dir / "pid-namespace"
        namespace = namespace_file.read_text() if namespace_file.exists() else None
    return PodResult(
        name=pod.name, ip=pod.pod.ip, exit_code=None if pod.killed_at_end else pod.exit_code,
        log=log, pid_namespace=namespace, labels=dict(pod.pod.labels), phase=pod.phase,
        conditions=tuple(c["type"] for c in pod.conditions if c["status"] == "True"),
        deleted=pod.deleted is not None, started_at=pod.started_at, ended_at=pod.ended_at,
        ended_boot=pod.ended_boot)


IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE = 0x2, 0x8, 0x80, 0x100
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC


class Simulation:
    """One run of a job's pods (run_pods is the whole of one), its control plane and node in a
    thread of their own, for a test to act on while it runs: read the pods and the JobSet's or
    TrainJob's status, wait for what a pod writes (wait_for_line), kill a pod's container
    (kill_pod: a crash) or evict a pod (evict_pod: DisruptionTarget, then SIGTERM, the grace
    period, SIGKILL).

    The node does what the kubelet does for the control plane: starts each new pod (its
    address, files, mounts and process, see pod_plan), reports its container's end (its pidfd:
    no polling), stops a deleted pod's container (SIGTERM to its PID 1, SIGKILL once
    terminationGracePeriodSeconds have passed: pkg/kubelet/kuberuntime/kuberuntime_container.go,
    killContainer, the CRI's StopContainer with that timeout) and removes the pod once it has
    stopped. A pod is in its Services' DNS records from `dns_delay` seconds after it was made
    (the EndpointSlice lags) until its phase is Succeeded or Failed, or, for a Service without
    publishNotReadyAddresses, until its deletion (k8s.io/endpointslice, ShouldPodBeInEndpoints
    and podToEndpoint's ready). The run ends when no pod runs or waits to start and no
    controller has anything queued, or after `timeout` seconds: pods still running then are
    killed at once."""

    def __init__(self, objects: Sequence[Obj], *, image_fs: Mapping[str, Path], python: Path,
                 timeout: float, workdir: Path, dns_delay: float = 0.0) -> None:
        self.control = ControlPlane(objects)
        self.image_fs, self.python, self.timeout = dict(image_fs), python, timeout
        self.workdir, self.dns_delay = workdir, dns_delay
        self._lock = threading.Condition(threading.RLock())
        self._wake_r, self._wake_w = os.pipe()
        self._ended_r, self._ended_w = os.pipe()
        self._ended = False
        self._stop = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._network: subprocess.Popen[bytes] | None = None
        self._dns: subprocess.Popen[bytes] | None = None
        self._zone: dict[str, list[str]] = {}
        self._statuses: dict[str, str] = {}

    # -- the test's side

    def __enter__(self) -> Simulation:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._network = start_network()
        try:
            self._dns = start_cluster_dns(self._network, dns_dir=self.workdir / "cluster-dns")
        except BaseException:
            self._network.kill()
            self._network.wait()
            raise
        self._thread = threading.Thread(target=self._run, name="podsim", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the run now (pods still running are killed), and wait until it has ended."""
        with self._lock:
            self._stop = True
        self._wake()
        if self._thread is not None:
            self._thread.join()
        for fd in (self._wake_r, self._wake_w, self._ended_r, self._ended_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wake_r = self._wake_w = self._ended_r = self._ended_w = -1

    def results(self) -> list[PodResult]:
        """Every pod of the run, in the order they were made, once the run has ended."""
        assert self._thread is not None, "not started"
        self._thread.join()
        if self._error is not None:
            raise self._error
        with self._lock:
            return [pod_result(pod) for pod in self.control.pods]

    @property
    def ended(self) -> bool:
        with self._lock:
            return self._ended

    def pods(self) -> list[PodResult]:
        """The pods made so far (their logs as written so far), in the order they were made."""
        with self._lock:
            return [pod_result(pod) for pod in self.control.pods]

    def pod(self, *, index: int, attempt: int | None = None) -> PodResult | None:
        """The newest pod of this completion index (and JobSet restart attempt), if any."""
        found = [p for p in self.pods() if p.index == index and
                 (attempt is None or p.labels.get(RESTARTS_KEY) == str(attempt))]
        return found[-1] if found else None

    def jobset_status(self) -> Obj | None:
        with self._lock:
            return None if self.control.jobset is None else self.control.jobset.status()

    def trainjob_status(self) -> Obj | None:
        with self._lock:
            return None if self.control.trainjob is None else self.control.trainjob.status()

    def events(self) -> list[str]:
        with self._lock:
            return list(self.control.events)

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Whether `predicate` (asked after each change of the run's state) held before the
        run ended or `timeout` seconds passed."""
        with self._lock:
            self._lock.wait_for(lambda: predicate() or self._ended, timeout)
            return predicate()

    def kill_pod(self, name: str) -> None:
        """SIGKILL the pod's container, as a crash (or the OOM killer) would: it exits 137 and
        the pod fails (restartPolicy Never); nothing deletes it."""
        with self._lock:
            pod = self._running_pod(name)
            assert pod.proc is not None
            if not signal_pod(pod.proc, signal.SIGKILL):
                raise RuntimeError(f"pod {name} has no PID 1 yet")
        self._wake()

    def evict_pod(self, name: str, reason: str = "EvictionByEvictionAPI",
                  message: str = "Eviction API: evicting") -> None:
        """What `kubectl drain` (the Eviction API) does to a pod: the DisruptionTarget
        condition, then its deletion; the node stops it as any deleted pod."""
        with self._lock:
            self.control.evict_pod(self._running_pod(name), reason, message)
        self._wake()

    def wait_for_line(self, path: Path, predicate: Callable[[str], bool],
                      timeout: float) -> str | None:
        """The first line of the file at `path` (on the host: in a claim's directory, say)
        that satisfies `predicate`, as soon as it is written (inotify on the file, and on its
        directories under the run's work directory until they exist), or None once the run has
        ended or `timeout` seconds have passed without one."""
        deadline = time.monotonic() + timeout
        watcher = libc().inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if watcher < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        offset, pending = 0, b""
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(watcher, selectors.EVENT_READ)
                selector.register(self._ended_r, selectors.EVENT_READ)
                while True:
                    for directory in [p for p in reversed(path.parents)
                                      if p.is_relative_to(self.workdir)]:
                        libc().inotify_add_watch(watcher, bytes(directory),
                                                 IN_CREATE | IN_MOVED_TO)
                    libc().inotify_add_watch(watcher, bytes(path), IN_MODIFY | IN_CLOSE_WRITE)
                    ended = self.ended
                    if path.exists():
                        with path.open("rb") as handle:
                            handle.seek(offset)
                            data = handle.read()
                        offset += len(data)
                        *lines, pending = (pending + data).split(b"\n")
                        for line in lines:
                            text = line.decode(errors="replace")
                            if predicate(text):
                                return text
                    remaining = deadline - time.monotonic()
                    if ended or remaining <= 0:
                        return None
                    for key, _ in selector.select(remaining):
                        if key.fd == watcher:
                            with contextlib.suppress(BlockingIOError):
                                while os.read(watcher, 65536):
                                    pass
        finally:
            os.close(watcher)

    def _running_pod(self, name: str) -> PodState:
        pod = next((p for p in self.control.pods if p.name == name), None)
        if pod is None or not pod.running or pod.proc is None:
            raise LookupError(f"no running pod {name}")
        return pod

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b".")

    # -- the node's side, in the run's thread

    def _run(self) -> None:
        deadline = self.timeout
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self._wake_r, selectors.EVENT_READ)
                try:
                    while True:
                        with self._lock:
                            self._settle(selector)
                            self._lock.notify_all()
                            if self._stop or self._quiet():
                                break
                            now = self.control.now()
                            wakeup = min([deadline, *self._wakeups(now)])
                        if now >= deadline:
                            break
                        events = selector.select(max(0.0, wakeup - now))
                        with self._lock:
                            for key, _ in events:
                                if key.fd == self._wake_r:
                                    os.read(self._wake_r, 4096)
                                else:
                                    self._reap(key.data, selector)
                finally:
                    with self._lock:
                        self._end(selector)
        except BaseException as error:  # re-raised by results()
            self._error = error
        finally:
            for server in (self._dns,):
                if server is not None:
                    stop_cluster_dns(server)
            if self._network is not None:
                self._network.kill()
                self._network.wait()
            with self._lock:
                self._ended = True
                self._lock.notify_all()
            os.write(self._ended_w, b".")

    def _settle(self, selector: selectors.BaseSelector) -> None:
        """The controllers and the node, until neither has more to do now; then the cluster
        DNS's zone, the new pods started, and the objects' status files."""
        for _ in range(1000):
            self.control.reconcile()
            if not self._sync_node():
                break
        self._update_zone()
        for pod in self.control.pods:
            if not pod.started and not pod.gone and pod.deleted is None:
                self._start(pod, selector)
        self._write_statuses()

    def _sync_node(self) -> bool:
        """Deleted pods: stopped (SIGTERM, SIGKILL after the grace period), then removed."""
        changed = False
        now = self.control.now()
        for pod in self.control.pods:
            if pod.gone:
                continue
            if pod.deleted is not None:
                if not pod.started or pod.terminal:
                    pod.gone = True  # its containers have stopped (or never started)
                    changed = True
                elif pod.proc is not None and pod.sigterm_at is None:
                    pod.sigterm_at = now
                    signal_pod(pod.proc, signal.SIGTERM)
                elif pod.proc is not None and pod.sigterm_at is not None and \
                        not pod.sigkill_sent and now >= pod.sigterm_at + pod.grace_period:
                    pod.sigkill_sent = signal_pod(pod.proc, signal.SIGKILL)
        return changed

    def _start(self, pod: PodState, selector: selectors.BaseSelector) -> None:
        cluster = Cluster(pods=[], services=self.control.services,
                          config_maps=self.control.config_maps)
        pod.pod_dir = pod_plan(pod.pod, cluster, workdir=self.workdir, image_fs=self.image_fs,
                               python=self.python)
        assert self._network is not None
        pod.proc = start_pod(pod.pod_dir, self._network)
        pod.pidfd = os.pidfd_open(pod.proc.pid)
        selector.register(pod.pidfd, selectors.EVENT_READ, pod)
        pod.started = True
        pod.started_at = self.control.now()
        pod.phase = "Running"
        self.control.pod_changed(pod)

    def _reap(self, pod: PodState, selector: selectors.BaseSelector) -> None:
        """The pod's parent has exited: its PID 1, and so every process of the pod, is gone."""
        assert pod.proc is not None and pod.pidfd is not None
        code = pod.proc.wait()
        selector.unregister(pod.pidfd)
        os.close(pod.pidfd)
        pod.pidfd = None
        self.control.pod_ended(pod, code if code >= 0 else 128 - code)

    def _wakeups(self, now: float) -> list[float]:
        """When something is due without an event: a controller's, a SIGKILL after a grace
        period, a pod's DNS records."""
        times = [t for t in [self.control.next_due()] if t is not None]
        for pod in self.control.pods:
            if pod.terminating and pod.sigterm_at is not None and not pod.sigkill_sent:
                times.append(pod.sigterm_at + pod.grace_period)
            if not pod.terminal and not pod.gone and pod.created + self.dns_delay > now:
                times.append(pod.created + self.dns_delay)
        return times

    def _quiet(self) -> bool:
        return not self.control.busy() and not any(
            pod.running or (not pod.started and not pod.gone) for pod in self.control.pods)

    def _end(self, selector: selectors.BaseSelector) -> None:
        for pod in self.control.pods:
            if pod.proc is not None and pod.pidfd is not None:
                if pod.proc.poll() is None:
                    pod.killed_at_end = True
                    kill_pod(pod.proc)
                self._reap(pod, selector)

    def _update_zone(self) -> None:
        now = self.control.now()
        listed = [p for p in self.control.pods  # those about to start included
                  if not p.terminal and not p.gone and now >= p.created + self.dns_delay]
        cluster = Cluster(pods=[p.pod for p in listed], services=self.control.services,
                          config_maps={})
        zone = cluster_dns_zone(cluster, terminating={p.name for p in listed
                                                      if p.deleted is not None})
        if zone != self._zone and self._dns is not None:
            update_cluster_dns(self._dns, zone)
            self._zone = zone

    def _write_statuses(self) -> None:
        """Each object's status, as `kubectl get -o json` would show it, in
        `workdir`/status/<kind>-<name>.json, and the pods in status/pods.json (what a kubectl
        stand-in can read)."""
        objects: list[tuple[str, str, Obj]] = [("job", j.name, j.status())
                                               for j in self.control.jobs if not j.gone]
        if self.control.jobset is not None:
            objects.append(("jobset", self.control.jobset.name, self.control.jobset.status()))
        if self.control.trainjob is not None:
            objects.append(("trainjob", self.control.trainjob.name,
                            self.control.trainjob.status()))
        directory = self.workdir / "status"
        directory.mkdir(exist_ok=True)
        files: dict[str, Obj] = {
            f"{kind}-{name}": {"kind": kind, "metadata": {"name": name}, "status": status}
            for kind, name, status in objects}
        files["pods"] = {"items": [  # the pods that exist, with their logs' paths
            {"metadata": {"name": pod.name, "labels": pod.pod.labels},
             "status": {"phase": pod.phase},
             "log": str(pod.pod_dir / "log") if pod.pod_dir else None}
            for pod in self.control.pods if not pod.gone]}
        for key, content in files.items():
            text = json.dumps(content, indent=1)
            if self._statuses.get(key) != text:
                staging = directory / f".{key}.json"
                staging.write_text(text)
                staging.rename(directory / f"{key}.json")
                self._statuses[key] = text


def run_pods(objects: Sequence[Obj], *, image_fs: Mapping[str, Path], python: Path,
             timeout: float, workdir: Path, dns_delay: float = 0.0) -> list[PodResult]:
    """Run the job's pods (a Simulation) until the run ends: every pod it made, in the order
    they were made. `workdir` (empty or missing) receives the pods' files (`pods/<name>`), the
    cluster DNS's (`cluster-dns/log`: every query and its answer), the objects' status files
    (`status/`) and the claims' directories (see claim_dir)."""
    with Simulation(objects, image_fs=image_fs, python=python, timeout=timeout,
                    workdir=workdir, dns_delay=dns_delay) as simulation:
        return simulation.results()


def simulate_controllers(objects: Sequence[Obj]) -> Cluster:
    """The cluster's first state: the pods and Services the controllers make for the job
    before any pod runs."""
    control = ControlPlane(objects)
    control.reconcile()
    return Cluster(pods=[p.pod for p in control.pods], services=control.services,
                   config_maps=control.config_maps)


def processes_in(pid_namespaces: Sequence[str | None]) -> list[int]:
    """The PIDs (as this process sees them) of processes in any of these PID namespaces."""
    wanted = {ns for ns in pid_namespaces if ns}
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "pid") in wanted:
                    found.append(int(entry.name))
            except OSError:
                continue  # gone meanwhile
    return found


def boot_seconds() -> float:
    """Now, as a process's start time in /proc/<pid>/stat counts (CLOCK_BOOTTIME)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def started_at(pid: int) -> float | None:
    """When a process started (boot_seconds' clock), None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")


def leftover_processes(results: Sequence[PodResult]) -> list[int]:
    """The processes of these pods still running: in a pod's PID namespace and started before
    the pod ended. A namespace's number is reused once it is freed (another run's pod may have
    it by now); a process started after the pod ended is not the pod's."""
    found = []
    for result in results:
        for pid in processes_in([result.pid_namespace]):
            start = started_at(pid)
            ended = result.ended_boot
            if start is not None and (ended is None or start <= ended):
                found.append(pid)
    return found


# -- Inside the pod: its PID 1 before it becomes the container ------------------------------------

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWPID = 0x00020000, 0x04000000, 0x20000000
PR_SET_PDEATHSIG = 1


@functools.cache
def libc() -> ctypes.CDLL:
    lib = ctypes.CDLL(None, use_errno=True)
    lib.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                          ctypes.c_char_p]
    return lib


def _encoded(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    if libc().mount(_encoded(source), target.encode(), _encoded(fstype), flags, _encoded(data)):
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def bind(source: str, target: str, *, read_only: bool) -> None:
    mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY)


def mount_point(root: str, path: str, *, directory: bool) -> str:
    """root + path, created (in the overlay, or in a volume's own directory) if missing; a
    symlink there (/etc/resolv.conf often is one) is replaced, as it would point at the host."""
    parts = Path(path).parts[1:]
    for depth in range(1, len(parts)):
        if os.path.islink(os.path.join(root, *parts[:depth])):
            raise ValueError(f"mount path {path} crosses a symlink: not simulated")
    target = os.path.join(root, *parts)
    if os.path.islink(target):
        os.unlink(target)
    if not os.path.lexists(target):
        os.makedirs(target if directory else os.path.dirname(target), exist_ok=True)
        if not directory:
            Path(target).touch()
    return target


def build_rootfs(rootfs: str, mounts: Sequence[Obj]) -> str:
    """In this mount namespace: the overlay root, /proc, /dev (with its own /dev/shm), /sys and
    the container's mounts, parents first. Returns the new root's path."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("podsim", rootfs, "tmpfs", 0, "mode=0755")
    upper, work, root = (os.path.join(rootfs, d) for d in ("upper", "work", "root"))
    for directory in (upper, work, root):
        os.mkdir(directory)
    mount("overlay", root, "overlay", 0, f"lowerdir=/,upperdir={upper},workdir={work}")
    mount("proc", os.path.join(root, "proc"), "proc", 0)
    bind("/dev", os.path.join(root, "dev"), read_only=False)
    mount("shm", os.path.join(root, "dev/shm"), "tmpfs", 0, "mode=1777,size=64m")
    bind("/sys", os.path.join(root, "sys"), read_only=True)
    for spec in sorted(mounts, key=lambda m: len(Path(m["target"]).parts)):
        target = mount_point(root, spec["target"], directory=os.path.isdir(spec["source"]))
        bind(spec["source"], target, read_only=spec["read_only"])
    return root


def exec_container(plan: Obj) -> None:
    """Become the container: its root, working directory, environment and command."""
    root = build_rootfs(plan["rootfs"], plan["mounts"])
    mount_point(root, plan["workdir"], directory=True)
    os.chroot(root)
    os.chdir(plan["workdir"])
    try:
        os.execvpe(plan["argv"][0], plan["argv"], plan["env"])
    except OSError as error:
        print(f"podsim: exec {plan['argv'][0]!r} in container {plan['name']}: {error}",
              file=sys.stderr, flush=True)
        os._exit(128)


def run_init_container(plan: Obj) -> int:
    """An init container, to completion, in a mount namespace of its own."""
    pid = os.fork()
    if pid == 0:
        try:
            if libc().unshare(CLONE_NEWNS):
                raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
            exec_container(plan)
        except BaseException as error:
            print(f"podsim: init container {plan['name']}: {error!r}", file=sys.stderr, flush=True)
        finally:
            os._exit(128)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return code if code >= 0 else 128 - code


def pod_main(plan_file: str) -> int:
    """PID 1 of a pod: its hostname, its init containers, then exec into its container."""
    plan = json.loads(Path(plan_file).read_text())
    Path(plan["pid_namespace_file"]).write_text(os.readlink("/proc/self/ns/pid"))
    socket.sethostname(plan["hostname"])
    for init in plan["init_containers"]:
        code = run_init_container(init)
        if code:
            return code
    exec_container(plan["container"])
    return 128  # not reached


def pod_parent_main(plan_file: str) -> int:
    """The pod's parent, in the run's network namespace: what `unshare --mount --uts --pid
    --fork --mount-proc --kill-child` does (new mount, UTS and PID namespaces, a private root
    mount and a /proc of the new PID namespace, its child killed should it die), and what
    unshare does not: its exit status is the container's, 128 + the signal that killed it if
    one did (as the kubelet reports a container's exit code). Its child is the pod's PID 1:
    pod_main, then the container itself."""
    if libc().unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWPID):
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWPID)")
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 128
        try:
            libc().prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if not Path(f"/proc/{parent}").exists():  # its parent died before the prctl
                os._exit(code)
            mount(None, "/", None, MS_REC | MS_PRIVATE)
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            code = pod_main(plan_file)
        except BaseException as error:
            print(f"podsim: pod: {error!r}", file=sys.stderr, flush=True)
        finally:
            os._exit(code)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    if sys.argv[1] == "--dns":
        sys.exit(serve_cluster_dns(sys.argv[2]))
    if sys.argv[1] == "--pod":
        sys.exit(pod_parent_main(sys.argv[2]))
    sys.exit(pod_main(sys.argv[1]))


def why_paddle_cannot_run() -> str | None:
    """Why the real PaddlePaddle cannot train across simulated pods here, if it cannot. Asked
    when a test runs, not as it is collected: importing paddle takes seconds, which the test
    parts that deselect these tests need not pay."""
    try:
        import paddle  # noqa: F401
    except ImportError:
        return "paddlepaddle is not installed (pip install -e '.[test,paddle]')"
    return why_pods_cannot_run()


def why_pods_cannot_run() -> str | None:
    """Why this machine cannot run pods (root, unshare, nsenter and ip are needed), or None."""
    if os.geteuid() != 0:
        return "podsim needs root: its pods are mount, UTS, PID and network namespaces"
    tools = {name: shutil.which(name) for name in ("unshare", "nsenter", "ip")}
    if not all(tools.values()):
        return "podsim needs unshare and nsenter (Debian util-linux) and ip (iproute2)"
    probe = subprocess.run([str(tools["unshare"]), "--mount", "--uts", "--pid", "--net", "--fork",
                            "--mount-proc", str(tools["ip"]), "link", "set", "lo", "up"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f"unshare cannot make namespaces here: {probe.stderr.strip()}"
    return None
