"""`paddlegen explain`: the derived values and the exact processes each trainer pod will run.

Each profile explains its plan (compiler.profile.Explanation); this module renders that as text
and holds what the parameter-server profiles share: the command lines the seed image's entry point
builds (start.sh passing its fixed trainer flags to start_paddle.py, which adds the cluster flags
from the environment), so a person can check a job before launching it.
"""

from __future__ import annotations

import shlex
from typing import Any

from paddlegen.compiler.plan import PEER_WAIT_SECONDS, TRAINER_ID_VARIABLE, Meta, PserverTraining
from paddlegen.compiler.problems import printable
from paddlegen.compiler.profile import Explanation

COMMENT = "paddle_process_by_paddle"  # start_paddle.py tags every process with it
# Every trainer lists every pserver: the list is given once (facts["pservers"]) and each
# trainer's argv names it, so the output grows with the nodes, not with their square.
PSERVERS_VARIABLE = "PSERVERS"
PSERVERS_FLAG = f"--pservers=${PSERVERS_VARIABLE}"
TUTORIAL_TRAINER = "paddlepaddle/paddle-tutorial:k8s_train"
IMAGE_FLAGS_FROM = f"/root/start.sh of {TUTORIAL_TRAINER}"
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


def pserver_argv(training: PserverTraining) -> list[str]:
    """`paddle pserver` as start_paddle.py runs it (and the launcher script, the same)."""
    return ["paddle", "pserver", f"--port={training.ports[0].number}",
            f"--ports_num={len(training.dense_ports)}",
            f"--ports_num_for_sparse={len(training.sparse_ports)}", f"--nics={training.nic}",
            f"--comment={COMMENT}", f"--num_gradient_servers={training.gradient_servers}"]


def trainer_argv(training: PserverTraining, trainer_id: str) -> list[str]:
    """`paddle train` of a trainer, as start_paddle.py runs it; the pserver list is
    $PSERVERS."""
    return ["paddle", "train", f"--nics={training.nic}", f"--port={training.ports[0].number}",
            f"--ports_num={len(training.dense_ports)}", f"--comment={COMMENT}", PSERVERS_FLAG,
            *image_trainer_flags(training), f"--trainer_id={trainer_id}",
            f"--save_dir={training.output_dir}"]


def log_dir(training: PserverTraining, trainer_id: str) -> str:
    return f"{training.output_dir}/node_{trainer_id}"


LAUNCHERS = {
    "seed": "the image's start script: ranks are the pods' IPs, sorted, read through the API "
            "server; every trainer lists every pod's IP as a pserver",
    "indexed": "an Indexed Job and a headless Service: trainer i is the pod of completion index "
               "i, named in DNS as below; the launcher script runs the commands below",
    "kubeflow": "Kubeflow's PaddleJob: trainer i is worker i, named in DNS by its Service as "
                "below; the launcher script runs the commands below",
}


