"""A pod simulator: runs the pods of one training job's Kubernetes objects on this machine, each
wired as Kubernetes would wire it, so that tests can run real programs (PaddlePaddle's launcher)
across "pods" that find each other only through what their manifests say.

Input: the job's objects as loaded from YAML (ConfigMaps, Services, and one workload: a batch/v1
Job with `completionMode: Indexed`, or a kubeflow.org/v1 PaddleJob). `run_pods` then:

- plays the workload's controller: the pods it creates, with their names, hostnames, labels,
  annotations, and the env vars the controller appends to every container; for a Job, its
  backoffLimit: once more pods have failed than it allows, the Job fails and its running pods
  are deleted (pkg/controller/job/job_controller.go, `exceedsBackoffLimit := jobCtx.failed >
  *job.Spec.BackoffLimit`), here killed at once;
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
- plays the container runtime: each pod is `unshare --mount --uts --pid --fork --mount-proc`,
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
Secrets, restarts (restartPolicy; a Job's failed pod is not replaced, and a PaddleJob's
runPolicy is not read), more than one container per pod (init containers are run, in order),
securityContext, resource enforcement, probes; of DNS: TCP, PTR records, the `<ip-with-dashes>`
names of pods without a hostname, SRV records, pods leaving the EndpointSlice, one pod's record
appearing before another's.
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
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
HOST_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"  # all unshare's own environment holds
KILL_GRACE = 30.0  # seconds for a killed pod's processes to be gone before unshare is killed
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
    failures_allowed: int | None = None  # a Job's backoffLimit; None: pod failures end nothing


@dataclass(frozen=True)
class PodResult:
    name: str
    ip: str
    exit_code: int | None  # None: still running when the run ended (timeout, failed Job): killed
    log: str  # the pod's stdout and stderr
    pid_namespace: str | None  # e.g. "pid:[4026532179]", to check that nothing of it is left


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
    job_uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"podsim/job/{namespace}/{name}"))
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
            name=f"{name}-{index}-{stable_suffix(f'{namespace}/{name}/{index}')}",
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


def simulate_controllers(objects: Sequence[Obj]) -> Cluster:
    """The cluster's state once the job's controller has created its pods and Services."""
    jobs = [o for o in objects if o.get("kind") == "Job" and o.get("apiVersion") == "batch/v1"]
    paddlejobs = [o for o in objects
                  if o.get("kind") == "PaddleJob" and o.get("apiVersion") == "kubeflow.org/v1"]
    if len(jobs) + len(paddlejobs) != 1:
        raise ValueError("podsim runs exactly one workload: a batch/v1 Job or a PaddleJob")
    services = [o for o in objects if o.get("kind") == "Service"]
    failures_allowed = None
    if jobs:
        pods = indexed_job_pods(jobs[0])
        failures_allowed = int(jobs[0]["spec"].get("backoffLimit", DEFAULT_BACKOFF_LIMIT))
    else:
        pods = paddlejob_pods(paddlejobs[0])
        services += paddlejob_services(paddlejobs[0])
    for ordinal, pod in enumerate(pods):
        pod.ip = pod_ip(ordinal)
    config_maps = {(namespace_of(o), name_of(o)): o
                   for o in objects if o.get("kind") == "ConfigMap"}
    return Cluster(pods=pods, services=services, config_maps=config_maps,
                   failures_allowed=failures_allowed)


# -- Cluster DNS ---------------------------------------------------------------------------------


def dns_records(cluster: Cluster) -> list[tuple[str, str, str]]:
    """(IP, name relative to its namespace, namespace) for each A record of the headless
    Services: `<service>` for every pod selected, `<hostname>.<service>` for each selected pod
    whose spec.hostname is set and whose subdomain is the Service."""
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
            records.append((pod.ip, name, namespace))
            if pod.spec.get("hostname") and pod.subdomain == name:
                records.append((pod.ip, f"{pod.hostname}.{name}", namespace))
    return records


def cluster_dns_zone(cluster: Cluster) -> dict[str, list[str]]:
    """The names the cluster DNS answers, fully qualified and in lower case, with their A
    records. Only these: a short name is found through the pod's search path."""
    zone: dict[str, list[str]] = {}
    for ip, name, namespace in dns_records(cluster):
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

    It binds the nameserver address, then says `ready` on stdout; from then on, for `delay`
    seconds, it answers every query as if the zone were empty (the EndpointSlice does not list
    the pods yet), then from the zone. It logs each query on stderr and exits when its stdin
    closes: the run is over."""
    config = json.loads(Path(config_file).read_text())
    zone: dict[str, list[str]] = config["zone"]
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
                    if not os.read(sys.stdin.fileno(), 4096):
                        return 0
                    continue
                packet, client = server.recvfrom(4096)
                seconds = time.monotonic() - ready
                response = dns_response(packet, zone if seconds >= config["delay"] else {})
                if response:
                    server.sendto(response, client)
                print(dns_log_line(seconds, packet, response), file=sys.stderr, flush=True)


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
    """`$(VAR)` expansion as Kubernetes does it (third_party/forked/golang/expansion): a name
    found in the first context that has it is replaced, an unknown one stays `$(VAR)`, `$$` is
    `$`, and any other `$` (incomplete `$(`, `$x`, a trailing `$`) stays as written."""
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


# -- Running pods (host side) --------------------------------------------------------------------


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the simulator dies (PR_SET_PDEATHSIG); unshare
    --kill-child then kills the pod."""
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)


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


