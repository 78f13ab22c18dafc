"""Profile `local` (seed 004): one `paddle train` on a one-machine cluster, no AWS; the models are
saved to a directory of the node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from paddlegen.compiler import runbook as rb
from paddlegen.compiler.explain import common_facts
from paddlegen.compiler.kube_objects import (
    Object,
    host_volume,
    job,
    namespace,
    network_policy,
    without_api_token,
)
from paddlegen.compiler.plan import HostVolume, Meta, gflag, meta_of, resources_of
from paddlegen.compiler.profile import Explanation, Profile
from paddlegen.compiler.rules import (
    host_path,
    kube_version,
    release_fields,
    resource_limits,
    system_namespace,
    training_image_tag,
)
from paddlegen.compiler.targets import KubeRelease, Target
from paddlegen.compiler.template import render
from paddlegen.schema import patterns as p
from paddlegen.schema.models import (
    INT32_MAX,
    Resources,
    SpecBase,
    SpecModel,
    deadline,
    text,
    ttl,
)

DEFAULT_KUBE_VERSION = "1.35"


class LocalStorage(SpecModel, title="Output directory"):
    """Where the single trainer's output lands on the machine."""

    host_path: Annotated[
        str, text(p.ABSOLUTE_PATH, "Host directory for the models, e.g. /home/work/paddle_output.")
    ]


class LocalTraining(SpecModel, title="Training"):
    """`paddle train` on one machine: the trainer flags, straight from the spec."""

    image: Annotated[str, text(p.IMAGE, "Image with Paddle, the demo and its data.")]
    work_dir: Annotated[
        str, text(p.ABSOLUTE_PATH, "Directory the trainer runs in (holds the config).")
    ]
    config: Annotated[str, text(p.PATH_SEGMENT, "Trainer config file (--config).")]
    save_dir: Annotated[
        str, text(p.ABSOLUTE_PATH, "Where models go (--save_dir); the host path is mounted here.")
    ]
    trainer_count: Annotated[
        int, Field(ge=1, le=1024, description="Trainer threads (--trainer_count).")
    ]
    log_period: Annotated[
        int, Field(ge=1, le=INT32_MAX, description="Batches between logs (--log_period).")
    ]
    num_passes: Annotated[
        int, Field(ge=1, le=INT32_MAX, description="Passes over the data (--num_passes).")
    ]
    use_gpu: bool = Field(description="Train on a GPU (--use_gpu).")
    show_parameter_stats_period: Annotated[
        int, Field(ge=0, le=INT32_MAX, description="Batches between parameter statistics "
                   "(--show_parameter_stats_period).")
    ]
    test_all_data_in_one_period: bool = Field(
        description="Test on all test data each period (--test_all_data_in_one_period).")
    resources: Resources = Field(description="CPU and memory of the trainer.")
    active_deadline_seconds: Annotated[int, deadline("the training Job")]
    ttl_seconds_after_finished: Annotated[int | None, ttl("the training Job")] = None


class LocalSpec(SpecBase):
    """One trainer on one machine, no AWS."""

    profile: Literal["local"] = Field(description="Which way to run.")
    storage: LocalStorage = Field(description="Where the output lands.")
    training: LocalTraining = Field(description="The trainer and its flags.")


TARGET_READS = ("kubeVersion",)  # what target() reads of the spec


def target(spec: LocalSpec) -> Target:
    version = spec.kube_version or DEFAULT_KUBE_VERSION
    return Target("a one-machine cluster (kind, minikube)", KubeRelease(version, version))


@dataclass(frozen=True)
class LocalPlan:
    meta: Meta
    image: str
    work_dir: str
    save_dir: str  # in the container
    output: HostVolume  # where save_dir lands on the node
    trainer_flags: tuple[str, ...]  # `paddle train` flags from the spec
    last_pass: int
    deadline_seconds: int
    resources: dict[str, dict[str, str]]
    ttl_seconds: int | None


def derive(spec: LocalSpec) -> LocalPlan:
    t = spec.training
    flags = {"config": t.config, "save_dir": t.save_dir, "trainer_count": t.trainer_count,
             "log_period": t.log_period, "num_passes": t.num_passes, "use_gpu": t.use_gpu,
             "show_parameter_stats_period": t.show_parameter_stats_period,
             "test_all_data_in_one_period": t.test_all_data_in_one_period}
    return LocalPlan(
        meta=meta_of(spec, target(spec), t.image),
        image=t.image, work_dir=t.work_dir, save_dir=t.save_dir,
        output=HostVolume(spec.storage.host_path, "output", create=True),
        trainer_flags=tuple(f"--{flag}={gflag(value)}" for flag, value in flags.items()),
        last_pass=t.num_passes - 1, deadline_seconds=t.active_deadline_seconds,
        resources=resources_of(t.resources), ttl_seconds=t.ttl_seconds_after_finished)


def training_job(plan: LocalPlan) -> Object:
    """Seed 004: `paddle train` with the spec's flags; the models land in a host directory."""
    container = {
        "name": "trainer",
        "image": plan.image,
        "workingDir": plan.work_dir,
        "command": ["paddle", "train"],
        "args": list(plan.trainer_flags),
        "resources": plan.resources,
        "volumeMounts": [{"name": "output", "mountPath": plan.save_dir}],
    }
    pod: Object = {"containers": [container],
                   "volumes": [host_volume(plan.output, plan.meta.target.kube)]}
    pod = without_api_token(plan.meta, pod)
    # the runbook builds the image and loads it into the cluster: there is nothing to pull
    return job(plan.meta, plan.meta.name, "trainer", pod,
               deadline_seconds=plan.deadline_seconds, backoff_limit=0,
               ttl_seconds=plan.ttl_seconds, pull="IfNotPresent")


def objects(plan: LocalPlan) -> list[Object]:
    # a trainer alone listens to nobody: no traffic to it at all
    return [*namespace(plan.meta), *network_policy(plan.meta, ()),
            training_job(plan)]


def files(plan: LocalPlan) -> dict[str, str]:
    return {}


def runbook(plan: LocalPlan, manifest_paths: list[str]) -> str:
    return render(__package__, "local.md.j2",
                  {"plan": plan, "manifest_paths": manifest_paths, "rb": rb})


def explain(plan: LocalPlan) -> Explanation:
    facts: dict[str, Any] = {
        **common_facts(plan.meta, "local", 1),
        "workDir": plan.work_dir, "outputDir": plan.save_dir, "hostOutputDir": plan.output.path,
        "processes": [{"trainerId": 0, "trainer": {
            "argv": ["paddle", "train", *plan.trainer_flags], "log": "stdout"}}]}
    rows = (("working dir", plan.work_dir),
            ("output", f"{plan.save_dir} (node: {plan.output.path})"))
    return Explanation(facts, rows)


PROFILE = Profile(
    name="local", summary="seed 004: one `paddle train` Job with the spec's trainer flags",
    model=LocalSpec,
    rules=(kube_version(target, target_reads=TARGET_READS),
           release_fields(target, ("training",), target_reads=TARGET_READS),
           resource_limits(("training",)), training_image_tag, system_namespace, host_path),
    target=target,
    derive=derive, objects=objects, files=files, runbook=runbook, explain=explain)
