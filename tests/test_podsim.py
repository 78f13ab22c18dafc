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
import json, os, socket, stat, sys, time
from pathlib import Path

def barrier(stage):
    # both pods past this point before either goes on (a pod that has ended leaves the DNS)
    Path("/shared", stage + "-" + socket.gethostname()).write_text("")
    while not all(Path("/shared", f"{stage}-probe-{i}").exists() for i in (0, 1)):
        time.sleep(0.01)

def resolve(name):
    try:
        return socket.gethostbyname(name)
    except OSError:
        return None

environ = Path("/proc/self/environ").read_bytes().split(b"\\0")
names = ["probe-0.probe", "probe-1.probe", "probe-1", "probe.default.svc.cluster.local",
         "probe-0.probe.default.svc.cluster.local", "nowhere.invalid"]
mounted = Path("/opt/podsim-probe/etc")
barrier("resolving")
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
barrier("resolved")
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
    assert podsim.leftover_processes(results) == []
    shared = podsim.claim_dir(tmp_path, "probe-shared")
    assert [(shared / name).read_text() for name in ("probe-0", "probe-1")] == [
        "written by probe-0", "written by probe-1"]

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
    assert podsim.leftover_processes([result]) == []


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


def sh_job(name: str, script: str, *, pods: int = 2, **spec: Any) -> Obj:
    pod_spec = {"containers": [{"name": "c", "image": "sh", "command": ["sh", "-c", script]}]}
    pod_spec.update(spec.pop("pod", {}))
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {
        "completionMode": "Indexed", "completions": pods, "parallelism": pods, **spec,
        "template": {"spec": pod_spec}}}


