"""The result check can fail: for the kernels and ladder rungs, at short and long K, on N(0,1) and U[0,1) data,
every class of wrong result is rejected, and correct results pass.

Correct results here are the CPU model's (helpers.emulate), which is bit-identical to the H200
(tests/gpu/test_gpu_check.py checks the GPU kernels themselves over hundreds of seeds). CPU only.

The default run takes one kernel of each kind of arithmetic (inputs, accumulator, block, output, split), at the
short K or, for the split kernels, the long K their split needs, plus the long-K cases of the FP16 and FP32
accumulators; `pytest --full` (make gpu-check) runs every kernel and rung at both K and on both data sets.
"""
import functools

import numpy as np
import pytest
from conftest import sweep, sweep_cases

import helpers
from helpers import emulate
from helpers.check import check_gemm, detection_limits, encode_inputs, wrong_results
from helpers.formats import from_bf16_bits, round_tf32_rna

M = N = 40                    # not a multiple of 16
KS = (72, 16384)
DISTS = ("normal", "uniform")
SPECS = dict(helpers.KERNELS)          # the lessons' kernels and every ladder rung
GROSS = ("zeros", "sign flipped", "transposed", "rows permuted")
# On U[0,1) data every element of C is close to K/4, so a transposed or permuted C differs from the right
# one by about 1%: with an FP16 accumulator at K = 16384 that is within what rounding can do, and only the
# model tells them apart. Zeros and sign flips are rejected by the bounds alone everywhere.


def _fmt(spec):
    return spec.inputs


def _values(spec, Xk):
    f = _fmt(spec)
    if f == "bf16":
        return from_bf16_bits(Xk).astype(np.float64)
    if f == "tf32":
        return round_tf32_rna(Xk).astype(np.float64)
    return Xk.astype(np.float64)


_BOUNDS = {}


@pytest.fixture(autouse=True)
def _each_bound_computed_once(monkeypatch):
    """The check's part 2 (helpers.check.answer_scaled_bound) depends on A, B and the formats only, not on C: it is
    computed once per inputs here, and the many wrong results of one case share it (the same code runs)."""
    import hashlib

    real = helpers.check.answer_scaled_bound

    def digest(X):
        X = np.ascontiguousarray(X)
        return X.shape, X.dtype.str, hashlib.sha1(X.view(np.uint8)).hexdigest()

    def once(Av, Bv, **kw):
        key = (digest(Av), digest(Bv), tuple(sorted((k, v) for k, v in kw.items() if k != "abs_ab")))
        if key not in _BOUNDS:
            _BOUNDS[key] = real(Av, Bv, **kw)
        return tuple(x.copy() for x in _BOUNDS[key])

    monkeypatch.setattr(helpers.check, "answer_scaled_bound", once)


def _kind(spec):
    """What the check's arithmetic depends on: entries of the same kind take the same code path."""
    return (spec.inputs, spec.acc, spec.acc_block, spec.output, repr(spec.emulate))


KINDS = {}
for _name, _spec in SPECS.items():
    KINDS.setdefault(_kind(_spec), _name)          # the first entry of each kind stands for it
SPLIT = {n for n in KINDS.values() if SPECS[n].emulate.split or SPECS[n].emulate.split_tiles}


@functools.lru_cache(maxsize=None)
def _case(name, dist, K):
    """(spec, A, B as the kernel takes them, the correct C, values multiplied) for one configuration."""
    spec = SPECS[name]
    A32 = helpers.random_matrix(M, K, seed=K + 1, dist=dist)
    B32 = helpers.random_matrix(K, N, seed=K + 2, dist=dist)
    Ak, Bk = encode_inputs(A32, _fmt(spec)), encode_inputs(B32, _fmt(spec))
    C = spec.emulate(Ak, Bk)
    return spec, Ak, Bk, C, _values(spec, Ak), _values(spec, Bk), (A32, B32)


def _cached_model(spec, Ak, Bk, C):
    """The kernel's model, answering from the cache for the inputs of the case (the check calls it)."""
    def model(X, Y):
        if X is Ak and Y is Bk:
            return C
        return spec.emulate(X, Y)
    return model


