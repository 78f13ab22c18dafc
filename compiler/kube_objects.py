"""One builder per Kubernetes object that several profiles emit: plan parts in, plain data out.

Every builder takes the target release and writes only the fields that release serves.
"""

from __future__ import annotations

import json
from typing import Any

from paddlegen.compiler.kube_schema import INIT_CONTAINERS_ANNOTATION
from paddlegen.compiler.plan import (
    TRAINER_ID_VARIABLE,
    ClaimVolume,
    DataJob,
    HostVolume,
    Meta,
    PodReader,
    Port,
    PserverTraining,
)
from paddlegen.compiler.render import Block
from paddlegen.compiler.targets import KubeRelease

Object = dict[str, Any]
# Before the securityContext field (1.19), the pod's seccomp profile is this annotation.
SECCOMP_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
# The seed image's entry point, run by an absolute bash (the seeds' "bin/bash" works only from /).
TRAINER_COMMAND = ["/bin/bash", "-c", "/root/start.sh"]
# The launcher script (compiler/launcher.py), from a ConfigMap.
LAUNCHER_VOLUME = "launcher"
LAUNCHER_MOUNT = "/opt/paddlegen"
LAUNCHER_SCRIPT = "launch.sh"
LAUNCHER_COMMAND = ("/bin/bash", f"{LAUNCHER_MOUNT}/{LAUNCHER_SCRIPT}")


def metadata(meta: Meta, name: str, *, namespaced: bool = True, component: str = "") -> Object:
    labels = meta.labels
    if component:
        labels["app.kubernetes.io/component"] = component
    result: Object = {"name": name}
    if namespaced:
        result["namespace"] = meta.namespace
    result["labels"] = labels
    return result


def persistent_volume(meta: Meta, name: str, capacity: str, claim_name: str, source: Object,
                      mount_options: tuple[str, ...] = (),
                      volume_mode: str | None = None) -> Object:
    """A PersistentVolume that only `claim_name` may bind (claimRef), of a volume `source`
    (`{"nfs": ...}`, `{"csi": ...}`); mount options where the release has the field."""
    kube = meta.target.kube
    spec: Object = {"capacity": {"storage": capacity}}
    if volume_mode:
        spec["volumeMode"] = volume_mode
    spec["accessModes"] = ["ReadWriteMany"]
    spec["persistentVolumeReclaimPolicy"] = "Retain"
    if kube.storage_class_name_field:
        # "" (not a default StorageClass) and claimRef: only this claim may bind this volume
        spec["storageClassName"] = ""
    spec["claimRef"] = {"namespace": meta.namespace, "name": claim_name}
    if mount_options and kube.mount_options_field:
        spec["mountOptions"] = list(mount_options)
    spec |= source
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": metadata(meta, name, namespaced=False, component="storage"),
            "spec": spec}


def persistent_volume_claim(meta: Meta, claim_name: str, request: str,
                            volume_name: str | None = None,
                            storage_class_name: str = "") -> Object:
    """A ReadWriteMany claim: of the one volume named (storageClassName ""), or provisioned by
    a StorageClass."""
    spec: Object = {"accessModes": ["ReadWriteMany"]}
    if meta.target.kube.storage_class_name_field:
        # "" stops a default StorageClass from provisioning a volume of its own
        spec["storageClassName"] = storage_class_name
    if volume_name is not None:
        spec["volumeName"] = volume_name
    spec["resources"] = {"requests": {"storage": request}}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": metadata(meta, claim_name, component="storage"), "spec": spec}