def test_a_failed_pod_beyond_the_backoff_limit_fails_the_job_and_its_other_pods_are_deleted(
        tmp_path: Path, pods_can_run: None) -> None:
    # pod 1 would sleep to the end, its sleep PID 1 of its namespace ignores SIGTERM (no handler)
    script = 'if [ "$JOB_COMPLETION_INDEX" = 0 ]; then exit 3; fi; exec sleep 300'
    job = sh_job("fails", script, backoffLimit=0, pod={"terminationGracePeriodSeconds": 1})
    results = podsim.run_pods([job], image_fs={}, python=PYTHON, timeout=600, workdir=tmp_path)
    # the Job failed with pod 0, deleted pod 1: SIGTERM, ignored, then SIGKILL after the grace
    assert [r.exit_code for r in results] == [3, 137], pod_logs(results)
    assert [r.deleted for r in results] == [False, True]
    assert [r.phase for r in results] == ["Failed", "Failed"]
    assert podsim.leftover_processes(results) == []
    status = json.loads((tmp_path / "status" / "job-fails.json").read_text())["status"]
    assert [(c["type"], c["reason"]) for c in status["conditions"]] == [
        ("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]


def test_a_deleted_pod_that_handles_sigterm_ends_as_its_container_exits(
        tmp_path: Path, pods_can_run: None) -> None:
    script = ('if [ "$JOB_COMPLETION_INDEX" = 0 ]; then exit 3; fi; '
              "trap 'echo got TERM; exit 0' TERM; echo ready; sleep 300 & wait")
    job = sh_job("graceful", script, backoffLimit=0, pod={"terminationGracePeriodSeconds": 600})
    results = podsim.run_pods([job], image_fs={}, python=PYTHON, timeout=600, workdir=tmp_path)
    # deleted, exited 0 on SIGTERM: the kubelet's terminal phase is Succeeded, deleted or not
    assert [(r.exit_code, r.phase) for r in results] == [(3, "Failed"), (0, "Succeeded")]
    assert "got TERM" in results[1].log
    assert podsim.leftover_processes(results) == []


JOBSET_SCRIPT = """
echo "attempt=$ATTEMPT index=$JOB_COMPLETION_INDEX host=$(hostname)"
barrier() {  # both pods of the attempt here before either goes on (an ended pod leaves the DNS)
  touch "/shared/$1-$ATTEMPT-$JOB_COMPLETION_INDEX"
  until [ -e "/shared/$1-$ATTEMPT-0" ] && [ -e "/shared/$1-$ATTEMPT-1" ]; do sleep 0.01; done
}
barrier up
getent hosts gang-workers-0-1.gang.default.svc.cluster.local || echo "no peer"
if [ "$ATTEMPT" = 0 ]; then
  if [ "$JOB_COMPLETION_INDEX" = 1 ]; then exit 5; fi
  trap 'exit 143' TERM
  sleep 300 & wait
fi
barrier looked
"""


def sh_jobset(script: str = JOBSET_SCRIPT, *, max_restarts: int = 1, **pod: Any) -> Obj:
    env = [{"name": "ATTEMPT", "valueFrom": {"fieldRef": {
        "fieldPath": f"metadata.labels['{podsim.RESTARTS_KEY}']"}}}]
    container = {"name": "c", "image": "sh", "command": ["sh", "-c", script], "env": env,
                 "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]}
    volume = {"name": "shared", "persistentVolumeClaim": {"claimName": "shared"}}
    return {"apiVersion": podsim.JOBSET_API, "kind": "JobSet", "metadata": {"name": "gang"},
            "spec": {"failurePolicy": {"maxRestarts": max_restarts}, "replicatedJobs": [{
                "name": "workers", "template": {"spec": {
                    "parallelism": 2, "completions": 2, "backoffLimit": 0,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [container],
                                          "volumes": [volume],
                                          "terminationGracePeriodSeconds": 5, **pod}}}}}]}}


def test_a_jobset_restarts_its_whole_gang_as_a_new_attempt(tmp_path: Path,
                                                           pods_can_run: None) -> None:
    results = podsim.run_pods([sh_jobset()], image_fs={}, python=PYTHON, timeout=120,
                              workdir=tmp_path)
    first, second = results[:2], results[2:]
    assert [(r.index, r.exit_code) for r in first] == [(0, 143), (1, 5)], pod_logs(results)
    assert [(r.index, r.exit_code) for r in second] == [(0, 0), (1, 0)], pod_logs(results)
    # the new attempt's pods: the label, read through the fieldRef, and the same hostnames
    assert [r.labels[podsim.RESTARTS_KEY] for r in results] == ["0", "0", "1", "1"]
    for result in results:
        assert f"attempt={result.labels[podsim.RESTARTS_KEY]} index={result.index} " \
            f"host=gang-workers-0-{result.index}" in result.log
    # ... started once every process of the old attempt had ended; the peer's name is theirs
    assert max(r.ended_at or 0 for r in first) <= min(r.started_at or 0 for r in second)
    # pod 1's new address, from the cluster DNS, for its peer as for itself
    assert first[1].ip in first[0].log and second[1].ip in second[0].log
    assert first[1].ip != second[1].ip
    status = json.loads((tmp_path / "status" / "jobset-gang.json").read_text())["status"]
    assert (status["restarts"], status["restartsCountTowardsMax"], status["terminalState"]) \
        == (1, 1, "Completed")
    assert podsim.leftover_processes(results) == []


def test_a_run_acted_on_while_it_runs(tmp_path: Path, pods_can_run: None) -> None:
    script = ("trap 'echo saving; exit 0' TERM; i=0; while true; do i=$((i+1)); "
              'echo "step $i" >> /shared/$(hostname).log; sleep 0.05; done')
    jobset = sh_jobset(script, max_restarts=0)
    jobset["spec"]["failurePolicy"]["rules"] = [
        {"name": "disruptions", "action": "RestartJobSetAndIgnoreMaxRestarts",
         "onJobFailureReasons": ["PodFailurePolicy"]}]
    template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    template["podFailurePolicy"] = {"rules": [{"action": "FailJob", "onPodConditions": [
        {"type": "DisruptionTarget"}]}]}
    shared = podsim.claim_dir(tmp_path, "shared")
    with podsim.Simulation([jobset], image_fs={}, python=PYTHON, timeout=120,
                           workdir=tmp_path) as run:
        assert run.wait_for_line(shared / "gang-workers-0-1.log", lambda line: line == "step 3",
                                 60) == "step 3"
        pod = run.pod(index=1, attempt=0)
        assert pod is not None
        run.evict_pod(pod.name)
        # a sigterm trapped with exit 0: Succeeded, so the Job does not fail; its DisruptionTarget
        # is not a failure to the podFailurePolicy (only failed pods are matched)
        assert run.wait_until(lambda: (run.pod(index=1, attempt=0) or pod).phase == "Succeeded",
                              60)
        pod0 = run.pod(index=0, attempt=0)
        assert pod0 is not None
        run.kill_pod(pod0.name)  # a crash: BackoffLimitExceeded, counted: maxRestarts 0
        results = run.results()
    assert [(r.index, r.exit_code, r.conditions) for r in results] == [
        (0, 137, ()), (1, 0, ("DisruptionTarget",))], pod_logs(results)
    status = run.jobset_status()
    assert status is not None
    assert status["terminalState"] == "Failed"
    assert [(c["type"], c["reason"]) for c in status["conditions"]] == [
        ("Failed", "ReachedMaxRestarts")]
    assert podsim.leftover_processes(results) == []


# -- The control plane, step by step (no process) -------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def control_plane(*objects: Obj) -> tuple[podsim.ControlPlane, Clock]:
    clock = Clock()
    control = podsim.ControlPlane(objects, clock=clock)
    control.reconcile()
    return control, clock


def start_all(control: podsim.ControlPlane) -> None:
    for pod in control.pods:
        if not pod.started and not pod.gone:
            pod.started, pod.phase = True, "Running"


def end(control: podsim.ControlPlane, clock: Clock, pod: podsim.PodState, code: int) -> None:
    control.pod_ended(pod, code)
    settle(control, clock)


def settle(control: podsim.ControlPlane, clock: Clock) -> None:
    """Past the Job controller's batching; deleted pods that have stopped are removed."""
    clock.now += podsim.JOB_SYNC_BATCH
    control.reconcile()
    for pod in control.pods:
        if pod.deleted is not None and (pod.terminal or not pod.started):
            pod.gone = True
    control.reconcile()


def gang(**failure_policy: Any) -> Obj:
    jobset = sh_jobset("true")
    jobset["spec"]["failurePolicy"] = failure_policy or None
    if not failure_policy:
        del jobset["spec"]["failurePolicy"]
    return jobset


def test_a_jobset_makes_its_job_its_service_and_its_pods_as_jobset_does() -> None:
    control, _ = control_plane(gang(maxRestarts=1))
    [job] = control.jobs
    assert job.name == "gang-workers-0"
    assert job.labels[podsim.RESTARTS_KEY] == "0"
    assert job.labels[podsim.JOBSET_NAME_KEY] == "gang"
    [service] = control.services
    assert service["metadata"]["name"] == "gang"
    assert service["spec"]["selector"] == {podsim.JOBSET_NAME_KEY: "gang"}
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert [p.pod.hostname for p in control.pods] == ["gang-workers-0-0", "gang-workers-0-1"]
    assert {p.pod.subdomain for p in control.pods} == {"gang"}
    for pod in control.pods:
        for key in (podsim.RESTARTS_KEY, podsim.JOBSET_NAME_KEY, podsim.REPLICATED_JOB_NAME_KEY,
                    podsim.JOBSET_JOB_INDEX_KEY, podsim.JOB_INDEX_KEY):
            assert key in pod.pod.labels and key in pod.pod.annotations
    assert podsim.container_env(control.pods[0].pod.spec["containers"][0], control.pods[0].pod,
                                {})["ATTEMPT"] == "0"


def test_a_failed_job_is_failure_target_until_no_pod_of_it_is_terminating() -> None:
    control, clock = control_plane(gang(maxRestarts=1))
    start_all(control)
    [job] = control.jobs
    first, second = control.pods
    end(control, clock, second, 137)
    assert [c["type"] for c in job.conditions] == ["FailureTarget"]
    assert job.conditions[0]["reason"] == "BackoffLimitExceeded"
    assert first.deleted is not None and first.terminating
    assert control.jobset is not None and control.jobset.restarts == 0  # Failed is not there yet
    end(control, clock, first, 143)
    assert [c["type"] for c in job.conditions] == ["FailureTarget", "Failed"]
    assert (control.jobset.restarts, control.jobset.restarts_count_towards_max) == (1, 1)
    assert podsim.find_condition(control.jobset.conditions, "RestartingJobSet")
    # the old Job went in the foreground, its pods first; the new one has the name, attempt 1
    [old, new] = control.jobs
    assert old.gone and old is job and new.name == job.name
    assert new.labels[podsim.RESTARTS_KEY] == "1"
    assert new.obj["metadata"]["uid"] != job.obj["metadata"]["uid"]
    pods = [p for p in control.pods if p.job is new]
    assert [p.pod.hostname for p in pods] == ["gang-workers-0-0", "gang-workers-0-1"]
    assert {p.pod.name for p in pods}.isdisjoint({first.name, second.name})
    assert [podsim.container_env(p.pod.spec["containers"][0], p.pod, {})["ATTEMPT"]
            for p in pods] == ["1", "1"]


def test_a_job_being_deleted_is_not_made_again_until_it_is_gone() -> None:
    control, clock = control_plane(gang(maxRestarts=1))
    start_all(control)
    first, second = control.pods
    end(control, clock, second, 1)
    control.pod_ended(first, 143)
    clock.now += podsim.JOB_SYNC_BATCH
    control.reconcile()  # restarted; the old Job's pods deleted, not yet removed
    assert control.jobset is not None and control.jobset.restarts == 1
    assert len(control.jobs) == 1 and control.jobs[0].deleting
    settle(control, clock)
    assert len(control.jobs) == 2


def test_max_restarts_reached_fails_the_jobset() -> None:
    control, clock = control_plane(gang(maxRestarts=0))
    start_all(control)
    first, second = control.pods
    end(control, clock, second, 1)
    end(control, clock, first, 143)
    assert control.jobset is not None
    assert control.jobset.terminal_state == "Failed"
    assert [(c["type"], c["reason"]) for c in control.jobset.conditions] == [
        ("Failed", "ReachedMaxRestarts")]
    assert len(control.jobs) == 1  # nothing made again


def test_without_a_failure_policy_a_failed_job_fails_the_jobset() -> None:
    control, clock = control_plane(gang())
    start_all(control)
    first, second = control.pods
    end(control, clock, second, 1)
    end(control, clock, first, 143)
    assert control.jobset is not None
    assert [c["reason"] for c in control.jobset.conditions] == ["FailedJobs"]


def disruptible(rules: list[Obj], *, pod_failure_policy: bool = True) -> Obj:
    jobset = gang(maxRestarts=0, rules=rules)
    if pod_failure_policy:
        jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["podFailurePolicy"] = {
            "rules": [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    return jobset


DISRUPTIONS = {"name": "DisruptionsDoNotCount", "action": "RestartJobSetAndIgnoreMaxRestarts",
               "onJobFailureReasons": ["PodFailurePolicy"]}


def test_an_evicted_pod_fails_its_job_by_the_pod_failure_policy_a_restart_not_counted() -> None:
    control, clock = control_plane(disruptible([DISRUPTIONS]))
    start_all(control)
    first, second = control.pods
    control.evict_pod(second, "EvictionByEvictionAPI", "Eviction API: evicting")
    settle(control, clock)
    [job] = [j for j in control.jobs if not j.gone]
    assert job.conditions == []  # with a podFailurePolicy, only a Failed pod counts
    end(control, clock, second, 15)  # Paddle's launcher exits 15 on SIGTERM
    target = podsim.find_condition(job.conditions, "FailureTarget")
    assert target is not None and target["reason"] == "PodFailurePolicy"
    assert target["message"] == ("Pod default/" + second.name + " has condition DisruptionTarget "
                                 "matching FailJob rule at index 0")
    end(control, clock, first, 250)
    assert control.jobset is not None
    assert (control.jobset.restarts, control.jobset.restarts_count_towards_max) == (1, 0)
    assert not control.jobset.terminal_state


def test_fail_job_wins_over_the_backoff_limit_within_one_sync() -> None:
    control, clock = control_plane(disruptible([DISRUPTIONS]))
    start_all(control)
    first, second = control.pods
    control.evict_pod(second, "EvictionByEvictionAPI", "Eviction API: evicting")
    control.pod_ended(first, 1)  # its peer failed first, in the same batch
    control.pod_ended(second, 15)
    settle(control, clock)
    [job] = control.jobs[:1]
    assert job.conditions[0]["reason"] == "PodFailurePolicy"


@pytest.mark.parametrize("broken", ["no rule", "no podFailurePolicy"])
def test_a_disruption_fails_the_jobset_when_the_wiring_lacks_a_part(broken: str) -> None:
    jobset = disruptible([] if broken == "no rule" else [DISRUPTIONS],
                         pod_failure_policy=broken != "no podFailurePolicy")
    control, clock = control_plane(jobset)
    start_all(control)
    first, second = control.pods
    control.evict_pod(second, "EvictionByEvictionAPI", "Eviction API: evicting")
    settle(control, clock)
    end(control, clock, second, 15)
    end(control, clock, first, 250)
    assert control.jobset is not None
    assert [c["reason"] for c in control.jobset.conditions] == ["ReachedMaxRestarts"]
    # the rule's absence: PodFailurePolicy matches no rule; the policy's: the deletion counts
    assert control.jobs[0].conditions[-1]["reason"] == (
        "PodFailurePolicy" if broken == "no rule" else "BackoffLimitExceeded")


def test_past_its_deadline_a_job_fails_and_the_deadline_rule_fails_the_jobset() -> None:
    jobset = disruptible([DISRUPTIONS, {"name": "DeadlineEndsTheRun", "action": "FailJobSet",
                                        "onJobFailureReasons": ["DeadlineExceeded"]}])
    jobset["spec"]["failurePolicy"]["maxRestarts"] = 5
    jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["activeDeadlineSeconds"] = 60
    control, clock = control_plane(jobset)
    start_all(control)
    assert control.next_due() == 60  # the deadline, counted from the Job's start
    clock.now = 60
    control.reconcile()
    [job] = control.jobs
    assert [(c["type"], c["reason"]) for c in job.conditions] == [
        ("FailureTarget", "DeadlineExceeded")]
    assert all(p.deleted is not None for p in control.pods)
    for pod in control.pods:
        end(control, clock, pod, 143)
    assert control.jobset is not None
    assert [c["reason"] for c in control.jobset.conditions] == ["FailJobSetFailurePolicyAction"]
    assert control.jobset.restarts == 0


def test_a_pod_failure_policy_needs_restart_policy_never_or_no_job_is_made() -> None:
    jobset = disruptible([DISRUPTIONS])
    del jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "restartPolicy"]  # JobSet's webhook defaults it to OnFailure
    control, _ = control_plane(jobset)
    assert control.jobs == [] and control.pods == []
    assert any("JobCreationFailed" in e and 'only "Never" is supported' in e
               for e in control.events)


def test_job_failure_policy_matching_follows_the_rules_in_order() -> None:
    control, _ = control_plane(gang())
    pod = control.pods[0]
    pod.exit_code = 3
    rules = {"rules": [
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
        {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [0]}}]}
    assert podsim.job_failure_policy_match(rules, pod) == (None, False)
    pod.exit_code = 4
    message, counted = podsim.job_failure_policy_match(rules, pod)
    assert counted and message == (f"Container c for pod default/{pod.name} failed with exit "
                                   "code 4 matching FailJob rule at index 1")
    assert podsim.job_failure_policy_match(None, pod) == (None, True)


def runtime_and_trainjob(**trainer: Any) -> list[Obj]:
    jobset = sh_jobset("true")
    rjob = jobset["spec"]["replicatedJobs"][0]
    rjob["name"] = "node"
    rjob["template"]["metadata"] = {"labels": {podsim.TRAINER_ANCESTOR_LABEL: "trainer"}}
    rjob["template"]["spec"]["template"]["spec"]["containers"][0]["name"] = "node"
    runtime = {"apiVersion": podsim.TRAINER_API, "kind": "TrainingRuntime",
               "metadata": {"name": "rt"}, "spec": {"template": {
                   "metadata": {"labels": {"team": "a"}}, "spec": jobset["spec"]}}}
    trainjob = {"apiVersion": podsim.TRAINER_API, "kind": "TrainJob", "metadata": {"name": "tj"},
                "spec": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org",
                                        "kind": "TrainingRuntime", "name": "rt"},
                         "trainer": {"numNodes": 3, **trainer}}}
    return [runtime, trainjob]


