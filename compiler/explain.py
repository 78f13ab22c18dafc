"""`paddlegen explain`: the derived values and the exact processes each trainer pod will run.

Each profile explains its plan (compiler.profile.Explanation); this module renders that as text
and holds what the parameter-server profiles share: the command lines the seed image's entry point
builds (start.sh passing its fixed trainer flags to start_paddle.py, which adds the cluster flags
from the environment), so a person can check a job before launching it.
"""

from __future__ import annotations

import shlex
from typing import Any

from paddlegen.compiler.plan import Meta, PserverTraining
from paddlegen.compiler.profile import Explanation

COMMENT = "paddle_process_by_paddle"  # start_paddle.py tags every process with it
# Every trainer lists every pserver: the list is given once (facts["pservers"]) and each
# trainer's argv names it, so the output grows with the nodes, not with their square.
PSERVERS_VARIABLE = "PSERVERS"
PSERVERS_FLAG = f"--pservers=${PSERVERS_VARIABLE}"
IMAGE_FLAGS_FROM = "/root/start.sh of paddlepaddle/paddle-tutorial:k8s_train"
LABEL_WIDTH = 20


def common_facts(meta: Meta, profile: str, trainers: int) -> dict[str, Any]:
    target = meta.target
    return {"name": meta.name, "namespace": meta.namespace, "profile": profile,
            "target": {"tool": target.tool, "kubernetes": target.kube.version,
                       "schema": target.kube.schema, "description": target.describe()},
            "trainers": trainers}


def image_trainer_flags(training: PserverTraining) -> list[str]:
    """The flags the seed image's start.sh passes to start_paddle.py, in its order."""
    return ["--dot_period=10", f"--ports_num={len(training.dense_ports)}",
            f"--ports_num_for_sparse={len(training.sparse_ports)}", "--log_period=50",
            "--num_passes=10", f"--trainer_count={training.trainer_count}", "--saving_period=1",
            "--local=0", "--config=trainer_config.lr.py", "--use_gpu=0"]


def pserver_explanation(meta: Meta, profile: str, training: PserverTraining,
                        data_out_dir: str | None) -> Explanation:
    """The seed launcher's processes, for the profiles that run the parameter-server Job."""
    ports = [p.number for p in training.ports]
    dense = [p.number for p in training.dense_ports]
    sparse = [p.number for p in training.sparse_ports]
    first = training.ports[0].number
    pservers = ",".join(f"<IP of trainer {i}>" for i in range(training.trainers))
    processes = []
    for trainer_id in range(training.trainers):
        log_dir = f"{training.output_dir}/node_{trainer_id}"
        pserver = ["paddle", "pserver", f"--port={first}", f"--ports_num={len(dense)}",
                   f"--ports_num_for_sparse={len(sparse)}", f"--nics={training.nic}",
                   f"--comment={COMMENT}",
                   f"--num_gradient_servers={training.gradient_servers}"]
        train = ["paddle", "train", f"--nics={training.nic}", f"--port={first}",
                 f"--ports_num={len(dense)}", f"--comment={COMMENT}", PSERVERS_FLAG,
                 *image_trainer_flags(training), f"--trainer_id={trainer_id}",
                 f"--save_dir={training.output_dir}"]
        processes.append({"trainerId": trainer_id,
                          "dataDir": f"{training.job_dir}/{trainer_id}/data",
                          "pserver": {"argv": pserver, "log": f"{log_dir}/server.log"},
                          "trainer": {"argv": train, "log": f"{log_dir}/train.log"}})
    facts = {
        **common_facts(meta, profile, training.trainers),
        "launcher": "seed",
        "ports": ports,
        "densePorts": dense,
        "sparsePorts": sparse,
        "gradientServers": training.gradient_servers,
        "splitCount": training.trainers,
        "jobDir": training.job_dir,
        "configDir": f"{training.job_dir}/{training.config_dir}",
        "outputDir": training.output_dir,
        "dataJobOutDir": data_out_dir,
        "waitsFor": training.data_ready.meaning,
        "pservers": pservers,
        "deadlineSeconds": training.deadline_seconds,
        "imageFlagsFrom": IMAGE_FLAGS_FROM,
        "processes": processes,
    }
    rows = [
        ("pserver ports", f"{span(ports)} on every trainer pod and its node "
                          f"(dense {span(dense)}, sparse {span(sparse) or 'none'})"),
        ("gradient servers", str(training.gradient_servers)),
        ("data parts", f"{training.trainers}, part N read by trainer N from "
                       f"{training.job_dir}/N/data"),
    ]
    if data_out_dir:
        rows.append(("data job writes", f"{data_out_dir} (the same directory)"))
    rows += [("trainer config", f"{training.job_dir}/{training.config_dir}"),
             ("output", training.output_dir),
             ("trainers wait for", training.data_ready.meaning),
             ("deadline", f"{training.deadline_seconds} s, then the Job fails")]
    notes = ("trainer ids are the ranks of the pods' IPs, sorted; every trainer lists every pod "
             "as a pserver",
             f"the trainer flags from --dot_period to --use_gpu are those of {IMAGE_FLAGS_FROM}; "
             "another image passes its own")
    return Explanation(facts, tuple(rows), notes)


def explanation_text(explanation: Explanation) -> str:
    facts = explanation.facts
    target = facts["target"]
    lines = [f"{facts['name']}  (profile {facts['profile']}, namespace {facts['namespace']})"]
    rows = [("target", target["description"]),
            ("trainer pods", f"{facts['trainers']} (parallelism = completions)"),
            *explanation.rows]
    lines += [f"  {label:<{LABEL_WIDTH}}{value}" for label, value in rows]
    lines += [f"  {note}" for note in explanation.notes]
    if "pservers" in facts:
        lines += ["", "every trainer's pserver list:",
                  f"  {PSERVERS_VARIABLE}={shlex.quote(facts['pservers'])}"]
    for process in facts["processes"]:
        lines.append(f"\ntrainer {process['trainerId']}")
        if "pserver" in process:
            lines.append(f"  {shell_words(process['pserver']['argv'])} "
                         f"> {process['pserver']['log']} 2>&1 &")
        trainer = process["trainer"]
        tee = "" if trainer["log"] == "stdout" else f" 2>&1 | tee {trainer['log']}"
        lines.append(f"  {shell_words(trainer['argv'])}{tee}")
    return "\n".join(lines) + "\n"


def shell_words(argv: list[str]) -> str:
    """argv as a shell command line, the pserver list left to the shell to expand."""
    return " ".join(f'"{word}"' if word == PSERVERS_FLAG else shlex.quote(word)
                    for word in argv)


def span(ports: list[int]) -> str:
    if not ports:
        return ""
    return f"{ports[0]}-{ports[-1]}" if len(ports) > 1 else str(ports[0])
