"""`paddlegen explain`: the derived values and the exact processes each trainer pod will run.

The command lines are those the seed image's entry point builds (start.sh passing its fixed trainer
flags to start_paddle.py, which adds the cluster flags from the environment), so a person can check
a job before launching it.
"""

from __future__ import annotations

import shlex
from typing import Any

from paddlegen.compiler.plan import Plan
from paddlegen.schema.models import LocalSpec

COMMENT = "paddle_process_by_paddle"  # start_paddle.py tags every process with it
IMAGE_FLAGS_FROM = "/root/start.sh of paddlepaddle/paddle-tutorial:k8s_train (seed 003)"


def image_trainer_flags(plan: Plan) -> list[str]:
    """The flags the seed image's start.sh passes to start_paddle.py, in its order."""
    t = plan.spec.training
    return ["--dot_period=10", f"--ports_num={t.ports_num}",
            f"--ports_num_for_sparse={t.ports_num_for_sparse}", "--log_period=50",
            "--num_passes=10", f"--trainer_count={t.trainer_count}", "--saving_period=1",
            "--local=0", "--config=trainer_config.lr.py", "--use_gpu=0"]


def explanation(plan: Plan) -> dict[str, Any]:
    """Everything `explain` prints, as data."""
    spec = plan.spec
    facts: dict[str, Any] = {"name": plan.name, "namespace": plan.namespace,
                             "profile": spec.profile, "trainers": plan.trainers}
    if isinstance(spec, LocalSpec):
        argv = ["paddle", "train", *plan.trainer_flags]
        return {**facts, "workDir": spec.training.work_dir, "outputDir": plan.output_dir,
                "hostOutputDir": spec.storage.host_path,
                "processes": [{"trainerId": 0, "trainer": {"argv": argv, "log": "stdout"}}]}
    t = spec.training
    ports = [p.number for p in plan.ports]
    pservers = ",".join(f"<IP of trainer {i}>" for i in range(plan.trainers))
    processes = []
    for trainer_id in range(plan.trainers):
        log_dir = f"{plan.output_dir}/node_{trainer_id}"
        pserver = ["paddle", "pserver", f"--port={t.port}", f"--ports_num={t.ports_num}",
                   f"--ports_num_for_sparse={t.ports_num_for_sparse}", f"--nics={t.nic}",
                   f"--comment={COMMENT}", f"--num_gradient_servers={plan.gradient_servers}"]
        train = ["paddle", "train", f"--nics={t.nic}", f"--port={t.port}",
                 f"--ports_num={t.ports_num}", f"--comment={COMMENT}", f"--pservers={pservers}",
                 *image_trainer_flags(plan), f"--trainer_id={trainer_id}",
                 f"--save_dir={plan.output_dir}"]
        processes.append({"trainerId": trainer_id,
                          "dataDir": f"{plan.job_dir}/{trainer_id}/data",
                          "pserver": {"argv": pserver, "log": f"{log_dir}/server.log"},
                          "trainer": {"argv": train, "log": f"{log_dir}/train.log"}})
    return {
        **facts,
        "ports": ports,
        "densePorts": ports[: t.ports_num],
        "sparsePorts": ports[t.ports_num:],
        "gradientServers": plan.gradient_servers,
        "splitCount": plan.split_count,
        "jobDir": plan.job_dir,
        "configDir": f"{plan.job_dir}/{t.config_dir}",
        "outputDir": plan.output_dir,
        "dataJobOutDir": plan.data_out_dir,
        "waitsFor": plan.data_ready_dir,
        "imageFlagsFrom": IMAGE_FLAGS_FROM,
        "processes": processes,
    }


def explanation_text(facts: dict[str, Any]) -> str:
    lines = [f"{facts['name']}  (profile {facts['profile']}, namespace {facts['namespace']})"]

    def row(label: str, value: object) -> None:
        lines.append(f"  {label:<17}{value}")

    row("trainer pods", f"{facts['trainers']} (parallelism = completions)")
    if facts["profile"] == "local":
        row("working dir", facts["workDir"])
        row("output", f"{facts['outputDir']} (host: {facts['hostOutputDir']})")
    else:
        ports, dense, sparse = facts["ports"], facts["densePorts"], facts["sparsePorts"]
        row("pserver ports", f"{span(ports)} on every trainer pod and its node "
                             f"(dense {span(dense)}, sparse {span(sparse) or 'none'})")
        row("gradient servers", facts["gradientServers"])
        row("data parts", f"{facts['splitCount']}, part N read by trainer N from "
                          f"{facts['jobDir']}/N/data")
        if facts["dataJobOutDir"]:
            row("data job writes", f"{facts['dataJobOutDir']} (the same directory)")
        row("trainer config", facts["configDir"])
        row("output", facts["outputDir"])
        row("trainers wait for", facts["waitsFor"])
        lines.append("  trainer ids are the ranks of the pods' IPs, sorted; every trainer lists "
                     "every pod as a pserver")
        lines.append(f"  the trainer flags from --dot_period to --use_gpu are those of "
                     f"{facts['imageFlagsFrom']}; another image passes its own")
    for process in facts["processes"]:
        lines.append(f"\ntrainer {process['trainerId']}")
        if "pserver" in process:
            lines.append(f"  {shlex.join(process['pserver']['argv'])} "
                         f"> {process['pserver']['log']} 2>&1 &")
        trainer = process["trainer"]
        tee = "" if trainer["log"] == "stdout" else f" 2>&1 | tee {trainer['log']}"
        lines.append(f"  {shlex.join(trainer['argv'])}{tee}")
    return "\n".join(lines) + "\n"


def span(ports: list[int]) -> str:
    if not ports:
        return ""
    return f"{ports[0]}-{ports[-1]}" if len(ports) > 1 else str(ports[0])
