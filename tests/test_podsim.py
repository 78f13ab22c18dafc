"""tests/podsim.py: how it builds pods (unit tests) and pods it runs (root and unshare needed).
The real PaddlePaddle 3 across pods built by paddlegen: tests/test_paddle_training.py."""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
from pathlib import Path
from typing import Any

import podsim
import pytest
from podsim import Obj, Pod

PYTHON = Path(sys.executable)  # the image's `python`: this venv's, which has paddle


@pytest.fixture(scope="session")
def pods_can_run() -> None:
    """Skips unless this machine can run podsim's pods (root, unshare, nsenter, ip)."""
    reason = podsim.why_pods_cannot_run()
    if reason:
        pytest.skip(reason)


def pod_logs(results: list[podsim.PodResult]) -> str:
    return "\n".join(f"--- {r.name} (exit {r.exit_code})\n{r.log[-4000:]}" for r in results)


# -- Pods, without paddle: what a container sees -------------------------------------------------

PROBE = """
import json, os, socket, stat, sys
from pathlib import Path

def resolve(name):
    try:
        return socket.gethostbyname(name)
    except OSError:
        return None

environ = Path("/proc/self/environ").read_bytes().split(b"\\0")
names = ["probe-0.probe", "probe-1.probe", "probe-1", "probe.default.svc.cluster.local",
         "probe-0.probe.default.svc.cluster.local", "nowhere.invalid"]
mounted = Path("/opt/podsim-probe/etc")
report = {
    "pid": os.getpid(),
    "hostname": socket.gethostname(),
    "cwd": os.getcwd(),
    "env": dict(e.decode().split("=", 1) for e in environ if e),
    "resolved": {name: resolve(name) for name in names},
    # AF_UNSPEC: glibc asks for AAAA too, and must take the cluster DNS's NODATA for none
    "addresses": sorted({info[4][0] for info in socket.getaddrinfo("probe", 80)}),
    "hosts": Path("/etc/hosts").read_text(),
    "nsswitch": [line.split()[1:] for line in Path("/etc/nsswitch.conf").read_text().splitlines()
                 if line.startswith("hosts:")],
    "files": {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in sorted(mounted.iterdir())},
    "sub_path": Path("/usr/local/bin/podsim-greeting").read_text(),
    "from_init": Path("/scratch/from-init").read_text(),
}
Path("/shared", socket.gethostname()).write_text("written by " + socket.gethostname())
print(json.dumps(report))
sys.exit(int(sys.argv[1]))
"""


def probe_objects() -> list[Obj]:
    env_ref = {"fieldRef": {"fieldPath": "metadata.name"}}
    container = {
        "name": "probe", "image": "python", "workingDir": "/srv/probe",
        "command": ["python", "/opt/podsim-probe/bin/probe.py"],
        "args": ["$(JOB_COMPLETION_INDEX)"],
        "envFrom": [{"configMapRef": {"name": "probe-config"}, "prefix": "CFG_"}],
        "env": [
            {"name": "POD_NAME", "valueFrom": env_ref},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "EARLY", "value": "$(JOB_COMPLETION_INDEX)"},
            {"name": "COMBINED", "value": "$(POD_NAME)@$(POD_IP) $$(POD_NAME) $(LATER)"},
            {"name": "LATER", "value": "later"},
            {"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "probe-config",
                                                                   "key": "greeting"}}},
            {"name": "ABSENT", "valueFrom": {"configMapKeyRef": {
                "name": "probe-config", "key": "absent", "optional": True}}},
            {"name": "CPU_MILLI", "valueFrom": {"resourceFieldRef": {
                "resource": "limits.cpu", "divisor": "1m"}}},
            {"name": "MEMORY_MI", "valueFrom": {"resourceFieldRef": {
                "resource": "requests.memory", "divisor": "1Mi"}}},
        ],
        "resources": {"limits": {"cpu": "1500m", "memory": "256Mi"}},
        "volumeMounts": [
            {"name": "code", "mountPath": "/opt/podsim-probe/bin"},
            {"name": "config", "mountPath": "/opt/podsim-probe/etc"},
            {"name": "config", "mountPath": "/usr/local/bin/podsim-greeting",
             "subPath": "greeting"},
            {"name": "scratch", "mountPath": "/scratch"},
            {"name": "shared", "mountPath": "/shared"},
        ],
    }
    init = {
        "name": "init", "image": "python", "command": ["sh", "-c", 'printf %s "$MSG" > $(OUT)'],
        "env": [{"name": "POD_NAME", "valueFrom": env_ref},
                {"name": "MSG", "value": "init of $(POD_NAME)"},
                {"name": "OUT", "value": "/scratch/from-init"}],
        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
    }
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe-code"},
         "data": {"probe.py": PROBE}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe-config"},
         "data": {"greeting": "hello", "secret-ish": "s", "not a name": "skipped"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "probe"},
         "spec": {"clusterIP": "None", "selector": {"job-name": "probe"}}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "probe"}, "spec": {
            "completionMode": "Indexed", "completions": 2, "parallelism": 2,
            "template": {"spec": {
                "subdomain": "probe", "restartPolicy": "Never",
                "initContainers": [init], "containers": [container],
                "volumes": [
                    {"name": "code", "configMap": {"name": "probe-code"}},
                    {"name": "config", "configMap": {
                        "name": "probe-config", "defaultMode": 0o440,
                        "items": [{"key": "greeting", "path": "greeting"},
                                  {"key": "secret-ish", "path": "secret-ish", "mode": 0o400}]}},
                    {"name": "scratch", "emptyDir": {"medium": "Memory"}},
                    {"name": "shared", "persistentVolumeClaim": {"claimName": "probe-shared"}},
                ],
            }},
        }},
    ]