def test_a_trainjob_makes_its_jobset_from_its_runtime_as_trainer_does() -> None:
    control, clock = control_plane(*runtime_and_trainjob(
        args=["--more"], env=[{"name": "ATTEMPT", "value": "mine"}]))
    assert control.jobset is not None
    assert control.jobset.name == "tj"
    assert control.jobset.obj["metadata"]["labels"] == {"team": "a"}
    [job] = control.jobs
    assert job.name == "tj-node-0"
    assert (job.spec["parallelism"], job.spec["completions"]) == (3, 3)
    container = job.spec["template"]["spec"]["containers"][0]
    assert container["args"] == ["--more"]
    assert container["env"] == [{"name": "ATTEMPT", "value": "mine"}]  # upserted
    start_all(control)
    for pod in control.pods:
        end(control, clock, pod, 0)
    assert control.trainjob is not None
    assert [(c["type"], c["reason"]) for c in control.trainjob.conditions] == [
        ("Complete", "AllJobsCompleted")]


def test_a_trainjob_of_a_runtime_kind_left_to_its_default_finds_no_runtime() -> None:
    runtime, trainjob = runtime_and_trainjob()
    del trainjob["spec"]["runtimeRef"]["kind"]  # ClusterTrainingRuntime
    control, _ = control_plane(runtime, trainjob)
    assert control.jobset is None and control.pods == []
    assert any("ClusterTrainingRuntime rt not found" in e for e in control.events)


def test_the_training_runtime_webhook_wants_a_node_container() -> None:
    runtime, trainjob = runtime_and_trainjob()
    rjob = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    rjob["template"]["spec"]["template"]["spec"]["containers"][0]["name"] = "paddle"
    with pytest.raises(podsim.ControlPlaneError, match="ancestor: trainer"):
        control_plane(runtime, trainjob)


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