def _check(name, dist, K, C=None, with_model=True):
    spec, Ak, Bk, Cc, _, _, _ = _case(name, dist, K)
    model = _cached_model(spec, Ak, Bk, Cc) if with_model else None
    return spec.check(Cc if C is None else C, Ak, Bk, model=model, backend="CPU")


@functools.lru_cache(maxsize=None)
def _wrong(name, dist, K):
    spec, Ak, Bk, C, Av, Bv, orig = _case(name, dist, K)
    return wrong_results(C, Av, Bv, inputs=_fmt(spec), acc=spec.acc, block=spec.acc_block, originals=orig, seed=K)


PARAMS = [(n, d, k) for n in SPECS for d in DISTS for k in KS]
QUICK = ({(n, "normal", 72) for n in KINDS.values() if n not in SPLIT}
         | {(n, d, 16384) for n, d in zip(sorted(SPLIT), DISTS)}
         | {("wmma_fp16acc_gemm_kernel", "uniform", 16384), ("wmma_mixed_gemm_kernel", "uniform", 16384),
            ("wmma_bf16_gemm_kernel", "uniform", 72), ("gemm_fp32_kernel", "normal", 16384)})
CASES = sweep(PARAMS, QUICK, ids=lambda c: f"{c[0]}-{c[1]}-K{c[2]}")


def test_the_sample_has_every_kind_both_ks_and_both_data_sets():
    quick = {p for p in PARAMS if p in QUICK}
    assert quick == QUICK and {SPECS[n].emulate.split is not None for n in SPLIT} == {True, False}
    assert {_kind(SPECS[n]) for n, _, _ in quick} == set(KINDS)
    assert {d for _, d, _ in quick} == set(DISTS) and {k for _, _, k in quick} == set(KS)


@pytest.mark.parametrize("name,dist,K", CASES)
def test_correct_result_passes_and_every_wrong_result_fails(name, dist, K):
    chk = _check(name, dist, K)
    assert chk.passed, str(chk)
    assert chk.model == "identical" and chk.model_cells == M * N
    for what, C in _wrong(name, dist, K).items():
        bad = _check(name, dist, K, C)
        assert not bad.passed, f"{what} passed: {bad}"


@pytest.mark.parametrize("name,dist,K", CASES)
def test_bounds_alone_reject_gross_errors(name, dist, K):
    """Without the model (as on a GPU it was not fitted to), parts 1 and 2 still reject results that
    are wrong by about their own size, at every K the course uses."""
    assert _check(name, dist, K, with_model=False).passed
    wrong = _wrong(name, dist, K)
    gross = GROSS if (dist == "normal" or SPECS[name].acc == "fp32" or K < 1000) else GROSS[:2]
    for what in gross:
        assert not _check(name, dist, K, wrong[what], with_model=False).passed, what


@pytest.mark.parametrize("name,dist", sweep([(n, d) for n in SPECS if SPECS[n].acc == "fp32" for d in DISTS],
                                             lambda c: c[0] in KINDS.values()))
def test_bounds_alone_reject_wrong_arithmetic_for_fp32_accumulators(name, dist):
    """With an FP32 accumulator the answer-scaled bound is tight enough to see a 0.3% scale error,
    an FP16 accumulator and inputs in the wrong format even without the model (K = 72)."""
    wrong = _wrong(name, dist, 72)
    extra = ("wrong accumulator",) if SPECS[name].acc_block > 1 else ()
    for what in ("scaled by 1.003", "wrong input format") + extra:
        assert not _check(name, dist, 72, wrong[what], with_model=False).passed, what


def test_fp16_accumulator_at_k65536_correct_passes_zero_fails():
    spec = helpers.KERNELS["wmma_fp16acc_gemm_kernel"]
    A = helpers.random_matrix(16, 65536, seed=3).astype(np.float16)
    B = helpers.random_matrix(65536, 16, seed=4).astype(np.float16)
    C = spec.emulate(A, B)
    assert spec.check(C, A, B, backend="CPU").passed
    zero = spec.check(np.zeros_like(C), A, B, backend="CPU")
    assert not zero.passed and zero.model == "differs"