def test_pods_are_wired_as_their_manifest_says(tmp_path: Path, pods_can_run: None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODSIM_HOST_ONLY", "must not leak into pods")
    host_paths = [Path("/opt/podsim-probe"), Path("/usr/local/bin/podsim-greeting"),
                  Path("/srv/probe")]
    assert not any(p.exists() for p in host_paths), "the probe's paths must be new to the host"
    results = podsim.run_pods(probe_objects(), image_fs={}, python=PYTHON, timeout=60,
                              workdir=tmp_path)
    assert [r.exit_code for r in results] == [0, 1], pod_logs(results)  # exit code = index
    assert not any(p.exists() for p in host_paths), "mount points were left on the host"
    assert podsim.processes_in([r.pid_namespace for r in results]) == []
    shared = podsim.claim_dir(tmp_path, "probe-shared")
    assert sorted(p.name for p in shared.iterdir()) == ["probe-0", "probe-1"]

    for index, result in enumerate(results):
        report: dict[str, Any] = json.loads(result.log.strip().splitlines()[-1])
        assert report["pid"] == 1
        assert report["hostname"] == f"probe-{index}"
        assert report["cwd"] == "/srv/probe"
        assert report["from_init"] == f"init of {result.name}"
        assert report["sub_path"] == "hello"
        assert report["files"] == {"greeting": "0o440", "secret-ish": "0o400"}
        assert report["resolved"] == {
            "probe-0.probe": "127.0.1.1", "probe-1.probe": "127.0.2.1",
            # a peer's bare hostname is not a DNS name; only a pod's own is in its /etc/hosts
            "probe-1": "127.0.2.1" if index == 1 else None,
            "probe.default.svc.cluster.local": "127.0.1.1",
            "probe-0.probe.default.svc.cluster.local": "127.0.1.1", "nowhere.invalid": None,
        }
        assert report["addresses"] == ["127.0.1.1", "127.0.2.1"]
        assert report["nsswitch"] == [["files", "dns"]]  # the kubelet's hosts file first
        assert report["hosts"] == podsim.hosts_file(podsim.simulate_controllers(
            probe_objects()).pods[index])  # the kubelet's lines, nothing of the other pod
        assert report["env"] == {
            "PATH": f"{PYTHON.parent}:/usr/bin:/bin", "HOME": "/root",
            "HOSTNAME": f"probe-{index}",
            "CFG_greeting": "hello", "CFG_secret-ish": "s",
            "POD_NAME": result.name, "POD_IP": result.ip,
            "EARLY": "$(JOB_COMPLETION_INDEX)",  # the controller's var comes after it
            "COMBINED": f"{result.name}@{result.ip} $(POD_NAME) $(LATER)",
            "LATER": "later", "GREETING": "hello", "CPU_MILLI": "1500", "MEMORY_MI": "256",
            "JOB_COMPLETION_INDEX": str(index),
        }


def test_a_pod_still_running_at_the_timeout_is_killed_with_all_its_processes(
        tmp_path: Path, pods_can_run: None) -> None:
    script = "setsid sleep 300 & sleep 300 & echo started; wait"
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "stuck"}, "spec": {
        "completionMode": "Indexed", "completions": 1, "template": {"spec": {"containers": [
            {"name": "c", "image": "sh", "command": ["sh", "-c", script]}]}}}}
    [result] = podsim.run_pods([job], image_fs={}, python=PYTHON, timeout=3, workdir=tmp_path)
    assert result.exit_code is None  # killed, not exited
    assert result.pid_namespace
    assert podsim.processes_in([result.pid_namespace]) == []


