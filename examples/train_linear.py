"""Data-parallel linear regression with PaddlePaddle, small enough to copy, that survives restarts.

Run it under Paddle's launcher, one process per pod (or per device), for example:

    python -m paddle.distributed.launch --nnodes 2 --master HOST:PORT train_linear.py --out DIR

Each rank draws its own synthetic data (the seed depends on the rank) from the same true model
y = Xw + b; DataParallel all-reduces the gradients, so every rank takes the same steps and ends
with the same parameters. The last line printed is a JSON summary, also written to
DIR/rank-<rank>.json: DIR is --out, else $PADDLEGEN_OUTPUT_DIR, which paddlegen sets in every
trainer to a directory on the shared volume (the runbook copies it off before teardown; what is
saved in the container's own filesystem is lost with the pod).

Checkpoints (the pattern to copy): every --checkpoint-every steps, and once more on SIGTERM,
the parameters and the optimizer's state go to $PADDLEGEN_CHECKPOINT_DIR/step-<N>, written
under a temporary name and renamed into place, so a reader sees whole checkpoints only. At start
the script resumes from the newest one. paddlegen keeps that directory the same for every pod
and every restart of the job, and sets PADDLEGEN_RESTART_ATTEMPT (0 on the first attempt).

SIGTERM (a node drained, a spot instance reclaimed, the run stopped): Paddle's launcher passes
it on to this process, then kills it some 30 s later, so the handler only sets a flag and the
loop saves after the step it is in. `import paddle` installs a handler of its own that aborts
the process ("FatalError: Termination signal"): set yours after the import, as below.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import time
from pathlib import Path
from types import FrameType

import numpy as np
import paddle
import paddle.distributed as dist

FEATURES = 8
SAMPLES_PER_RANK = 256
STEPS = 40
LEARNING_RATE = 0.1
MODEL_FILE, OPTIMIZER_FILE = "model.pdparams", "optimizer.pdopt"


class Termination:
    """Set by SIGTERM; the training loop reads it between steps. Installed after `import
    paddle`, whose own handler it replaces."""

    requested = False

    @classmethod
    def install(cls) -> None:
        def on_term(signum: int, frame: FrameType | None) -> None:
            cls.requested = True  # only a flag: the launcher sends SIGTERM more than once
        signal.signal(signal.SIGTERM, on_term)


def make_data(rank: int) -> tuple[paddle.Tensor, paddle.Tensor]:
    """This rank's samples: its own inputs and noise, the same true weights and bias."""
    true_w = np.linspace(-1.0, 1.0, FEATURES, dtype=np.float32).reshape(FEATURES, 1)
    true_b = np.float32(0.5)
    rng = np.random.default_rng(1000 + rank)
    x = rng.standard_normal((SAMPLES_PER_RANK, FEATURES), dtype=np.float32)
    noise = rng.standard_normal((SAMPLES_PER_RANK, 1), dtype=np.float32)
    y = x @ true_w + true_b + np.float32(0.01) * noise
    return paddle.to_tensor(x), paddle.to_tensor(y)


def params_sha256(model: paddle.nn.Layer) -> str:
    """SHA-256 of the parameters' bytes, in the model's parameter order."""
    digest = hashlib.sha256()
    for param in model.parameters():
        digest.update(param.numpy().tobytes())
    return digest.hexdigest()


def newest_checkpoint(directory: Path | None) -> tuple[int, Path | None]:
    """The step and directory of the newest whole checkpoint (0, None: none)."""
    steps = [(int(path.name[5:]), path) for path in directory.glob("step-*")
             if path.name[5:].isdigit()] if directory and directory.is_dir() else []
    return max(steps, default=(0, None))