def pod_reader(meta: Meta, reader: PodReader | None) -> list[Object]:
    """The seed entry point lists the job's pods (labelSelector=job-name=<name>) to rank the
    trainers by IP: an account of their own that may read pods and nothing else (none where
    the plan has no reader)."""
    if reader is None:
        return []
    account = {"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": metadata(meta, reader.account, component="trainer")}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": metadata(meta, reader.role, component="trainer"),
            "rules": [{"apiGroups": [""], "resources": ["pods"],
                       "verbs": ["get", "list", "watch"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": metadata(meta, reader.role, component="trainer"),
               "subjects": [{"kind": "ServiceAccount", "name": reader.account,
                             "namespace": meta.namespace}],
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": reader.role}}
    return [account, role, binding]


def shared_volume(training: PserverTraining, kube: KubeRelease) -> Object:
    """The volume holding data, configs and output: a claim, or a directory of each host."""
    if isinstance(training.volume, ClaimVolume):
        return claim_volume(training.volume)
    return host_volume(training.volume, kube)


def claim_volume(claim: ClaimVolume) -> Object:
    return {"name": claim.name, "persistentVolumeClaim": {"claimName": claim.claim_name}}


def host_volume(volume: HostVolume, kube: KubeRelease) -> Object:
    source: Object = {"path": volume.path}
    if kube.host_path_type_field:
        source["type"] = "DirectoryOrCreate" if volume.create else "Directory"
    return {"name": volume.name, "hostPath": source}


def env(pairs: dict[str, object]) -> list[Object]:
    return [{"name": name, "value": str(value)} for name, value in pairs.items()]


def data_job(meta: Meta, data: DataJob, claim: ClaimVolume) -> Object:
    container = {
        "name": "paddle-data",
        "image": data.image,
        "env": env({"OUT_DIR": data.out_dir, "SPLIT_COUNT": data.split_count}),
        "resources": data.resources,
        "volumeMounts": [{"name": claim.name, "mountPath": claim.data_mount}],
    }
    pod: Object = {"containers": [container], "volumes": [claim_volume(claim)]}
    return job(meta, data.name, "data", without_api_token(meta, pod),
               deadline_seconds=data.deadline_seconds, ttl_seconds=data.ttl_seconds)


def training_job(meta: Meta, training: PserverTraining) -> Object:
    """The parameter-server training Job: the seed image's entry point (seed launcher), or
    the launcher script in an Indexed Job (indexed launcher)."""
    # A pserver cannot take a replacement trainer (a new one would get a new rank from the
    # seed entry point, and with the others a pserver shard starts empty): fail the Job.
    indexed = {"completion_mode": "Indexed"} if training.launch.service else {}
    return job(meta, training.name, "trainer", trainer_pod(meta, training),
               parallelism=training.trainers,
               deadline_seconds=training.deadline_seconds, backoff_limit=0,
               init_containers=[wait_for_data(training)], ttl_seconds=training.ttl_seconds,
               **indexed)


def trainer_pod(meta: Meta, training: PserverTraining) -> Object:
    launch = training.launch
    pod: Object = {}
    if training.pod_reader:
        pod["serviceAccountName"] = training.pod_reader.account
    elif launch.scripted:
        pod["automountServiceAccountToken"] = False  # the launcher never calls the API
    if launch.service:
        pod["subdomain"] = launch.service  # <job>-<index>.<service>: the stable names
    pod["containers"] = [trainer_container(meta, training)]
    pod["volumes"] = trainer_volumes(meta, training)
    return pod


def trainer_container(meta: Meta, training: PserverTraining) -> Object:
    """The trainer pod's container: a pserver and a trainer. The seed's entry point reads its
    settings from the environment and binds hostPorts (one trainer per node); the launcher
    script has them written in, reads its index from the pod, and needs no hostPort (the pods
    reach each other at their own addresses)."""
    launch = training.launch
    seed = not launch.scripted
    # the training operator takes only a container named paddle
    container: Object = {"name": "paddle" if launch.operator else "trainer",
                         "image": training.image}
    if seed:
        container["command"] = TRAINER_COMMAND
        container["env"] = env({
            "JOB_NAME": training.name,
            "JOB_PATH": training.job_path,
            "JOB_NAMESPACE": meta.namespace,
            "TRAIN_CONFIG_DIR": training.config_dir,
            "CONF_PADDLE_NIC": training.nic,
            "CONF_PADDLE_PORT": training.ports[0].number,
            "CONF_PADDLE_PORTS_NUM": len(training.dense_ports),
            "CONF_PADDLE_PORTS_NUM_SPARSE": len(training.sparse_ports),
            "CONF_PADDLE_GRADIENT_NUM": training.gradient_servers,
            "TRAINER_COUNT": training.trainer_count,
        })
    else:
        container["command"] = list(LAUNCHER_COMMAND)
        container["env"] = [{"name": TRAINER_ID_VARIABLE, "valueFrom": {
            "fieldRef": {"fieldPath": launch.index_field}}}]
    container["ports"] = [{"name": port.name, "containerPort": port.number,
                           **({"hostPort": port.number} if seed else {})}
                          for port in training.ports]
    container["resources"] = training.resources
    mounts: list[Object] = [{"name": training.volume.name, "mountPath": training.job_path}]
    if not seed:
        mounts.append({"name": LAUNCHER_VOLUME, "mountPath": LAUNCHER_MOUNT, "readOnly": True})
    container["volumeMounts"] = mounts
    return container


def trainer_volumes(meta: Meta, training: PserverTraining) -> list[Object]:
    volumes = [shared_volume(training, meta.target.kube)]
    if training.launch.scripted:
        volumes.append({"name": LAUNCHER_VOLUME,
                        "configMap": {"name": launcher_name(training), "defaultMode": 0o444}})
    return volumes


def wait_for_data(training: PserverTraining) -> Object:
    """Applied all at once (kubectl apply -k, GitOps), the trainers would start before the data
    Job has written the last part; the entry point would fail and the retried pods get new IPs,
    and so new trainer ids. Waiting here keeps `create` in any order safe."""
    gate = training.data_ready
    wait = f"until {gate.test}; do sleep 10; done"
    return {"name": "wait-for-data", "image": training.image,
            "command": ["/bin/bash", "-c", wait, "wait-for-data", *gate.args],
            "resources": WAIT_RESOURCES,
            "volumeMounts": [{"name": training.volume.name, "mountPath": training.job_path}]}


def launcher_name(training: PserverTraining) -> str:
    return f"{training.name}-launcher"


def launcher_config_map(meta: Meta, training: PserverTraining, script: str) -> Object:
    """The launcher script, mounted into every trainer pod."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": metadata(meta, launcher_name(training), component="trainer"),
            "data": {LAUNCHER_SCRIPT: Block(script)}}


def headless_service(meta: Meta, name: str, ports: list[tuple[str, int]]) -> Object:
    """The Indexed Job pods' subdomain: <job>-<index>.<service> resolves to each pod, from the
    moment it has an address (the launchers wait for their peers themselves)."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": metadata(meta, name, component="trainer"),
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                     "selector": trainer_selector(meta),
                     "ports": [{"name": port, "protocol": "TCP", "port": number}
                               for port, number in ports]}}


def pod_disruption_budget(meta: Meta, name: str, trainers: int) -> list[Object]:
    """No voluntary eviction of a trainer: the run could not take a replacement. `kubectl
    drain` waits for the run to end (its deadline bounds the wait); an EKS managed node group
    upgrade gives up on the node after its eviction timeout, unless forced. minAvailable, since
    maxUnavailable needs a scale subresource that neither a Job nor a PaddleJob has."""
    if not meta.target.kube.pod_disruption_budget_v1:
        return []
    return [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
             "metadata": metadata(meta, name, component="trainer"),
             "spec": {"minAvailable": trainers,
                      "selector": {"matchLabels": trainer_selector(meta)}}}]