LOOKUP = """
import json, socket, sys

def lookup(name):
    try:
        return socket.gethostbyname(name)
    except socket.gaierror as error:
        return socket.EAI_NONAME if error.errno == socket.EAI_NONAME else repr(error)

own, peer = sys.argv[1:]
print(json.dumps({"own": lookup(own), "own_short": lookup(own.split(".")[0]),
                  "peer": lookup(peer), "service": lookup("late")}))
"""


def test_before_the_cluster_dns_has_the_pods_only_the_hosts_file_resolves(
        tmp_path: Path, pods_can_run: None) -> None:
    container = {"name": "c", "image": "python", "command": [
        "python", "-c", LOOKUP, "late-$(JOB_COMPLETION_INDEX).late.default.svc.cluster.local",
        "late-1.late"]}
    objects: list[Obj] = [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "late"},
         "spec": {"clusterIP": "None", "selector": {"job-name": "late"}}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "late"}, "spec": {
            "completionMode": "Indexed", "completions": 1, "template": {"spec": {
                "subdomain": "late", "containers": [container]}}}}]
    [result] = podsim.run_pods(objects, image_fs={}, python=PYTHON, timeout=60,
                               workdir=tmp_path, dns_delay=3600)
    assert result.exit_code == 0, pod_logs([result])
    assert json.loads(result.log.splitlines()[-1]) == {
        "own": "127.0.1.1", "own_short": "127.0.1.1",  # the kubelet's /etc/hosts line
        "peer": socket.EAI_NONAME, "service": socket.EAI_NONAME,  # NXDOMAIN, at once
    }
    log = (tmp_path / "cluster-dns" / "log").read_text()
    assert "A late-1.late.default.svc.cluster.local NXDOMAIN" in log


def test_a_failed_pod_beyond_the_backoff_limit_fails_the_job_and_its_other_pods_are_deleted(
        tmp_path: Path, pods_can_run: None) -> None:
    script = 'if [ "$JOB_COMPLETION_INDEX" = 0 ]; then exit 3; fi; exec sleep 300'
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "fails"}, "spec": {
        "completionMode": "Indexed", "completions": 2, "parallelism": 2, "backoffLimit": 0,
        "template": {"spec": {"containers": [
            {"name": "c", "image": "sh", "command": ["sh", "-c", script]}]}}}}
    results = podsim.run_pods([job], image_fs={}, python=PYTHON, timeout=600, workdir=tmp_path)
    # pod 1 would have slept to the end and exited 0: it was killed when pod 0 failed
    assert [r.exit_code for r in results] == [3, None], pod_logs(results)
    assert podsim.processes_in([r.pid_namespace for r in results]) == []


@pytest.mark.parametrize(("codes", "allowed", "failed"), [
    ([3, None], 0, True), ([0, None], 0, False), ([3, None], 1, False), ([3, 1], 1, True),
    ([3, None], None, False),
])
def test_job_failed_when_more_pods_failed_than_the_backoff_limit(
        codes: list[int | None], allowed: int | None, failed: bool) -> None:
    assert podsim.job_failed(codes, allowed) is failed