def pserver_explanation(meta: Meta, profile: str, training: PserverTraining,
                        data_out_dir: str | None) -> Explanation:
    """The processes of every trainer pod, for the profiles that run the parameter-server
    Job: what the seed's entry point or the launcher script runs."""
    launch = training.launch
    ports = [p.number for p in training.ports]
    dense = [p.number for p in training.dense_ports]
    sparse = [p.number for p in training.sparse_ports]
    pservers = launch.pservers or ",".join(f"<IP of trainer {i}>"
                                           for i in range(training.trainers))
    processes = [{"trainerId": trainer_id,
                  "dataDir": f"{training.job_dir}/{trainer_id}/data",
                  "pserver": {"argv": pserver_argv(training),
                              "log": f"{log_dir(training, str(trainer_id))}/server.log"},
                  "trainer": {"argv": trainer_argv(training, str(trainer_id)),
                              "log": f"{log_dir(training, str(trainer_id))}/train.log"}}
                 for trainer_id in range(training.trainers)]
    facts = {
        **common_facts(meta, profile, training.trainers),
        "launcher": launch.launcher,
        "stableNames": list(launch.peers),
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
    hosts = "every trainer pod" if launch.scripted else "every trainer pod and its node"
    rows = [
        ("launcher", f"{launch.launcher}: {LAUNCHERS[launch.launcher]}"),
        ("pserver ports", f"{span(ports)} on {hosts} "
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
             ("deadline", f"{training.deadline_seconds} s, then the run fails")]
    if launch.scripted:
        notes: tuple[str, ...] = (
            "each trainer starts its pserver, then waits (at most "
            f"{PEER_WAIT_SECONDS} s) until every port of every pserver answers, then runs its "
            "trainer; a failing trainer fails its pod, and the run; a trainer that is done "
            "keeps its pserver until every trainer is done",
            f"the trainer flags from --dot_period to --use_gpu are those of {IMAGE_FLAGS_FROM}")
    else:
        # the image's own start script chooses them: name the image the pods run
        notes = (f"the trainer flags from --dot_period to --use_gpu are those of "
                 f"{IMAGE_FLAGS_FROM}; {training.image} runs its own /root/start.sh, which may "
                 "pass others" if not training.image.startswith(TUTORIAL_TRAINER) else
                 f"the trainer flags from --dot_period to --use_gpu are those of "
                 f"{IMAGE_FLAGS_FROM}",)
    return Explanation(facts, tuple(rows), notes)


def explanation_text(explanation: Explanation) -> str:
    """The explanation for a terminal: every line printable (problems.printable), so that what a
    spec says (an argument, a name) shows as itself and cannot move the cursor, erase what
    precedes it, or make a line of its own; each argv as shell words (shell_words)."""
    facts = explanation.facts
    target = facts["target"]
    lines = [f"{facts['name']}  (profile {facts['profile']}, namespace {facts['namespace']})"]
    rows = [("target", target["description"]),
            ("trainer pods", str(facts['trainers'])),
            *explanation.rows]
    lines += [f"  {label:<{LABEL_WIDTH}}{value}" for label, value in rows]
    lines += [f"  {note}" for note in explanation.notes]
    if "pservers" in facts:
        lines += ["", "every trainer's pserver list:",
                  f"  {PSERVERS_VARIABLE}={shlex.quote(facts['pservers'])}"]
    for process in facts["processes"]:
        ranks = process.get("ranks")  # a collective pod: one trainer process per rank
        lines += ["", f"pod {process['trainerId']}: rank{'s' * (len(ranks) > 1)} {span(ranks)}"
                  if ranks else f"trainer {process['trainerId']}"]
        if "pserver" in process:
            lines.append(f"  {shell_words(process['pserver']['argv'])} "
                         f"> {process['pserver']['log']} 2>&1 &")
        lines += [f"  {name}={value}" for name, value in process.get("env", {}).items()]
        trainer = process["trainer"]
        tee = "" if trainer["log"] == "stdout" else f" 2>&1 | tee {trainer['log']}"
        lines.append(f"  {shell_words(trainer['argv'])}{tee}")
    return "".join(printable(line) + "\n" for line in lines)


# The variables a command line leaves to the shell: the pserver list, and in the launcher
# script the trainer id.
SHELL_VARIABLES = (PSERVERS_VARIABLE, TRAINER_ID_VARIABLE)


def shell_quoted(argv: list[str]) -> list[str]:
    """Each word quoted for the shell, the shell's variables left for it to expand."""
    return [f'"{word}"' if any(f"${name}" in word for name in SHELL_VARIABLES)
            else shlex.quote(word) for word in argv]


# Shell commands paddlegen writes stay short: yamllint reads the ConfigMap that holds the
# launcher script, people read the runbooks.
WIDTH = 96


def wrapped(words: list[str], indent: str = "  ") -> str:
    """Shell words as a command of lines of at most WIDTH characters, with continuations."""
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= WIDTH - 2:
            lines[-1] += f" {word}"
        else:
            lines.append(word if not lines else indent + word)
    return " \\\n".join(lines)


def shell_words(argv: list[str]) -> str:
    """argv as a shell command line for a person to read (and paste): a word with a character
    that a terminal would not show as itself is ANSI-C quoted, that character escaped."""
    return " ".join(quoted if word.isprintable() else ansi_c_quoted(word)
                    for word, quoted in zip(argv, shell_quoted(argv), strict=True))


def ansi_c_quoted(word: str) -> str:
    """A word as $'...' (bash, zsh, POSIX.1-2024 sh), every non-printable character as \\xHH
    (below U+0080), \\uHHHH or \\UHHHHHHHH: the same word when pasted, and printable."""
    escaped = "".join(
        f"\\{c}" if c in "\\'" else c if c.isprintable() else
        f"\\x{ord(c):02x}" if ord(c) < 0x80 else
        f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
        for c in word)
    return f"$'{escaped}'"


def span(ports: list[int]) -> str:
    if not ports:
        return ""
    return f"{ports[0]}-{ports[-1]}" if len(ports) > 1 else str(ports[0])
