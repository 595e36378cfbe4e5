"""helpers.training (lesson 3): the loss-scaling rule, and FP16/BF16 training with and without scaling."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import training as T


def test_scaler_rule():
    s = T.DynamicLossScaler()
    assert s.scale == 2.0 ** 16
    assert s.update(True) is True and s.scale == 2.0 ** 15
    for _ in range(1999):
        assert s.update(False) is False
    assert s.scale == 2.0 ** 15
    s.update(False)
    assert s.scale == 2.0 ** 16 and s.clean_steps == 0
    s.update(False)
    s.update(True)
    assert s.scale == 2.0 ** 15 and s.clean_steps == 0


@pytest.fixture(scope="module")
def runs():
    steps = 1200
    return {"fp32": T.train("fp32", steps=steps), "fp16": T.train("fp16", steps=steps),
            "fp16 static": T.train("fp16", "static", scale=2.0 ** 12, steps=steps),
            "fp16 too big": T.train("fp16", "static", scale=2.0 ** 36, steps=50),
            "fp16 dynamic": T.train("fp16", "dynamic", steps=steps),
            "fp16 dynamic 2^40": T.train("fp16", "dynamic", steps=50,
                                         scaler=T.DynamicLossScaler(init_scale=2.0 ** 40)),
            "bf16": T.train("bf16", steps=steps)}


def test_unscaled_fp16_stalls(runs):
    assert runs["fp16"].final_loss > 10 * runs["fp32"].final_loss
    assert runs["fp16"].zero_grad_frac[-100:].mean() > 0.5


def test_scaled_fp16_and_bf16_train(runs):
    ref = runs["fp32"].final_loss
    assert runs["fp16 static"].final_loss < 1.5 * ref
    assert runs["fp16 dynamic"].final_loss < 1.5 * ref
    assert runs["bf16"].final_loss < 5 * ref
    assert runs["fp16 dynamic"].skipped.sum() == 0


def test_too_large_static_scale_diverges(runs):
    assert runs["fp16 too big"].diverged and runs["fp16 too big"].nonfinite.all()


def test_dynamic_scale_backs_off(runs):
    r = runs["fp16 dynamic 2^40"]
    k = int(r.skipped.sum())
    assert k >= 1 and np.all(r.skipped[:k]) and not r.skipped[k:].any()
    assert r.scale[k] == 2.0 ** (40 - k) and not r.diverged


def test_training_is_deterministic():
    a, b = T.train("fp16", steps=30), T.train("fp16", steps=30)
    assert np.array_equal(a.loss, b.loss)


def test_train_rejects_bad_args():
    with pytest.raises(ValueError):
        T.train("fp8")
    with pytest.raises(ValueError):
        T.train("fp16", "sometimes")