def test_failures_allowed_is_the_jobs_backoff_limit() -> None:
    assert podsim.simulate_controllers([indexed_job()]).failures_allowed == 6  # the default
    assert podsim.simulate_controllers([indexed_job(backoffLimit=0)]).failures_allowed == 0
    assert podsim.simulate_controllers([paddlejob(1)]).failures_allowed is None


# -- Controllers ---------------------------------------------------------------------------------


def indexed_job(env: list[Obj] | None = None, **spec: Any) -> Obj:
    container = {"name": "c", "image": "i", "command": ["true"], "env": env or []}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job", "namespace": "ns"},
            "spec": {"completionMode": "Indexed", "completions": 3, "parallelism": 2, **spec,
                     "template": {"metadata": {"labels": {"app": "a"}},
                                  "spec": {"subdomain": "svc", "containers": [container]}}}}


def test_indexed_job_pods_as_the_job_controller_makes_them() -> None:
    pods = podsim.indexed_job_pods(indexed_job([{"name": "A", "value": "1"}]))
    assert len(pods) == 2  # min(parallelism, completions)
    for index, pod in enumerate(pods):
        assert pod.name.startswith(f"job-{index}-")
        assert pod.hostname == f"job-{index}"
        assert pod.subdomain == "svc"
        assert pod.annotations[podsim.JOB_INDEX_KEY] == str(index)
        assert pod.labels[podsim.JOB_INDEX_KEY] == str(index)
        assert pod.labels["app"] == "a"
        assert pod.labels["batch.kubernetes.io/job-name"] == pod.labels["job-name"] == "job"
        env = pod.spec["containers"][0]["env"]
        assert [v["name"] for v in env] == ["A", "JOB_COMPLETION_INDEX"]  # appended, last
        assert podsim.container_env(pod.spec["containers"][0], pod, {})["JOB_COMPLETION_INDEX"] \
            == str(index)


def test_indexed_job_keeps_a_declared_completion_index() -> None:
    declared = [{"name": "JOB_COMPLETION_INDEX", "value": "x"}]
    [pod, _] = podsim.indexed_job_pods(indexed_job(declared))
    assert pod.spec["containers"][0]["env"] == declared


def paddlejob(replicas: int, port: int | None = None) -> Obj:
    ports = [] if port is None else [{"name": "master", "containerPort": port}]
    container = {"name": "paddle", "image": "i", "command": ["true"], "ports": ports,
                 "env": [{"name": "MINE", "value": "1"}]}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PaddleJob", "metadata": {"name": "pj"},
            "spec": {"paddleReplicaSpecs": {"worker": {  # the operator camel-cases the key
                "replicas": replicas, "template": {"spec": {"containers": [container]}}}}}}


def test_paddlejob_pods_get_the_training_operators_env_appended() -> None:
    cluster = podsim.simulate_controllers([paddlejob(3)])
    names = [p.name for p in cluster.pods]
    assert names == ["pj-worker-0", "pj-worker-1", "pj-worker-2"]
    worker0, worker1, _ = cluster.pods
    assert worker0.hostname == "pj-worker-0"
    assert worker0.labels == {
        "training.kubeflow.org/operator-name": "paddlejob-controller",
        "training.kubeflow.org/job-name": "pj", "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "0"}
    assert worker0.spec["containers"][0]["env"] == [
        {"name": "MINE", "value": "1"},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "PADDLE_JOB_ID", "value": "pj"},
        {"name": "PADDLE_NNODES", "value": "3"},
        {"name": "POD_IP_DUMMY", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "PADDLE_MASTER", "value": "$(POD_IP_DUMMY):36543"},
    ]
    assert worker1.spec["containers"][0]["env"][-1] == {"name": "PADDLE_MASTER",
                                                        "value": "pj-worker-0:36543"}
    env0 = podsim.container_env(worker0.spec["containers"][0], worker0, {})
    assert env0["PADDLE_MASTER"] == "127.0.1.1:36543" == f"{worker0.ip}:36543"
    assert [name_of_service(s) for s in cluster.services] == names


