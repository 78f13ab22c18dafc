"""Data-parallel linear regression with PaddlePaddle, small enough to copy.

Run it under Paddle's launcher, one process per pod (or per device), for example:

    python -m paddle.distributed.launch --nnodes 2 --master HOST:PORT train_linear.py --out DIR

Each rank draws its own synthetic data (the seed depends on the rank) from the same true model
y = Xw + b; DataParallel all-reduces the gradients, so every rank takes the same steps and ends
with the same parameters. The last line printed is a JSON summary, also written to
DIR/rank-<rank>.json when --out DIR is given.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import paddle
import paddle.distributed as dist

FEATURES = 8
SAMPLES_PER_RANK = 256
STEPS = 40
LEARNING_RATE = 0.1


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


def train(out_dir: Path | None) -> dict[str, object]:
    dist.init_parallel_env()  # on the GPU the launcher gave this process, or on the CPU
    rank, world_size = dist.get_rank(), dist.get_world_size()

    paddle.seed(0)  # the same initial parameters everywhere (DataParallel also broadcasts rank 0's)
    model = paddle.DataParallel(paddle.nn.Linear(FEATURES, 1))
    optimizer = paddle.optimizer.SGD(learning_rate=LEARNING_RATE, parameters=model.parameters())
    x, y = make_data(rank)

    losses: list[float] = []
    first_step_at = 0.0
    for _ in range(STEPS):
        loss = paddle.nn.functional.mse_loss(model(x), y)
        loss.backward()  # DataParallel all-reduces the gradients here
        optimizer.step()
        optimizer.clear_grad()
        losses.append(float(loss))
        first_step_at = first_step_at or time.time()

    result: dict[str, object] = {
        "rank": rank,
        "world_size": world_size,
        "first_loss": losses[0],
        "last_loss": losses[-1],
        "params_sha256": params_sha256(model),
        "first_step_unix": first_step_at,  # when this rank's first step was done
    }
    line = json.dumps(result, sort_keys=True)
    print(line, flush=True)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"rank-{rank}.json").write_text(line + "\n")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write DIR/rank-<rank>.json here")
    train(parser.parse_args().out)


if __name__ == "__main__":
    main()
