"""One builder per Kubernetes object: Plan in, the object as plain data out."""

from __future__ import annotations

import shlex
from typing import Any

from paddlegen.compiler.plan import DATA_MOUNT, EFS_MOUNT_OPTIONS, VOLUME_NAME, Plan
from paddlegen.schema.models import KubeAwsSpec

Object = dict[str, Any]
# The seed image's entry point, run by an absolute bash (the seeds' "bin/bash" works only from /).
TRAINER_COMMAND = ["/bin/bash", "-c", "/root/start.sh"]


def metadata(plan: Plan, name: str, *, namespaced: bool = True, component: str = "") -> Object:
    labels = dict(plan.labels)
    if component:
        labels["app.kubernetes.io/component"] = component
    meta: Object = {"name": name}
    if namespaced:
        meta["namespace"] = plan.namespace
    meta["labels"] = labels
    return meta


def persistent_volume(plan: Plan) -> Object:
    storage = plan.spec.storage
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": metadata(plan, plan.volume_name, namespaced=False, component="storage"),
        "spec": {
            "capacity": {"storage": storage.capacity},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            # "" (not a default StorageClass) and claimRef: only this claim may bind this volume
            "storageClassName": "",
            "claimRef": {"namespace": plan.namespace, "name": storage.claim_name},
            "mountOptions": list(EFS_MOUNT_OPTIONS),
            "nfs": {"server": storage.efs.dns_name, "path": "/"},
        },
    }


def persistent_volume_claim(plan: Plan) -> Object:
    storage = plan.spec.storage
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata(plan, storage.claim_name, component="storage"),
        "spec": {
            "accessModes": ["ReadWriteMany"],
            # "" stops a default StorageClass from provisioning a volume of its own
            "storageClassName": "",
            "volumeName": plan.volume_name,
            "resources": {"requests": {"storage": storage.request}},
        },
    }


def service_account(plan: Plan) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": metadata(plan, plan.service_account, component="trainer"),
    }


def pod_reader_role(plan: Plan) -> Object:
    # The entry point lists the job's pods (labelSelector=job-name=<name>) to rank trainers by IP.
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": metadata(plan, plan.pod_reader_role, component="trainer"),
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
    }


def pod_reader_binding(plan: Plan) -> Object:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": metadata(plan, plan.pod_reader_role, component="trainer"),
        "subjects": [{"kind": "ServiceAccount", "name": plan.service_account,
                      "namespace": plan.namespace}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": plan.pod_reader_role},
    }


def claim_volume(plan: Plan) -> Object:
    return {"name": VOLUME_NAME,
            "persistentVolumeClaim": {"claimName": plan.spec.storage.claim_name}}


def shared_volume(plan: Plan) -> Object:
    """The volume holding data, configs and output: the EFS claim, or EFS mounted on each host."""
    if isinstance(plan.spec, KubeAwsSpec):
        return claim_volume(plan)
    return {"name": VOLUME_NAME, "hostPath": {"path": plan.spec.storage.host_path,
                                              "type": "Directory"}}


def env(pairs: dict[str, object]) -> list[Object]:
    return [{"name": name, "value": str(value)} for name, value in pairs.items()]


def data_job(plan: Plan) -> Object:
    dataset = plan.spec.dataset
    container = {
        "name": "paddle-data",
        "image": dataset.image,
        "imagePullPolicy": "Always",
        "env": env({"OUT_DIR": plan.data_out_dir, "SPLIT_COUNT": plan.split_count}),
        "volumeMounts": [{"name": VOLUME_NAME, "mountPath": DATA_MOUNT}],
    }
    return job(plan, dataset.job_name, "data", {
        "automountServiceAccountToken": False,  # it never talks to the API server
        "containers": [container],
        "volumes": [claim_volume(plan)],
    })


def training_job(plan: Plan) -> Object:
    t = plan.spec.training
    container = {
        "name": "trainer",
        "image": t.image,
        "command": TRAINER_COMMAND,
        "env": env({
            "JOB_NAME": plan.name,
            "JOB_PATH": t.job_path,
            "JOB_NAMESPACE": plan.namespace,
            "TRAIN_CONFIG_DIR": t.config_dir,
            "CONF_PADDLE_NIC": t.nic,
            "CONF_PADDLE_PORT": t.port,
            "CONF_PADDLE_PORTS_NUM": t.ports_num,
            "CONF_PADDLE_PORTS_NUM_SPARSE": t.ports_num_for_sparse,
            "CONF_PADDLE_GRADIENT_NUM": plan.gradient_servers,
            "TRAINER_COUNT": t.trainer_count,
        }),
        "ports": [{"name": port.name, "containerPort": port.number, "hostPort": port.number}
                  for port in plan.ports],
        "volumeMounts": [{"name": VOLUME_NAME, "mountPath": t.job_path}],
    }
    # Applied all at once (kubectl apply -k, GitOps), the trainers would start before the data
    # Job has written the last part; the entry point would fail and the retried pods get new IPs,
    # and so new trainer ids. Waiting here keeps `create` in any order safe.
    wait = (f"until [ -d {shlex.quote(plan.data_ready_dir)} ]; do "
            f"echo waiting for {shlex.quote(plan.data_ready_dir)}; sleep 10; done")
    wait_for_data = {"name": "wait-for-data", "image": t.image,
                     "command": ["/bin/bash", "-c", wait],
                     "volumeMounts": container["volumeMounts"]}
    return job(plan, plan.name, "trainer", {
        "serviceAccountName": plan.service_account,
        "initContainers": [wait_for_data],
        "containers": [container],
        "volumes": [shared_volume(plan)],
    }, parallelism=plan.trainers)


def local_training_job(plan: Plan) -> Object:
    """Seed 004: `paddle train` with the spec's flags; the models land in a host directory."""
    t = plan.spec.training
    container = {
        "name": "trainer",
        "image": t.image,
        "workingDir": t.work_dir,
        "command": ["paddle", "train"],
        "args": list(plan.trainer_flags),
        "volumeMounts": [{"name": "output", "mountPath": t.save_dir}],
    }
    return job(plan, plan.name, "trainer", {
        "automountServiceAccountToken": False,
        "containers": [container],
        "volumes": [{"name": "output", "hostPath": {"path": plan.spec.storage.host_path,
                                                    "type": "DirectoryOrCreate"}}],
    })


def job(plan: Plan, name: str, component: str, pod_spec: Object, parallelism: int = 1) -> Object:
    meta = metadata(plan, name, component=component)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "template": {
                "metadata": {"labels": dict(meta["labels"])},
                "spec": {**pod_spec, "restartPolicy": "Never"},
            },
        },
    }