@pytest.mark.sweep
def test_published_models_of_other_gpus_pass_the_bounds():
    """The bounds hold for Tensor Core arithmetic other than the H200's: the published V100 and A100
    models (block 4 and 8, 0 and 1 extra bits, normalised products) pass parts 1 and 2 when the check
    is told the hardware is not the one the model was fitted to (it then assumes block 4)."""
    cases = [(model, acc, rounding, dist, K) for model in (emulate.V100_MODEL, emulate.A100_MODEL)
             for acc, rounding in (("fp32", "truncate"), ("fp16", "nearest"))
             for dist in DISTS for K in (16, 1000, 16384)]
    # sampled: every model and accumulator on both data sets at K = 1000, and the short and long K once each
    quick = lambda c: c[4] == 1000 or c[0] is emulate.A100_MODEL and c[1] == "fp16" and c[3] == "uniform"  # noqa: E731
    for model, acc, rounding, dist, K in sweep_cases(cases, quick):
        A = helpers.random_matrix(24, K, seed=K, dist=dist).astype(np.float16)
        B = helpers.random_matrix(K, 24, seed=K + 9, dist=dist).astype(np.float16)
        C = emulate.tensor_core_gemm(A, B, inputs="fp16", acc=acc, model=model)
        chk = check_gemm(C, A, B, inputs="fp16", acc=acc, acc_rounding=rounding, block=16, fitted=False,
                         model=lambda X, Y: None, backend="test")
        assert chk.passed, (model.source, acc, dist, K, str(chk))
        assert chk.model == "skipped"


@pytest.mark.parametrize("name", sweep([n for n in helpers.KERNELS if helpers.KERNELS[n].rung in (None, 1, 6)],
                                       KINDS.values()))
def test_no_false_alarm_over_many_seeds(name):
    """Correct (model) results of random shapes, sizes not multiples of 16, pass: 40 seeds per kernel."""
    spec = helpers.KERNELS[name]
    rng = np.random.default_rng(12)
    for s in range(40):
        m, n, k = (int(v) for v in rng.integers(1, 40, 3))
        k = int(k * rng.choice([1, 7, 50]))
        dist = DISTS[s % 2]
        A32 = helpers.random_matrix(m, k, seed=1000 + s, dist=dist)
        B32 = helpers.random_matrix(k, n, seed=2000 + s, dist=dist)
        Ak, Bk = encode_inputs(A32, spec.inputs), encode_inputs(B32, spec.inputs)
        C = spec.emulate(Ak, Bk)
        assert spec.check(C, Ak, Bk, backend="CPU").passed, (s, m, n, k, dist)
        assert spec.check(C, A32, B32, backend="CPU").passed, ("originals", s, m, n, k, dist)


def test_detection_limits_are_smaller_than_the_answer():
    spec, Ak, Bk, C, _, _, _ = _case("wmma_mixed_gemm_kernel", "normal", 16384)
    lim = detection_limits(C, Ak, Bk, inputs="fp16", acc="fp32", acc_rounding="truncate", block=16)
    assert 0 < lim["smallest"] <= lim["median"] <= lim["largest"] < 1


# --------------------------------------------------------------------------- above MODEL_FULL_PRODUCTS
# Large products: the model is compared on every element, so one element 1% off or a row copied from another
# fails even where the FP16 accumulator's bounds are wide, and at sizes off the 16-grid. (The 400 x 400 x 512
# cases, the slowest, run with --full.)
BIG = [("wmma_fp16acc_gemm_kernel", 128, 128, 4112, "uniform"), ("wmma_fp16acc_gemm_kernel", 400, 400, 512, "normal"),
       ("wmma_mixed_gemm_kernel", 400, 400, 512, "normal"), ("wmma_mixed_gemm_kernel", 129, 250, 2100, "uniform"),
       ("gemm_fp32_kernel", 200, 330, 1100, "uniform")]