def name_of_service(service: Obj) -> str:
    assert service["spec"]["clusterIP"] == "None"
    return podsim.name_of(service)


def test_paddlejob_master_port_is_the_paddle_containers_master_port() -> None:
    [pod, _] = podsim.paddlejob_pods(paddlejob(2, port=23456))
    assert pod.spec["containers"][0]["env"][-1]["value"] == "$(POD_IP_DUMMY):23456"


def test_paddlejob_needs_a_container_named_paddle() -> None:
    job = paddlejob(1)
    job["spec"]["paddleReplicaSpecs"]["worker"]["template"]["spec"]["containers"][0]["name"] = "x"
    with pytest.raises(ValueError, match="paddle"):
        podsim.paddlejob_pods(job)


# -- DNS -----------------------------------------------------------------------------------------


def headless_service(selector: dict[str, str]) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": "ns"},
            "spec": {"clusterIP": "None", "selector": selector}}


def test_hosts_file_holds_only_what_the_kubelet_writes() -> None:
    cluster = podsim.simulate_controllers([indexed_job(), headless_service({"job-name": "job"})])
    hosts = podsim.hosts_file(cluster.pods[0]).splitlines()
    assert hosts[0] == "# Kubernetes-managed hosts file."
    assert "127.0.0.1\tlocalhost" in hosts
    assert hosts[-1] == "127.0.1.1\tjob-0.svc.ns.svc.cluster.local\tjob-0"  # its own name only
    assert not any("job-1" in line or "127.0.2.1" in line for line in hosts)


def test_hosts_file_without_a_subdomain_names_the_hostname_alone() -> None:
    [pod, _] = podsim.paddlejob_pods(paddlejob(2))
    pod.ip = "127.0.1.1"
    assert podsim.hosts_file(pod).splitlines()[-1] == "127.0.1.1\tpj-worker-0"


def test_the_cluster_dns_zone_holds_fully_qualified_names() -> None:
    cluster = podsim.simulate_controllers([indexed_job(), headless_service({"job-name": "job"})])
    assert podsim.cluster_dns_zone(cluster) == {
        "svc.ns.svc.cluster.local": ["127.0.1.1", "127.0.2.1"],
        "job-0.svc.ns.svc.cluster.local": ["127.0.1.1"],
        "job-1.svc.ns.svc.cluster.local": ["127.0.2.1"],
    }


def test_no_dns_without_a_headless_service_that_selects_the_pods() -> None:
    service = headless_service({"job-name": "other"})
    assert podsim.dns_records(podsim.simulate_controllers([indexed_job(), service])) == []


ZONE = {"job-0.svc.ns.svc.cluster.local": ["127.0.1.1"],
        "svc.ns.svc.cluster.local": ["127.0.1.1", "127.0.2.1"]}


def dns_query(name: str, qtype: int = podsim.QTYPE_A, *, flags: int = 0x0100,
              query_id: int = 0x1234) -> bytes:
    """A query as a stub resolver sends it: one question, recursion desired."""
    labels = b"".join(bytes([len(label)]) + label.encode() for label in name.split("."))
    return (struct.pack("!HHHHHH", query_id, flags, 1, 0, 0, 0) + labels + b"\0"
            + struct.pack("!HH", qtype, podsim.QCLASS_IN))


def parsed_response(response: bytes | None) -> tuple[int, int, list[str]]:
    """(id, rcode, the answers' addresses) of a response with A records only."""
    assert response is not None
    query_id, flags, questions, answers, _, _ = struct.unpack_from("!HHHHHH", response)
    assert flags & 0x8000 and questions in (0, 1)
    offset = len(response) - 16 * answers  # each A record: pointer, type, class, ttl, length, IP
    addresses = []
    for _ in range(answers):
        pointer, qtype, qclass, ttl, length = struct.unpack_from("!HHHIH", response, offset)
        assert (pointer, qtype, qclass, ttl, length) == (0xC00C, 1, 1, podsim.DNS_TTL, 4)
        addresses.append(socket.inet_ntoa(response[offset + 12:offset + 16]))
        offset += 16
    return query_id, flags & 0xF, addresses


