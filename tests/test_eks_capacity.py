"""eks: trainer pods sized to the instance type, /dev/shm on every trainer, a job that fits its
node group or is refused, and instance types PaddlePaddle's images cannot run on named for what
they are. The expected numbers are computed here from the vendored table, not by the code under
test."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest
from ruamel.yaml import YAML

from paddlegen.compiler.build import build
from paddlegen.compiler.problems import Problem, SpecError
from paddlegen.compiler.spec import load_spec

from conftest import GOLDEN, ROOT

TABLE: dict[str, dict[str, Any]] = {
    name: facts for name, facts in
    json.loads((ROOT / "profiles" / "aws" / "instance-types.json").read_text()).items()
    if not name.startswith("_")}
GPU_TYPES = sorted(name for name, facts in TABLE.items() if facts["gpus"])
EFA_GPU_TYPES = [name for name in GPU_TYPES if TABLE[name]["efaInterfaces"]]
MIB = 2**20
# The allowance for the cluster's own pods, as training.resources' description states it: the
# DaemonSets' requests (aws-node 50m, kube-proxy 100m, the EFA plugin 10m and 20Mi), room for two
# CoreDNS (100m, 70Mi) and two metrics-server (100m, 200Mi) replicas, and 512Mi unrequested.
ALLOWANCE = (550, 1052)
EFA_ALLOWANCE = (560, 1072)
YAML_SAFE = YAML(typ="safe", pure=True)


def allocatable(kind: str) -> tuple[int, int]:
    """The EKS AMI kubelet's allocatable, millicores and MiB: 6% of the first core, 1% of the
    second, 0.5% of the next two, 0.25% of the rest; 11 MiB a pod, 255 MiB and 100 MiB."""
    facts = TABLE[kind]
    cores = facts["vcpu"]
    percent = (Fraction(6) + min(cores - 1, 1) + Fraction(1, 2) * min(max(cores - 2, 0), 2)
               + Fraction(1, 4) * max(cores - 4, 0))
    millicores = int(cores * 1000 - percent * 10)  # a percent of a core is 10 millicores
    return millicores, facts["memoryMiB"] - 11 * facts["maxPods"] - 255 - 100


def room(kind: str, efa: bool = False) -> tuple[int, int]:
    """What a node leaves the trainer pods: millicores and MiB."""
    cpu, memory = allocatable(kind)
    kept_cpu, kept_memory = EFA_ALLOWANCE if efa else ALLOWANCE
    return cpu - kept_cpu, memory - kept_memory


def spec(kind: str = "g5.xlarge", *, gpus: int | None = 1, nodes: int = 2,
         workers: int | None = None, efa: bool = False, resources: str = "",
         framework: str = "paddle") -> str:
    cluster = [f"  workerInstanceType: {kind}", *(["  efa: true"] if efa else []),
               *([f"  workerCount: {workers}"] if workers is not None else [])]
    training = [f"  framework: {framework}", f"  nodes: {nodes}"]
    if framework == "paddle":
        training += ["  image: registry.example.org/acme/ctr-train:1.4",
                     "  script: /workspace/train.py",
                     *([f"  gpusPerNode: {gpus}"] if gpus is not None else [])]
    else:
        training += ["  launcher: indexed"]
    if resources:
        training += ["  resources:", *(f"    {line}" for line in resources.splitlines())]
    return "\n".join([
        "apiVersion: paddlegen/v1", "kind: TrainingJob",
        "metadata: {name: ctr-p3, namespace: ml}", "profile: eks", "cluster:",
        "  name: ctr-p3", "  region: us-west-2", "  availabilityZones: [us-west-2a, us-west-2b]",
        '  accountId: "000123456789"', *cluster,
        "storage:", "  efs: {fileSystemId: fs-0123456789abcdef0}", "training:", *training, ""])


def where(text: str, line_start: str) -> str:
    """'line:column' of the value on the line that starts with `line_start` (a key and ': ')."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(line_start):
            return f"{number}:{len(line_start) + 1}"
    raise AssertionError(f"no line starts with {line_start!r}")


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as raised:
        load_spec(text.encode(), "spec.yaml")
    return [str(p) for p in raised.value.problems if p.severity == "error"]