def save_checkpoint(directory: Path, step: int, model: paddle.nn.Layer,
                    optimizer: paddle.optimizer.Optimizer, rank: int) -> None:
    """step-<N>, whole or not at all: written aside, then renamed. Every rank holds the same
    parameters, so whichever rank renames first wins and the others drop their copy."""
    final = directory / f"step-{step}"
    if final.exists():
        return
    staging = directory / f".step-{step}.rank-{rank}.{os.getpid()}"
    staging.mkdir(parents=True)
    paddle.save(model.state_dict(), str(staging / MODEL_FILE))
    paddle.save(optimizer.state_dict(), str(staging / OPTIMIZER_FILE))
    for path in staging.iterdir():
        with path.open("rb") as written:
            os.fsync(written.fileno())
    try:
        staging.rename(final)
    except OSError:  # another rank's copy of the same step is in place
        for path in staging.iterdir():
            path.unlink()
        staging.rmdir()


def train(out_dir: Path | None, checkpoint_dir: Path | None, every: int,
          step_seconds: float) -> dict[str, object]:
    dist.init_parallel_env()  # on the GPU the launcher gave this process, or on the CPU
    rank, world_size = dist.get_rank(), dist.get_world_size()
    Termination.install()

    paddle.seed(0)  # the same initial parameters everywhere (DataParallel also broadcasts rank 0's)
    model = paddle.DataParallel(paddle.nn.Linear(FEATURES, 1))
    optimizer = paddle.optimizer.SGD(learning_rate=LEARNING_RATE, parameters=model.parameters())
    start, resumed_from = newest_checkpoint(checkpoint_dir)
    if resumed_from is not None:
        model.set_state_dict(paddle.load(str(resumed_from / MODEL_FILE)))
        optimizer.set_state_dict(paddle.load(str(resumed_from / OPTIMIZER_FILE)))
    x, y = make_data(rank)
    print(json.dumps({"event": "start", "rank": rank, "start_step": start,
                      "restart_attempt": os.environ.get("PADDLEGEN_RESTART_ATTEMPT")}),
          flush=True)

    losses: list[float] = []
    first_step_at = 0.0
    for step in range(start + 1, STEPS + 1):
        loss = paddle.nn.functional.mse_loss(model(x), y)
        loss.backward()  # DataParallel all-reduces the gradients here
        optimizer.step()
        optimizer.clear_grad()
        losses.append(float(loss))
        first_step_at = first_step_at or time.time()
        print(json.dumps({"event": "step", "rank": rank, "step": step}), flush=True)
        stopping = Termination.requested
        if checkpoint_dir is not None and (stopping or step % every == 0):
            save_checkpoint(checkpoint_dir, step, model, optimizer, rank)
        if stopping:
            print(json.dumps({"event": "terminated", "rank": rank, "saved_step": step}),
                  flush=True)
            raise SystemExit(0)
        time.sleep(step_seconds)

    result: dict[str, object] = {
        "rank": rank,
        "world_size": world_size,
        "start_step": start,
        "restart_attempt": os.environ.get("PADDLEGEN_RESTART_ATTEMPT"),
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "params_sha256": params_sha256(model),
        "first_step_unix": first_step_at,  # when this rank's first step was done
    }
    line = json.dumps(result, sort_keys=True)
    print(line, flush=True)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"rank-{rank}.json").write_text(line + "\n")
    return result


def env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value) if value else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=env_path("PADDLEGEN_OUTPUT_DIR"),
                        help="write DIR/rank-<rank>.json here (default: $PADDLEGEN_OUTPUT_DIR)")
    parser.add_argument("--checkpoints", type=Path, default=env_path("PADDLEGEN_CHECKPOINT_DIR"),
                        help="save and resume here (default: $PADDLEGEN_CHECKPOINT_DIR)")
    parser.add_argument("--checkpoint-every", type=int, default=5, help="steps between saves")
    parser.add_argument("--step-seconds", type=float, default=0.0,
                        help="sleep after each step (tests use it to stop a run midway)")
    args = parser.parse_args()
    train(args.out, args.checkpoints, args.checkpoint_every, args.step_seconds)


if __name__ == "__main__":
    main()