def start_cluster_dns(network: subprocess.Popen[bytes], cluster: Cluster, *, delay: float,
                      dns_dir: Path) -> subprocess.Popen[bytes]:
    """The cluster DNS server (serve_cluster_dns) in the network namespace, once it says it is
    ready: bound to its address, its delay counted from then, just before the pods start. Its
    log is `dns_dir`/log."""
    dns_dir.mkdir(parents=True)
    config = dns_dir / "config.json"
    config.write_text(json.dumps({"address": CLUSTER_DNS_IP, "delay": delay,
                                  "zone": cluster_dns_zone(cluster)}, indent=1))
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
    argv = [host_tool("nsenter"), f"--net=/proc/{network.pid}/ns/net",
            host_tool("unshare"), "--mount", "--uts", "--pid", "--fork", "--mount-proc",
            "--kill-child",
            sys.executable, "-I", str(Path(__file__).resolve()), str(pod_dir / "plan.json")]
    with (pod_dir / "log").open("wb") as log:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env={"PATH": HOST_PATH},
                                preexec_fn=_die_with_parent)


def kill_pod(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the pod's PID 1, then wait for unshare: the kernel kills every other process of
    the PID namespace, and PID 1 is reaped (so unshare exits) only once they are all gone.
    Killing unshare itself (before its child exists, or as a last resort) would not wait."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    try:
        pid_ones = [int(pid) for pid in children.read_text().split()]
    except OSError:
        pid_ones = []
    for pid in pid_ones or [proc.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    try:
        proc.wait(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def job_failed(codes: Sequence[int | None], failures_allowed: int | None) -> bool:
    """Whether more pods have failed than the Job's backoffLimit allows."""
    failures = sum(1 for code in codes if code not in (None, 0))
    return failures_allowed is not None and failures > failures_allowed


def wait_for_pods(procs: Sequence[subprocess.Popen[bytes]], deadline: float,
                  failures_allowed: int | None) -> list[int | None]:
    """Each pod's exit code once all have exited, the deadline has passed, or the Job has
    failed; None for a pod still running then. Woken by the pods' exits (pidfds), not polled."""
    with selectors.DefaultSelector() as selector:
        for proc in procs:
            selector.register(os.pidfd_open(proc.pid), selectors.EVENT_READ, proc)
        try:
            while selector.get_map() and not job_failed([p.returncode for p in procs],
                                                         failures_allowed):
                exited = selector.select(max(0.0, deadline - time.monotonic()))
                if not exited:
                    break
                for key, _ in exited:
                    key.data.wait()
                    selector.unregister(key.fileobj)
                    os.close(key.fd)
        finally:
            for key in list(selector.get_map().values()):
                os.close(key.fd)
    return [proc.returncode for proc in procs]


def run_pods(objects: Sequence[Obj], *, image_fs: Mapping[str, Path], python: Path,
             timeout: float, workdir: Path, dns_delay: float = 0.0) -> list[PodResult]:
    """Run every pod of the job concurrently until all exit, `timeout` seconds pass, or the
    Job fails (its backoffLimit); pods still running then are killed. For the first
    `dns_delay` seconds the cluster DNS knows no name. `workdir` (empty or missing) receives
    the pods' files, the cluster DNS's (`cluster-dns/log`: every query and its answer) and the
    claims' directories (see claim_dir)."""
    cluster = simulate_controllers(objects)
    pod_dirs = [pod_plan(pod, cluster, workdir=workdir, image_fs=image_fs, python=python)
                for pod in cluster.pods]
    network = start_network()
    try:
        dns = start_cluster_dns(network, cluster, delay=dns_delay, dns_dir=workdir / "cluster-dns")
        try:
            procs = [start_pod(pod_dir, network) for pod_dir in pod_dirs]
            codes = wait_for_pods(procs, time.monotonic() + timeout, cluster.failures_allowed)
            for proc, code in zip(procs, codes, strict=True):
                if code is None:
                    kill_pod(proc)
        finally:
            stop_cluster_dns(dns)
    finally:
        network.kill()
        network.wait()
    return [pod_result(pod, pod_dir, code)
            for pod, pod_dir, code in zip(cluster.pods, pod_dirs, codes, strict=True)]


def pod_result(pod: Pod, pod_dir: Path, code: int | None) -> PodResult:
    namespace_file = pod_dir / "pid-namespace"
    return PodResult(
        name=pod.name, ip=pod.ip, exit_code=code,
        log=(pod_dir / "log").read_text(errors="replace"),
        pid_namespace=namespace_file.read_text() if namespace_file.exists() else None,
    )


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


# -- Inside the pod: its PID 1 before it becomes the container ------------------------------------

MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
CLONE_NEWNS = 0x00020000


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


if __name__ == "__main__":
    if sys.argv[1] == "--dns":
        sys.exit(serve_cluster_dns(sys.argv[2]))
    sys.exit(pod_main(sys.argv[1]))


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