def trainer_selector(meta: Meta) -> dict[str, str]:
    return {"app.kubernetes.io/instance": meta.name, "app.kubernetes.io/component": "trainer"}


def paddle_job(meta: Meta, training: PserverTraining) -> Object:
    """The parameter-server PaddleJob: Worker i runs the launcher script as trainer i, after
    the data; a restarted worker would come back with an empty pserver shard."""
    template = pod_template(meta, "trainer", trainer_pod(meta, training),
                            [wait_for_data(training)])
    return worker_paddle_job(meta, training.name, training.trainers, template,
                             training.deadline_seconds, training.ttl_seconds)


def worker_paddle_job(meta: Meta, name: str, workers: int, template: Object,
                      deadline_seconds: int, ttl_seconds: int | None) -> Object:
    """Kubeflow's PaddleJob (kubeflow.org/v1, training operator v1.9) of Worker replicas only.
    restartPolicy Never: a restarted worker cannot rejoin the run. No backoffLimit: the
    operator ignores it under restartPolicy Never (and logs so on every reconcile).
    cleanPodPolicy Running: when the job fails (a worker failed, the deadline passed) the
    operator deletes the workers still running, which would otherwise wait for their dead peer
    forever; failed ones stay, with their logs."""
    run_policy: Object = {"cleanPodPolicy": "Running", "activeDeadlineSeconds": deadline_seconds}
    if ttl_seconds is not None:
        run_policy["ttlSecondsAfterFinished"] = ttl_seconds
    return {"apiVersion": "kubeflow.org/v1", "kind": "PaddleJob",
            "metadata": metadata(meta, name, component="trainer"),
            "spec": {"runPolicy": run_policy, "paddleReplicaSpecs": {"Worker": {
                "replicas": workers, "restartPolicy": "Never", "template": template}}}}