def test_dns_answers_a_known_name_with_its_a_records() -> None:
    query = dns_query("svc.ns.svc.cluster.local")
    response = podsim.dns_response(query, ZONE)
    assert parsed_response(response) == (0x1234, podsim.RCODE_NOERROR, ["127.0.1.1", "127.0.2.1"])
    assert response is not None and response[12:len(query)] == query[12:]  # the question, again


def test_dns_responses_are_authoritative_and_keep_the_querys_flags() -> None:
    response = podsim.dns_response(dns_query("job-0.svc.ns.svc.cluster.local"), ZONE)
    assert response is not None
    flags = struct.unpack_from("!H", response, 2)[0]
    assert flags & 0xFF80 == 0x8000 | 0x0400 | 0x0100  # response, authoritative, RD; no RA


def test_dns_log_lines_are_four_words() -> None:
    query = dns_query("job-0.svc.ns.svc.cluster.local", podsim.QTYPE_AAAA)
    line = podsim.dns_log_line(1.5, query, podsim.dns_response(query, ZONE))
    assert line.split() == ["1.500", "AAAA", "job-0.svc.ns.svc.cluster.local", "NOERROR"]
    assert podsim.dns_log_line(2, b"junk", None).split() == ["2.000", "-", "-", "-"]


def test_dns_names_are_case_insensitive() -> None:
    response = podsim.dns_response(dns_query("JOB-0.Svc.NS.svc.cluster.local"), ZONE)
    assert parsed_response(response)[1:] == (podsim.RCODE_NOERROR, ["127.0.1.1"])


def test_dns_answers_nxdomain_for_a_name_it_does_not_know() -> None:
    for name in ("job-1.svc.ns.svc.cluster.local", "job-0.svc", "example.com"):
        assert parsed_response(podsim.dns_response(dns_query(name), ZONE))[1:] == (
            podsim.RCODE_NXDOMAIN, [])


def test_dns_answers_nodata_for_aaaa_of_a_known_name() -> None:
    known = podsim.dns_response(dns_query("job-0.svc.ns.svc.cluster.local", podsim.QTYPE_AAAA),
                                ZONE)
    unknown = podsim.dns_response(dns_query("job-9.svc.ns.svc.cluster.local", podsim.QTYPE_AAAA),
                                  ZONE)
    assert parsed_response(known)[1:] == (podsim.RCODE_NOERROR, [])
    assert parsed_response(unknown)[1:] == (podsim.RCODE_NXDOMAIN, [])


def test_dns_before_the_endpoint_slice_lists_the_pods_knows_no_name() -> None:
    query = dns_query("job-0.svc.ns.svc.cluster.local")
    assert parsed_response(podsim.dns_response(query, {}))[1] == podsim.RCODE_NXDOMAIN


def test_dns_rejects_what_is_not_one_standard_query() -> None:
    query = dns_query("job-0.svc.ns.svc.cluster.local")
    assert podsim.dns_response(query[:11], ZONE) is None  # no room for an id
    assert podsim.dns_response(dns_query("x", flags=0x8000), ZONE) is None  # a response
    truncated = podsim.dns_response(query[:-3], ZONE)
    assert parsed_response(truncated) == (0x1234, podsim.RCODE_FORMERR, [])
    status = podsim.dns_response(dns_query("x", flags=2 << 11), ZONE)  # opcode STATUS
    assert parsed_response(status)[1] == podsim.RCODE_NOTIMP


@pytest.mark.parametrize(("hosts_line", "mounted"), [
    ("hosts:          files dns", False),
    ("hosts: files [NOTFOUND=continue] dns  # comment", False),
    ("hosts: files myhostname dns", True),
    ("hosts: files mdns4_minimal [NOTFOUND=return] dns", True),
    ("hosts: dns files", True),
    ("", True),  # no hosts line: glibc's default puts dns first
])
def test_the_image_looks_up_hosts_in_files_then_dns(hosts_line: str, mounted: bool) -> None:
    host = f"passwd: files\n{hosts_line}\nnetworks: files\n"
    replacement = podsim.image_nsswitch_conf(host)
    assert (replacement is not None) == mounted
    if replacement is not None:
        assert podsim.hosts_sources(replacement) == ["files", "dns"]
        assert "passwd: files" in replacement.splitlines()
        assert replacement.count("hosts:") == 1