def warnings(text: str) -> list[str]:
    return [str(w) for w in load_spec(text.encode(), "spec.yaml")[2]]


def passes(text: str) -> tuple[Problem, ...]:
    """The spec builds; its warnings."""
    return build(text.encode(), "spec.yaml").warnings


def trainer(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The built trainer container and its pod spec."""
    result = build(text.encode(), "spec.yaml")
    job = next(m.obj for m in result.manifests if m.obj["kind"] == "Job")
    pod = job["spec"]["template"]["spec"]
    [container] = pod["containers"]
    return container, pod


def shm(pod: dict[str, Any], container: dict[str, Any]) -> dict[str, Any]:
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    found: dict[str, Any] = next(v for v in pod["volumes"] if v["name"] == mounts["/dev/shm"])
    return found


# Derived resources

def test_a_g5_xlarge_pod_gets_its_node_less_the_allowance_as_requests_and_limits() -> None:
    millicores, mib = room("g5.xlarge")
    assert allocatable("g5.xlarge") == (3920, 15391)  # 4 vCPUs, 16 GiB, 58 pods
    assert (millicores, mib) == (3370, 14339)
    container, pod = trainer(spec())
    size = {"cpu": f"{millicores}m", "memory": f"{mib}Mi"}
    assert container["resources"] == {"requests": size, "limits": {**size, "nvidia.com/gpu": "1"}}
    # /dev/shm: a quarter of the memory limit, memory-backed
    assert shm(pod, container)["emptyDir"] == {"medium": "Memory", "sizeLimit": f"{mib // 4}Mi"}


def test_a_p4d_pod_with_efa_gets_all_eight_gpus_four_adapters_and_its_node() -> None:
    millicores, mib = room("p4d.24xlarge", efa=True)
    assert allocatable("p4d.24xlarge") == (95690, 1171186)  # 96 vCPUs, 1152 GiB, 737 pods
    assert (millicores, mib) == (95130, 1170114)
    container, pod = trainer(spec("p4d.24xlarge", gpus=8, efa=True))
    size = {"cpu": f"{millicores}m", "memory": f"{mib}Mi"}
    assert container["resources"] == {"requests": size, "limits": {
        **size, "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4"}}
    assert shm(pod, container)["emptyDir"]["sizeLimit"] == "64Gi"  # the bound: a quarter is more


def test_the_golden_efa_tree_is_the_p4d_one() -> None:
    job = YAML_SAFE.load((GOLDEN / "eks-paddle-efa" / "out" / "k8s" / "90-job-linear.yaml")
                         .read_text())
    [container] = job["spec"]["template"]["spec"]["containers"]
    millicores, mib = room("p4d.24xlarge", efa=True)
    assert container["resources"]["requests"] == {"cpu": f"{millicores}m", "memory": f"{mib}Mi"}
    config = YAML_SAFE.load((GOLDEN / "eks-paddle-efa" / "out" / "aws" / "eksctl-cluster.yaml")
                            .read_text())
    [group] = config["managedNodeGroups"]
    assert group["desiredCapacity"] == 2 and group["efaEnabled"] is True


@pytest.mark.parametrize("kind", GPU_TYPES)
def test_pods_that_share_a_node_share_it_equally(kind: str) -> None:
    gpus = TABLE[kind]["gpus"]
    millicores, mib = room(kind)
    container, _ = trainer(spec(kind, gpus=1, nodes=gpus))
    assert container["resources"]["requests"] == {"cpu": f"{millicores // gpus}m",
                                                  "memory": f"{mib // gpus}Mi"}


def test_a_cpu_pod_takes_the_whole_node_and_the_node_group_defaults_to_the_fewest_nodes() -> None:
    millicores, mib = room("m5.xlarge")
    container, pod = trainer(spec("m5.xlarge", gpus=0))
    assert container["resources"]["limits"] == {"cpu": f"{millicores}m", "memory": f"{mib}Mi"}
    assert shm(pod, container)["emptyDir"]["medium"] == "Memory"  # CPU trainers get one too
    # 4 GPUs a node, one a pod: 5 pods need 2 nodes, not 5
    result = build(spec("g5.12xlarge", gpus=1, nodes=5).encode(), "spec.yaml")
    assert result.plan.cluster.worker_count == 2


def test_resources_the_spec_gives_are_used_as_given() -> None:
    container, pod = trainer(spec(resources="limits: {cpu: '2', memory: 8Gi}"))
    assert container["resources"] == {"limits": {"cpu": "2", "memory": "8Gi",
                                                 "nvidia.com/gpu": "1"}}
    assert shm(pod, container)["emptyDir"]["sizeLimit"] == "2Gi"


def test_paddle_v1_on_eks_keeps_the_tutorials_resources() -> None:
    result = build((GOLDEN / "eks" / "spec.yaml").read_bytes(), "spec.yaml")
    job = next(m.obj for m in result.manifests if m.obj["kind"] == "Job"
               and m.obj["metadata"]["name"] == result.plan.training.name)
    [container] = job["spec"]["template"]["spec"]["containers"]
    assert container["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"},
                                      "limits": {"cpu": "2", "memory": "6Gi"}}
    # what the spec gives is merged over them, as it was over eks.yaml's defaults
    partial = spec("m5.xlarge", framework="paddle-v1", resources="requests: {cpu: '2'}")
    assert build(partial.encode(), "spec.yaml").plan.training.resources == {
        "requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "6Gi"}}


def test_the_kubernetes_profiles_cpu_trainers_get_shared_memory_by_their_limit() -> None:
    job = YAML_SAFE.load((GOLDEN / "kubernetes" / "out" / "k8s" / "90-job-linear.yaml")
                         .read_text())
    pod = job["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["resources"]["limits"]["memory"] == "4Gi"  # the spec's
    assert shm(pod, container)["emptyDir"] == {"medium": "Memory", "sizeLimit": "1Gi"}


def test_the_allowance_is_stated_where_the_field_is_described() -> None:
    schema = json.loads((ROOT / "schema" / "paddlegen.schema.json").read_text())
    described = schema["$defs"]["WorkloadTraining"]["properties"]["resources"]["description"]
    assert "550m CPU and 1052Mi memory (560m and 1072Mi with EFA)" in described
    assert "kubernetes profile" in described


# The node group holds the pods, every GPU type

@pytest.mark.parametrize("kind", GPU_TYPES)
def test_pods_that_fit_the_node_group_exactly_pass_and_one_more_is_refused(kind: str) -> None:
    gpus = TABLE[kind]["gpus"]
    assert not [w for w in passes(spec(kind, gpus=1, workers=2, nodes=2 * gpus))
                if w.rule != "idle-gpus"]
    text = spec(kind, gpus=1, workers=2, nodes=2 * gpus + 1)
    assert problems(text) == [
        f"spec.yaml:{where(text, '  workerCount: ')}: cluster.workerCount: the node group, 2 "
        f"nodes of {kind} with room for {gpus} trainer pod{'s' if gpus > 1 else ''} each, holds "
        f"{2 * gpus} of the {2 * gpus + 1} pods of training.nodes: 1 would stay Pending; raise "
        f"workerCount to 3, or lower training.nodes to {2 * gpus} [node-group-capacity]"]


def test_the_issues_unschedulable_job_is_refused() -> None:
    text = spec("g5.xlarge", gpus=1, workers=1, nodes=2)
    assert problems(text) == [
        f"spec.yaml:{where(text, '  workerCount: ')}: cluster.workerCount: the node group, 1 "
        "node of g5.xlarge with room for 1 trainer pod each, holds 1 of the 2 pods of "
        "training.nodes: 1 would stay Pending; raise workerCount to 2, or lower training.nodes "
        "to 1 [node-group-capacity]"]


def test_pods_fit_a_node_by_their_requests_too() -> None:
    # three CPU pods of a third of an m5.xlarge each fit one node; a fourth does not
    millicores, mib = room("m5.xlarge")
    third = f"requests: {{cpu: {millicores // 3}m, memory: {mib // 3}Mi}}"
    passes(spec("m5.xlarge", gpus=0, workers=1, nodes=3, resources=third))
    assert "[node-group-capacity]" in problems(
        spec("m5.xlarge", gpus=0, workers=1, nodes=4, resources=third))[0]


@pytest.mark.parametrize(("kind", "efa"), [*((kind, False) for kind in GPU_TYPES),
                                           *((kind, True) for kind in EFA_GPU_TYPES)])
def test_requests_up_to_a_nodes_room_pass_and_a_millicore_or_a_byte_more_is_refused(
        kind: str, efa: bool) -> None:
    millicores, mib = room(kind, efa)
    cpu_allocatable, memory_allocatable = allocatable(kind)
    gpus = TABLE[kind]["gpus"]
    exact = f"requests: {{cpu: {millicores}m, memory: '{mib * MIB}'}}"
    passes(spec(kind, gpus=gpus, efa=efa, nodes=1, resources=exact))
    cpu = spec(kind, gpus=gpus, efa=efa, nodes=1,
               resources=f"requests: {{cpu: {millicores + 1}m}}")
    assert problems(cpu) == [
        f"spec.yaml:{where(cpu, '    requests: {cpu: ')}: training.resources.requests.cpu: "
        f"{millicores + 1}m does not fit on a {kind} node: its kubelet gives pods "
        f"{cpu_allocatable}m, of which the cluster's own pods keep {cpu_allocatable - millicores}m;"
        f" ask for at most {millicores}m, or choose a larger instance type [instance-capacity]"]
    memory = spec(kind, gpus=gpus, efa=efa, nodes=1,
                  resources=f"limits: {{memory: '{mib * MIB + 1}'}}")
    assert problems(memory) == [
        f"spec.yaml:{where(memory, '    limits: {memory: ')}: training.resources.limits.memory: "
        f"{mib * MIB + 1} does not fit on a {kind} node: its kubelet gives pods "
        f"{memory_allocatable}Mi, of which the cluster's own pods keep "
        f"{memory_allocatable - mib}Mi; ask for at most {mib}Mi, or choose a larger instance "
        "type [instance-capacity]"]


def smallest_with(gpus: int, family: str | None = None) -> str:
    return min((f["gpus"], f["vcpu"], f["memoryMiB"], name) for name, f in TABLE.items()
               if f["gpus"] >= gpus and (family is None or name.split(".")[0] == family))[3]


@pytest.mark.parametrize("kind", GPU_TYPES)
def test_more_gpus_than_the_type_has_is_refused_with_a_type_that_has_them(kind: str) -> None:
    gpus, family = TABLE[kind]["gpus"], kind.split(".")[0]
    text = spec(kind, gpus=gpus + 1)
    [problem] = problems(text)
    assert problem.startswith(
        f"spec.yaml:{where(text, '  gpusPerNode: ')}: training.gpusPerNode: {kind} has "
        f"{gpus} GPU{'s' if gpus > 1 else ''}; ask for at most {gpus}, or ")
    assert problem.endswith("[instance-capacity]")
    if any(f["gpus"] > gpus for n, f in TABLE.items() if n.split(".")[0] == family):
        larger = smallest_with(gpus + 1, family)
        assert f"choose {larger} ({TABLE[larger]['gpus']} GPUs), the smallest {family} " \
               f"with {gpus + 1} or more" in problem
    elif any(f["gpus"] > gpus for f in TABLE.values()):
        assert f"choose {smallest_with(gpus + 1)} " in problem
    else:
        assert f"no type paddlegen knows has {gpus + 1}" in problem


def test_two_gpus_on_a_g5_xlarge_stay_in_the_family() -> None:
    text = spec(gpus=2)
    assert problems(text) == [
        f"spec.yaml:{where(text, '  gpusPerNode: ')}: training.gpusPerNode: g5.xlarge has 1 "
        "GPU; ask for at most 1, or choose g5.12xlarge (4 GPUs), the smallest g5 with 2 or more "
        "[instance-capacity]"]
    cpu = spec("m5.xlarge", gpus=1)
    assert problems(cpu) == [
        f"spec.yaml:{where(cpu, '  gpusPerNode: ')}: training.gpusPerNode: m5.xlarge has no "
        "GPU; set it to 0 (CPU), or choose g4dn.xlarge (1 GPU), the smallest type paddlegen "
        "knows with 1 or more [instance-capacity]"]


@pytest.mark.parametrize("kind", GPU_TYPES)
def test_cpu_trainers_on_a_gpu_type_are_warned_of_idle_gpus(kind: str) -> None:
    gpus = TABLE[kind]["gpus"]
    text = spec(kind, gpus=0)
    assert warnings(text) == [
        f"spec.yaml:{where(text, '  gpusPerNode: ')}: warning: training.gpusPerNode: {kind} has "
        f"{gpus} GPU{'s' if gpus > 1 else ''}, which CPU trainers (gpusPerNode 0) leave idle "
        f"while each node is billed for them; set gpusPerNode to {gpus}, or choose a type "
        "without GPUs [idle-gpus]"]


def test_a_gpu_count_that_does_not_divide_the_types_is_warned_of() -> None:
    text = spec("g5.12xlarge", gpus=3)
    assert warnings(text) == [
        f"spec.yaml:{where(text, '  gpusPerNode: ')}: warning: training.gpusPerNode: g5.12xlarge "
        "has 4 GPUs: pods of 3 leave 1 GPU of each node idle, and billed; use 1, 2 or 4 "
        "[idle-gpus]"]


def test_efa_adapters_are_shared_and_each_pod_needs_one() -> None:
    container, _ = trainer(spec("p4d.24xlarge", gpus=2, efa=True, nodes=4))
    assert container["resources"]["limits"]["vpc.amazonaws.com/efa"] == "1"  # 4 adapters, 4 pods
    text = spec("g5.48xlarge", gpus=1, efa=True)
    assert problems(text) == [
        f"spec.yaml:{where(text, '  efa: ')}: cluster.efa: g5.48xlarge has 1 Elastic Fabric "
        "Adapter for the 8 trainer pods of 1 GPU on each node; give each pod one: raise "
        "gpusPerNode to 8, or leave efa out [instance-capacity]"]


# Instance types

@pytest.mark.parametrize(("kind", "hardware"), [
    ("trn1.32xlarge", "AWS Trainium accelerators"), ("trn2.48xlarge", "AWS Trainium"),
    ("inf2.xlarge", "AWS Inferentia accelerators"), ("inf1.6xlarge", "AWS Inferentia"),
    ("dl1.24xlarge", "Intel Gaudi accelerators"), ("dl2q.24xlarge", "Qualcomm Cloud AI 100"),
    ("g4ad.xlarge", "AMD Radeon Pro V520 GPUs"), ("f1.2xlarge", "Xilinx FPGAs"),
    ("g5g.xlarge", "AWS Graviton processors (arm64)"), ("m6g.xlarge", "AWS Graviton"),
    ("c7gn.xlarge", "AWS Graviton"), ("t4g.medium", "AWS Graviton"),
    ("x2gd.xlarge", "AWS Graviton"), ("r8g.xlarge", "AWS Graviton"),
    ("im4gn.large", "AWS Graviton"), ("a1.large", "AWS Graviton"),
    ("p6e-gb200.36xlarge", "NVIDIA Grace Blackwell superchips, whose Grace CPUs are arm64"),
])
def test_types_of_other_hardware_are_named_for_it_not_taken_for_typos(
        kind: str, hardware: str) -> None:
    text = spec(kind)
    [problem] = problems(text)
    assert problem.startswith(f"spec.yaml:{where(text, '  workerInstanceType: ')}: "
                              f"cluster.workerInstanceType: {kind} has {hardware}")
    assert "PaddlePaddle's images are built for NVIDIA GPUs and CPUs, on x86_64" in problem
    assert "did you mean" not in problem and problem.endswith("[instance-type]")


@pytest.mark.parametrize(("kind", "instead"), [
    ("g5g.xlarge", "its x86_64 counterpart g5.xlarge"),
    ("m6g.xlarge", "its x86_64 counterpart m6i.xlarge"),
    ("r8g.xlarge", "an x86_64 type (Intel or AMD)"),
    ("trn1.32xlarge", "an NVIDIA GPU type (such as g5, g6e, p4d or p5) or an x86_64 CPU type"),
])
def test_what_to_choose_instead(kind: str, instead: str) -> None:
    assert problems(spec(kind))[0].endswith(f": choose {instead} [instance-type]")


def test_a_typo_of_a_known_type_is_still_one() -> None:
    text = spec("g5.xlargee")
    assert problems(text) == [
        f"spec.yaml:{where(text, '  workerInstanceType: ')}: cluster.workerInstanceType: not an "
        "EC2 instance type; did you mean 'g5.xlarge'? [instance-type]"]


def test_an_unknown_type_with_efa_or_without_resources_is_refused() -> None:
    text = spec("zz9.huge", gpus=64, efa=True)
    assert problems(text) == [
        f"spec.yaml:{where(text, '  workerInstanceType: ')}: cluster.workerInstanceType: "
        "paddlegen does not know zz9.huge's CPUs, memory and GPUs, so it cannot size the "
        "trainer pods to it; set training.resources (requests and limits), or choose a type of "
        "profiles/aws/instance-types.json [instance-type]",
        f"spec.yaml:{where(text, '  efa: ')}: cluster.efa: paddlegen does not know how many "
        "Elastic Fabric Adapters zz9.huge has, so its pods would get none while eksctl enables "
        "EFA; choose a type of profiles/aws/instance-types.json, or leave efa out "
        "[instance-type]"]
    # a real type of a known family, not in the table: no typo, the same refusal
    assert "does not know t3.small's CPUs" in problems(spec("t3.small", gpus=0))[0]


def test_an_unknown_type_with_resources_and_no_efa_warns_and_builds_as_the_spec_says() -> None:
    text = spec("zz9.huge", gpus=64, resources="limits: {cpu: '4', memory: 8Gi}")
    [warning] = passes(text)
    assert str(warning) == (
        f"spec.yaml:{where(text, '  workerInstanceType: ')}: warning: "
        "cluster.workerInstanceType: zz9.huge is not in paddlegen's table "
        "(profiles/aws/instance-types.json), so nothing checks its GPUs (gpusPerNode 64), its "
        "EFA adapters, or that the trainer pods' CPU and memory fit a node; check them against "
        "AWS's specification of the type [unknown-instance-type]")
    container, _ = trainer(text)
    assert container["resources"] == {"limits": {"cpu": "4", "memory": "8Gi",
                                                 "nvidia.com/gpu": "64"}}
    result = build(text.encode(), "spec.yaml")
    assert result.plan.cluster.worker_count == 2  # one a pod: nothing to pack them by


def test_no_message_counts_one_gpu_in_the_plural() -> None:
    texts = [*problems(spec("m5.xlarge", gpus=1)), *problems(spec("g5.xlarge", gpus=2)),
             *warnings(spec("g5.xlarge", gpus=0)), *problems(spec("g5.48xlarge", efa=True))]
    assert texts and not any("1 GPUs" in text for text in texts)
    sources = [*ROOT.glob("profiles/**/*.py"), *ROOT.glob("profiles/*.j2"),
               *ROOT.glob("compiler/*.py")]
    assert not [path for path in sources if "1 GPUs" in path.read_text()]


@pytest.mark.parametrize(("limits", "size"), [
    ({"memory": "6Gi"}, "1536Mi"), ({"memory": "4Gi"}, "1Gi"), ({"memory": "1Ti"}, "64Gi"),
    ({"memory": "14339Mi"}, "3584Mi"), ({"cpu": "2"}, "1Gi"), ({}, "1Gi")])
def test_shared_memory_is_a_quarter_of_the_memory_limit_at_most_64gi(
        limits: dict[str, str], size: str) -> None:
    from paddlegen.profiles.workload import shm_size

    assert shm_size({"limits": limits} if limits else {}) == size


def test_pods_fit_a_node_by_the_pods_its_kubelet_admits() -> None:
    # t3.medium admits 17 pods; the cluster's own take 10 (4 DaemonSets, 2 CoreDNS, 2
    # metrics-server, 2 EFS CSI controllers): 7 small trainers fit one node, an eighth does not
    slots = TABLE["t3.medium"]["maxPods"] - 10
    small = "requests: {cpu: 10m, memory: 10Mi}"
    passes(spec("t3.medium", gpus=0, workers=1, nodes=slots, resources=small))
    assert f"room for {slots} trainer pods each" in problems(
        spec("t3.medium", gpus=0, workers=1, nodes=slots + 1, resources=small))[0]
