"""The releases a profile deploys to, and what each Kubernetes release serves.

Emitters ask the release, never a version string: a field appears only where the cluster the
runbook builds has it, and the objects are checked against that release's own schema.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KubeRelease:
    """A Kubernetes release, and the schema set its objects are checked against."""

    version: str  # as the cluster runs it: "1.4.6", "1.8.4", "1.5", "1.35"
    schema: str  # schema set: "1.5" stands in for 1.4 (the closest published API)

    @property
    def minor(self) -> str:
        """"1.4.6" -> "1.4": the value of the spec's kubeVersion."""
        return ".".join(self.version.split(".")[:2])

    def since(self, minor: int) -> bool:
        return int(self.version.split(".")[1]) >= minor

    # Each property names the release that introduced the field or API (the API reference and
    # the changelogs of each release).
    @property
    def rbac_v1(self) -> bool:
        """rbac.authorization.k8s.io/v1 (1.8)."""
        return self.since(8)

    @property
    def init_containers_field(self) -> bool:
        """PodSpec.initContainers (1.6); before, the pod.beta annotation (1.4, 1.5)."""
        return self.since(6)

    @property
    def automount_token_field(self) -> bool:
        """PodSpec.automountServiceAccountToken (1.6)."""
        return self.since(6)

    @property
    def storage_class_name_field(self) -> bool:
        """PersistentVolume(Claim)Spec.storageClassName (1.6)."""
        return self.since(6)

    @property
    def mount_options_field(self) -> bool:
        """PersistentVolumeSpec.mountOptions (1.8)."""
        return self.since(8)

    @property
    def host_path_type_field(self) -> bool:
        """HostPathVolumeSource.type (1.8)."""
        return self.since(8)

    @property
    def backoff_limit_field(self) -> bool:
        """JobSpec.backoffLimit (1.8); before, a failed pod is replaced until the deadline."""
        return self.since(8)

    @property
    def allow_privilege_escalation_field(self) -> bool:
        """SecurityContext.allowPrivilegeEscalation (1.8)."""
        return self.since(8)

    @property
    def network_policy_v1(self) -> bool:
        """networking.k8s.io/v1 NetworkPolicy (1.7)."""
        return self.since(7)

    @property
    def tolerations_field(self) -> bool:
        """PodSpec.tolerations (1.6)."""
        return self.since(6)

    @property
    def priority_class_field(self) -> bool:
        """PodSpec.priorityClassName, on by default (1.11)."""
        return self.since(11)

    @property
    def seccomp_field(self) -> bool:
        """SecurityContext.seccompProfile (1.19); before, the seccomp annotation (1.3)."""
        return self.since(19)

    @property
    def seccomp_runtime_default(self) -> str:
        """The annotation's name for the runtime's default profile (runtime/default, 1.11)."""
        return "runtime/default" if self.since(11) else "docker/default"

    @property
    def ttl_after_finished_field(self) -> bool:
        """JobSpec.ttlSecondsAfterFinished, on by default (1.21)."""
        return self.since(21)

    @property
    def indexed_job(self) -> bool:
        """JobSpec.completionMode Indexed, and the pods' hostname and subdomain from it (1.24)."""
        return self.since(24)

    @property
    def pod_disruption_budget_v1(self) -> bool:
        """policy/v1 PodDisruptionBudget (1.21)."""
        return self.since(21)


@dataclass(frozen=True)
class Target:
    """What a spec deploys with: the tool that makes the cluster and the Kubernetes it runs."""

    tool: str  # the cluster tool and its release, such as "cluster/kube-up.sh of Kubernetes 1.5"
    kube: KubeRelease

    def describe(self) -> str:
        schema = "" if self.kube.schema == self.kube.minor else (
            f" (objects checked against the Kubernetes {self.kube.schema} API, the closest "
            "published schema)")
        return f"{self.tool}, Kubernetes {self.kube.version}{schema}"