# -- The kubelet's env ---------------------------------------------------------------------------

CONTEXT = {"A": "a", "B": "b", "EMPTY": "", "REF": "$(A)"}


@pytest.mark.parametrize(("text", "expanded"), [
    ("$(A)", "a"),
    ("x$(A)y$(B)z", "xaybz"),
    ("$(A)$(A)", "aa"),
    ("[$(EMPTY)]", "[]"),
    ("$(REF)", "$(A)"),  # one pass: a value is not expanded again
    ("$(UNDEFINED)", "$(UNDEFINED)"),
    ("$$(A)", "$(A)"),
    ("$$$(A)", "$a"),
    ("$$$$(A)", "$$(A)"),
    ("$$", "$"),
    ("cost: $5", "cost: $5"),
    ("$A ${A} $? $!", "$A ${A} $? $!"),
    ("trailing $", "trailing $"),
    ("$(A", "$(A"),
    ("$(", "$("),
    ("$(A)$(", "a$("),
    ("$($($(A)", "$($($(A)"),  # the name runs to the first ")": "$($(A", undefined
    ("$(A$(B))", "$(A$(B))"),
    ("$()", "$()"),
    ("back\\$(A)", "back\\a"),
    ("$(é)é$é", "$(é)é$é"),
])
def test_expand_as_kubernetes_does(text: str, expanded: str) -> None:
    assert podsim.expand(text, CONTEXT) == expanded


def test_expand_looks_in_each_context_in_order() -> None:
    assert podsim.expand("$(A)$(C)", {"A": "1"}, {"A": "2", "C": "3"}) == "13"


def a_pod(**labels: str) -> Pod:
    return Pod(name="p", namespace="ns", labels=labels, annotations={"note": "n"},
               spec={"serviceAccountName": "sa"}, ip="127.0.1.1")


def test_env_values_see_only_earlier_vars_and_the_service_env() -> None:
    container = {"env": [
        {"name": "X", "value": "$(Y)-$(SVC_HOST)"},
        {"name": "Y", "value": "y"},
        {"name": "Z", "value": "$(X)|$(Y)"},
        {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "EMPTY"},
    ]}
    env = podsim.container_env(container, a_pod(), {}, service_env={"SVC_HOST": "h", "S2": "s"})
    assert env == {"SVC_HOST": "h", "S2": "s", "X": "$(Y)-h", "Y": "y", "Z": "$(Y)-h|y",
                   "NAME": "p", "EMPTY": ""}


def test_a_later_definition_wins() -> None:
    container = {"env": [{"name": "V", "value": "1"}, {"name": "V", "value": "$(V)2"}]}
    assert podsim.container_env(container, a_pod(), {}) == {"V": "12"}


def test_value_from_is_not_expanded() -> None:
    config_map = {"metadata": {"name": "cm"}, "data": {"k": "$(V)"}}
    key_ref = {"configMapKeyRef": {"name": "cm", "key": "k"}}
    container = {"env": [{"name": "V", "value": "v"}, {"name": "W", "valueFrom": key_ref}]}
    env = podsim.container_env(container, a_pod(), {("ns", "cm"): config_map})
    assert env["W"] == "$(V)"


def test_env_from_comes_first_and_env_overrides_it() -> None:
    config_maps = {("ns", "cm"): {"data": {"A": "from-cm", "B": "b", "bad name": "x"}}}
    container = {"envFrom": [{"configMapRef": {"name": "cm"}}],
                 "env": [{"name": "A", "value": "from-env $(B)"}]}
    assert podsim.container_env(container, a_pod(), config_maps) == {"A": "from-env b", "B": "b"}


def test_config_map_key_refs() -> None:
    def ref(key: str, optional: bool = False) -> Obj:
        return {"env": [{"name": "V", "valueFrom": {"configMapKeyRef": {
            "name": "cm", "key": key, "optional": optional}}}]}

    config_maps = {("ns", "cm"): {"data": {"k": "v"}}}
    assert podsim.container_env(ref("k"), a_pod(), config_maps) == {"V": "v"}
    assert podsim.container_env(ref("nope", optional=True), a_pod(), config_maps) == {}
    with pytest.raises(podsim.PodConfigError):
        podsim.container_env(ref("nope"), a_pod(), config_maps)
    with pytest.raises(podsim.PodConfigError):
        podsim.container_env(ref("k"), a_pod(), {})


