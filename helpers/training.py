"""A small network trained with FP16 (or BF16) arithmetic emulated in numpy, with loss scaling, as in
Micikevicius et al., "Mixed Precision Training" (ICLR 2018): FP32 master weights cast to the format each step;
products with low-precision inputs, an FP32 accumulator and a low-precision result; the loss gradient times the
loss scale S before it is rounded; weight gradients divided by S in FP32, checked for inf/NaN, applied by SGD.

Scaling 'none' (S = 1), 'static' (a fixed S; an inf/NaN gradient is applied anyway) or 'dynamic' (the
torch.amp.GradScaler rule and defaults). The task: a 16-32-1 tanh network fits a teacher a little away from its
start; the loss is 2^-14 times the batch MSE (the learning rate divided by the same), so the gradients are small
and in unscaled FP16 most round to zero. Seeded and deterministic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .numerics import round_to

GRADSCALER_DEFAULTS = {"init_scale": 2.0 ** 16, "growth_factor": 2.0, "backoff_factor": 0.5,
                       "growth_interval": 2000}


# --------------------------------------------------------------------------- the scaler
@dataclass
class DynamicLossScaler:
    """The GradScaler rule: skip and back off on inf/NaN, grow after `growth_interval` clean steps."""

    init_scale: float = GRADSCALER_DEFAULTS["init_scale"]
    growth_factor: float = GRADSCALER_DEFAULTS["growth_factor"]
    backoff_factor: float = GRADSCALER_DEFAULTS["backoff_factor"]
    growth_interval: int = GRADSCALER_DEFAULTS["growth_interval"]
    scale: float = field(init=False)
    clean_steps: int = field(init=False, default=0)

    def __post_init__(self):
        self.scale = float(self.init_scale)

    def update(self, found_inf: bool) -> bool:
        """Update the scale after a step; returns True when the step must be skipped."""
        if found_inf:
            self.scale *= self.backoff_factor
            self.clean_steps = 0
            return True
        self.clean_steps += 1
        if self.clean_steps == self.growth_interval:
            self.scale *= self.growth_factor
            self.clean_steps = 0
        return False


# --------------------------------------------------------------------------- arithmetic
def _q(x, fmt: str) -> np.ndarray:
    """Round to the training format (fp16 / bf16), returned as float32 values; fp32: unchanged."""
    if fmt == "fp32":
        return np.asarray(x, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        return round_to(np.asarray(x, dtype=np.float32), fmt)


def _mm(a, b, fmt: str) -> np.ndarray:
    """A tensor-core GEMM: inputs already in `fmt`, FP32 accumulation, result rounded to `fmt`."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _q(np.asarray(a, np.float32) @ np.asarray(b, np.float32), fmt)


# --------------------------------------------------------------------------- the task
@dataclass(frozen=True)
class Task:
    d_in: int = 16
    hidden: int = 32
    batch: int = 128
    teacher_offset: float = 0.05  # how far (relative) the teacher's weights are from the student's start
    loss_weight: float = 2.0 ** -14   # the loss is this times the batch MSE (see train)
    seed: int = 0


def make_task(task: Task = Task()):
    """(teacher weights, initial student weights): the teacher is the student's start moved by `teacher_offset`
    (relative) in a random direction."""
    rng = np.random.default_rng(task.seed)

    def layer(fan_in, fan_out):
        return (rng.standard_normal((fan_in, fan_out)) / math.sqrt(fan_in)).astype(np.float32)

    student = {"W1": layer(task.d_in, task.hidden), "b1": np.zeros(task.hidden, np.float32),
               "W2": layer(task.hidden, 1), "b2": np.zeros(1, np.float32)}
    teacher = {k: (v + task.teacher_offset * (layer(*v.shape) if v.ndim == 2 else 0.0)).astype(np.float32)
               for k, v in student.items()}
    return teacher, student


def _batch(rng, task: Task, teacher):
    x = rng.standard_normal((task.batch, task.d_in)).astype(np.float32)
    t = np.tanh(x @ teacher["W1"] + teacher["b1"]) @ teacher["W2"] + teacher["b2"]
    return x, t.astype(np.float32)