# The wait for the data: a shell loop.
WAIT_RESOURCES = {"requests": {"cpu": "10m", "memory": "16Mi"},
                  "limits": {"cpu": "100m", "memory": "64Mi"}}
# What root needs to manage files it unpacks and copies (busybox tar gives them their
# archive's owners, then their modes), for images that run as root.
ROOT_FILE_CAPABILITIES = ["CHOWN", "DAC_OVERRIDE", "FOWNER"]


def pull_policy(image: str) -> str:
    """A digest never changes, so the node's copy will do; a tag may move."""
    return "IfNotPresent" if "@sha256:" in image else "Always"


def hardened(meta: Meta, container: Object, pull: str | None = None) -> Object:
    """A container with its pull policy and a security context: no privilege escalation (as
    far as the release serves it), no capabilities (root images keep the three that manage
    files), a read-only root as the spec says."""
    pods, kube = meta.pods, meta.target.kube
    security: Object = {}
    if kube.allow_privilege_escalation_field:
        security["allowPrivilegeEscalation"] = False
    capabilities: Object = {"drop": ["ALL"]}
    if not pods.run_as_non_root:
        capabilities["add"] = list(ROOT_FILE_CAPABILITIES)
    security["capabilities"] = capabilities
    security["readOnlyRootFilesystem"] = pods.read_only_root_filesystem
    first = {key: container[key] for key in ("name", "image")}
    rest = {key: value for key, value in container.items()
            if key not in first and (key != "resources" or value)}
    return {**first, "imagePullPolicy": pull or pull_policy(container["image"]), **rest,
            "securityContext": security}


def pod_policy_fields(meta: Meta) -> Object:
    """Where every pod of the job runs (the rule release-fields keeps out what the release
    lacks)."""
    pods = meta.pods
    fields: Object = {}
    if pods.priority_class_name:
        fields["priorityClassName"] = pods.priority_class_name
    if pods.node_selector:
        fields["nodeSelector"] = dict(pods.node_selector)
    if pods.tolerations:
        fields["tolerations"] = [dict(toleration) for toleration in pods.tolerations]
    return fields


def pod_template(meta: Meta, component: str, pod: Object,
                 init_containers: list[Object] | None = None,
                 pull: str | None = None) -> Object:
    """A pod template of hardened containers; init containers and the seccomp profile as far
    as the release serves them."""
    kube = meta.target.kube
    labels = metadata(meta, meta.name, component=component)["labels"]
    template_meta: Object = {"labels": dict(labels)}
    annotations: Object = {}
    pod = {**pod, "containers": [hardened(meta, c, pull) for c in pod["containers"]]}
    inits = [hardened(meta, c, pull) for c in init_containers or []]
    if inits and kube.init_containers_field:
        pod = {"initContainers": inits, **pod}
    elif inits:
        annotations[INIT_CONTAINERS_ANNOTATION] = Block(json.dumps(inits, indent=2))
    if not kube.seccomp_field:
        annotations[SECCOMP_ANNOTATION] = kube.seccomp_runtime_default
    if annotations:
        template_meta["annotations"] = annotations
    security: Object = {"runAsNonRoot": meta.pods.run_as_non_root}
    if meta.pods.run_as_user is not None:
        security["runAsUser"] = meta.pods.run_as_user
    if kube.seccomp_field:
        security["seccompProfile"] = {"type": "RuntimeDefault"}
    pod = {**pod, **pod_policy_fields(meta), "securityContext": security}
    return {"metadata": template_meta, "spec": {**pod, "restartPolicy": "Never"}}