@pytest.mark.parametrize(("path", "value"), [
    ("metadata.name", "p"), ("metadata.namespace", "ns"), ("metadata.labels['app']", "a"),
    ("metadata.labels['absent']", ""), ("metadata.annotations['note']", "n"),
    ("status.podIP", "127.0.1.1"), ("status.hostIP", podsim.NODE_IP),
    ("spec.nodeName", podsim.NODE_NAME), ("spec.serviceAccountName", "sa"),
])
def test_field_refs(path: str, value: str) -> None:
    assert podsim.field_ref(path, a_pod(app="a")) == value


def test_field_ref_uid_is_a_stable_uuid() -> None:
    uid = podsim.field_ref("metadata.uid", a_pod())
    assert uid == podsim.field_ref("metadata.uid", a_pod()) and len(uid) == 36


@pytest.mark.parametrize(("resource", "divisor", "value"), [
    ("limits.cpu", "1", "2"),  # 1500m rounded up
    ("limits.cpu", "1m", "1500"),
    ("requests.cpu", "100m", "5"),
    ("limits.memory", "1Mi", "512"),
    ("limits.memory", "1", str(512 * 2**20)),
    ("requests.memory", "1Mi", "512"),  # a request defaults to the limit
    ("requests.memory", "1G", "1"),  # 536870912 / 10**9, rounded up
])
def test_resource_field_refs(resource: str, divisor: str, value: str) -> None:
    container = {"resources": {"limits": {"cpu": "1500m", "memory": "512Mi"},
                               "requests": {"cpu": "500m"}}}
    ref = {"resource": resource, "divisor": divisor}
    assert podsim.resource_field_ref(ref, container) == value


def test_an_unset_limit_is_the_nodes_allocatable() -> None:
    assert podsim.resource_field_ref({"resource": "limits.cpu"}, {}) == str(os.cpu_count())
    assert podsim.resource_field_ref({"resource": "requests.cpu"}, {}) == "0"


@pytest.mark.parametrize(("text", "value"), [
    ("1", "1"), ("500m", "0.5"), ("2Gi", str(2 * 2**30)), ("1.5k", "1500"), ("1e3", "1000"),
    ("2E", str(2 * 10**18)), (".5Ki", "512"), ("100n", "1E-7"),
])
def test_parse_quantity(text: str, value: str) -> None:
    from decimal import Decimal

    assert podsim.parse_quantity(text) == Decimal(value)


def test_command_and_args_are_expanded_against_the_whole_env() -> None:
    container = {"command": ["run", "$(A)"], "args": ["--x=$(B)", "$$(A)", "$(NONE)"]}
    argv = podsim.container_argv(container, {"A": "a", "B": "b"})
    assert argv == ["run", "a", "--x=b", "$(A)", "$(NONE)"]


def test_config_map_volume_files(tmp_path: Path) -> None:
    config_map = {"data": {"a": "A", "b": "B"}, "binaryData": {"c": "Qw=="}}
    podsim.write_config_map_volume({"name": "cm", "defaultMode": 0o600}, config_map,
                                   tmp_path / "all")
    assert {p.name: (p.read_text(), oct(p.stat().st_mode & 0o777))
            for p in (tmp_path / "all").iterdir()} == {
        "a": ("A", "0o600"), "b": ("B", "0o600"), "c": ("C", "0o600")}
    items = {"name": "cm", "items": [{"key": "a", "path": "sub/x", "mode": 0o700}]}
    podsim.write_config_map_volume(items, config_map, tmp_path / "items")
    assert [p.relative_to(tmp_path / "items").as_posix()
            for p in (tmp_path / "items").rglob("*") if p.is_file()] == ["sub/x"]
    assert (tmp_path / "items" / "sub" / "x").stat().st_mode & 0o777 == 0o700