# --------------------------------------------------------------------------- training
@dataclass
class TrainResult:
    fmt: str
    scaling: str
    loss: np.ndarray            # FP32 loss of every step (before the update)
    scale: np.ndarray           # loss scale used at every step
    skipped: np.ndarray         # bool per step: update skipped (dynamic scaling, inf/NaN)
    zero_grad_frac: np.ndarray  # fraction of weight-gradient entries that are exactly zero
    nonfinite: np.ndarray       # bool per step: the gradients held inf/NaN

    @property
    def final_loss(self) -> float:
        """Median loss of the last 5% of the steps (inf if the run diverged)."""
        tail = self.loss[-max(1, len(self.loss) // 20):]
        return float(np.median(tail)) if np.all(np.isfinite(tail)) else math.inf

    @property
    def diverged(self) -> bool:
        return not np.isfinite(self.final_loss)

    def summary(self) -> dict:
        return {"format": self.fmt, "scaling": self.scaling, "final_loss": self.final_loss,
                "skipped_steps": int(self.skipped.sum()), "steps_with_inf_nan": int(self.nonfinite.sum()),
                "final_scale": float(self.scale[-1])}


def train(fmt: str = "fp16", scaling: str = "none", *, scale: float = 1.0, steps: int = 3000,
          lr: float = 0.2, task: Task = Task(), scaler: DynamicLossScaler | None = None) -> TrainResult:
    """Train the student with SGD in `fmt` ('fp32', 'fp16' or 'bf16') with `scaling` ('none', 'static' with
    `scale`, or 'dynamic' with `scaler`)."""
    if fmt not in ("fp32", "fp16", "bf16"):
        raise ValueError("fmt must be 'fp32', 'fp16' or 'bf16'")
    if scaling not in ("none", "static", "dynamic"):
        raise ValueError("scaling must be 'none', 'static' or 'dynamic'")
    if scaling == "dynamic":
        scaler = scaler or DynamicLossScaler()
    S = 1.0 if scaling == "none" else float(scale)
    teacher, W = make_task(task)
    lr_eff = np.float32(lr / task.loss_weight)      # the FP32 trajectory does not depend on loss_weight
    rng = np.random.default_rng(task.seed + 1)
    losses, scales, skipped, zero_frac, nonfinite = (np.empty(steps) for _ in range(5))
    for step in range(steps):
        if scaling == "dynamic":
            S = scaler.scale
        x, t = _batch(rng, task, teacher)
        # forward: low-precision copies of the master weights
        with np.errstate(over="ignore", invalid="ignore"):
            Wq = {k: _q(v, fmt) for k, v in W.items()}
            xq = _q(x, fmt)
            z = _q(_mm(xq, Wq["W1"], fmt) + Wq["b1"], fmt)
            h = _q(np.tanh(z), fmt)
            y = _q(_mm(h, Wq["W2"], fmt) + Wq["b2"], fmt)
            err = y.astype(np.float64) - t
            losses[step] = float(np.mean(err ** 2))                  # the batch MSE, in float64
        # backward, scaled: dL/dy * S rounded to the format, then low-precision products
        with np.errstate(over="ignore", invalid="ignore"):
            gy = _q(task.loss_weight * 2.0 * err / task.batch * S, fmt)
            gW2 = _mm(h.T, gy, fmt)
            gb2 = _q(gy.sum(axis=0), fmt)
            gh = _mm(gy, Wq["W2"].T, fmt)
            gz = _q(gh * (1.0 - h.astype(np.float32) ** 2), fmt)
            gW1 = _mm(xq.T, gz, fmt)
            gb1 = _q(gz.sum(axis=0), fmt)
        grads = {"W1": gW1, "b1": gb1, "W2": gW2, "b2": gb2}
        found = not all(np.all(np.isfinite(g)) for g in grads.values())
        nonfinite[step] = found
        zero_frac[step] = float(np.mean(np.concatenate([(g == 0).ravel() for g in grads.values()])))
        scales[step] = S
        skip = scaler.update(found) if scaling == "dynamic" else False
        skipped[step] = skip
        if not skip:
            with np.errstate(over="ignore", invalid="ignore"):
                for k in W:
                    W[k] = (W[k] - lr_eff * (grads[k].astype(np.float32) / np.float32(S))).astype(np.float32)
    return TrainResult(fmt, scaling, losses, scales, skipped.astype(bool), zero_frac, nonfinite.astype(bool))