def job(meta: Meta, name: str, component: str, pod: Object, *, parallelism: int = 1,
        deadline_seconds: int, backoff_limit: int | None = None,
        init_containers: list[Object] | None = None, ttl_seconds: int | None = None,
        pull: str | None = None, completion_mode: str | None = None) -> Object:
    """A batch/v1 Job; backoffLimit and the TTL as far as the release serves them."""
    kube = meta.target.kube
    spec: Object = {"parallelism": parallelism, "completions": parallelism}
    if completion_mode:
        spec["completionMode"] = completion_mode
    spec["activeDeadlineSeconds"] = deadline_seconds
    if backoff_limit is not None and kube.backoff_limit_field:
        spec["backoffLimit"] = backoff_limit
    if ttl_seconds is not None:
        spec["ttlSecondsAfterFinished"] = ttl_seconds  # the rule release-fields checks it
    spec["template"] = pod_template(meta, component, pod, init_containers, pull)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": metadata(meta, name, component=component), "spec": spec}


def without_api_token(meta: Meta, pod: Object) -> Object:
    """A pod that never talks to the API server gets no token, where the release can say so."""
    if meta.target.kube.automount_token_field:
        return {"automountServiceAccountToken": False, **pod}
    return pod


def network_policy(meta: Meta, ports: tuple[Port, ...]) -> list[Object]:
    """Traffic to the job's pods only from its trainers, and only to the pserver ports (none at
    all when there are none); where the release has networking.k8s.io/v1. It takes a CNI that
    enforces NetworkPolicies (the runbooks say so)."""
    if not meta.target.kube.network_policy_v1:
        return []
    job = {"matchLabels": {"app.kubernetes.io/instance": meta.name}}
    trainers = {"matchLabels": trainer_selector(meta)}
    ingress = [{"from": [{"podSelector": trainers}],
                "ports": [{"protocol": "TCP", "port": port.number} for port in ports]}] \
        if ports else []
    return [{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
             "metadata": metadata(meta, meta.name), "spec": {
                 "podSelector": job, "policyTypes": ["Ingress"], "ingress": ingress}}]


def namespace(meta: Meta) -> list[Object]:
    """The job's namespace, first in apply order, unless it is one every cluster has."""
    if meta.namespace == "default":
        return []
    return [{"apiVersion": "v1", "kind": "Namespace",
             "metadata": metadata(meta, meta.namespace, namespaced=False)}]


MODELS_MOUNT = "/shared"
HELPER_IMAGE = "busybox:1.36"


def models_pod(meta: Meta, training: PserverTraining) -> Object:
    """A pod that mounts the trainers' volume read-only, for the runbook to copy the models off
    it (`kubectl exec ... tar`), whatever the volume is (a claim, a host directory)."""
    volume = shared_volume(training, meta.target.kube)
    if "persistentVolumeClaim" in volume:
        volume["persistentVolumeClaim"]["readOnly"] = True
    return reader_pod(meta, f"{training.name}-models", "models", volume)


def reader_pod(meta: Meta, name: str, component: str, volume: Object) -> Object:
    """A pod that only holds `volume` mounted read-only at MODELS_MOUNT, for `kubectl exec`."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": metadata(meta, name, component=component),
            "spec": {"containers": [{"name": component, "image": HELPER_IMAGE,
                                     "command": ["sleep", "3600"],
                                     "volumeMounts": [{"name": volume["name"],
                                                       "mountPath": MODELS_MOUNT,
                                                       "readOnly": True}]}],
                     "volumes": [volume], "restartPolicy": "Never"}}