LOCAL = ("one element off by 10x its error", "one element 1% off", "a row copied from the row above",
         "edge tile missing its last K block")


@functools.lru_cache(maxsize=None)
def _big(name, m, n, k, dist):
    spec = SPECS[name]
    A32 = helpers.random_matrix(m, k, seed=m + k, dist=dist)
    B32 = helpers.random_matrix(k, n, seed=n + k + 1, dist=dist)
    Ak, Bk = encode_inputs(A32, spec.inputs), encode_inputs(B32, spec.inputs)
    return spec, Ak, Bk, spec.emulate(Ak, Bk), (A32, B32)


@pytest.mark.parametrize("name,m,n,k,dist", sweep(BIG, lambda b: b[1] != 400,
                                                   ids=lambda b: f"{b[0]}-{b[1]}x{b[2]}x{b[3]}-{b[4]}"))
def test_local_mutations_of_large_products_fail(name, m, n, k, dist):
    spec, Ak, Bk, C, orig = _big(name, m, n, k, dist)
    assert m * n * k > helpers.check.MODEL_FULL_PRODUCTS
    model = _cached_model(spec, Ak, Bk, C)            # the model's C of these inputs, computed once
    good = spec.check(C, Ak, Bk, backend="CPU", model=model)
    assert good.passed and good.model_cells == m * n, str(good)
    assert f"all {m * n} elements" in good.verdict()
    wrong = wrong_results(C, Ak.astype(np.float64) if Ak.dtype != np.uint16 else from_bf16_bits(Ak).astype(np.float64),
                          Bk.astype(np.float64), inputs=spec.inputs, acc=spec.acc, block=spec.acc_block,
                          originals=orig, seed=k)
    assert set(LOCAL) <= set(wrong)
    for what in LOCAL:
        bad = spec.check(wrong[what], Ak, Bk, backend="CPU", model=model)
        assert not bad.passed and bad.model == "differs", f"{what} passed: {bad}"
    # every single element, one unit in the last place up, in each corner and the middle of the edge tile
    for i, j in ((0, 0), (m - 1, n - 1), (m - 1, 0), (0, n - 1), (m // 2, n // 2)):
        W = C.copy()
        W[i, j] = np.nextafter(W[i, j], np.asarray(np.inf, dtype=W.dtype))
        bad = spec.check(W, Ak, Bk, backend="CPU", model=model)
        assert not bad.passed and bad.model_mismatch == 1 and bad.model_first[:2] == (i, j)


def test_an_fp32_fma_chain_is_compared_with_its_model_on_every_gpu(monkeypatch):
    """On a GPU the Tensor Core model was not fitted to (an RTX 4090, sm_89), a WMMA kernel's check skips the model
    and says why, but the FP32 FMA chain's check still compares it (IEEE fused multiply-adds in K order are the same
    on every GPU): a result one element off is rejected by the model there."""
    D = helpers.device
    gpu = D.GPUInfo("NVIDIA GeForce RTX 4090", (8, 9), 128, 1, 1, None, "", "", "", "", D.peaks_for("RTX 4090"))
    monkeypatch.setattr(D, "backend", lambda: D.Backend("gpu", "found", gpu))
    A = helpers.random_matrix(33, 49, seed=5)
    B = helpers.random_matrix(49, 17, seed=6)
    fp32 = helpers.KERNELS["gemm_fp32_kernel"]
    C = emulate.Arithmetic("fp32")(A, B)
    assert fp32.check(C, A, B).model == "identical"
    off = C.copy()
    off[3, 4] = np.nextafter(off[3, 4], np.float32(np.inf))          # one ulp: within every bound
    bad = fp32.check(off, A, B)
    assert not bad.passed and bad.bound_ok and bad.model == "differs"
    wmma = helpers.KERNELS["wmma_mixed_gemm_kernel"]
    A16, B16 = A.astype(np.float16), B.astype(np.float16)
    chk = wmma.check(emulate.tensor_core_gemm(A16, B16), A, B)
    assert chk.model == "skipped" and "sm_89" in chk.model_reason
