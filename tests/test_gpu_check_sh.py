"""tools/gpu_check.sh (make gpu-check) without a GPU: a stand-in Python names a fake GPU, and the nbval stage
sees the committed results/*.json only (a record this run wrote is set aside meanwhile, and put back)."""

FAKE_PY = """#!/usr/bin/env bash
# stands in for the GPU machine's Python in tools/gpu_check.sh: a GPU to name, and nbval that records
# which results/*.json it would have compared against
case "$*" in
  *require_gpu*) echo "nvidia-fake sm_90 Fake GPU" ;;
  "-m pytest"*) ls results > "$SEEN" ;;
esac
exit 0
"""


def _git(cwd, *args):
    import subprocess

    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", *args],
                   cwd=cwd, check=True, capture_output=True)


def _course_copy(root):
    """A course tree with tools/gpu_check.sh, a committed-looking record and one this run just wrote."""
    import shutil
    from pathlib import Path

    course = Path(root) / "course"
    for d in ("tools", "helpers", "kernels", "tests", "notebooks", "results"):
        (course / d).mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(__file__).resolve().parent.parent / "tools" / "gpu_check.sh", course / "tools")
    (course / "results" / "nvidia-h200.json").write_text("{}\n")
    return course


def _gpu_check_nbval(course, tmp_path):
    """`make gpu-check STAGES=nbval` on the fake GPU: (the results/*.json nbval saw, the nbval log)."""
    import os
    import subprocess

    py = tmp_path / "fake-python"
    py.write_text(FAKE_PY)
    py.chmod(0o755)
    (course / "results" / "nvidia-fake.json").write_text("{}\n")          # this run's record: not committed
    seen = tmp_path / "seen.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(PY=str(py), STAGES="nbval", SEEN=str(seen))
    env.pop("RECORDS", None)
    p = subprocess.run(["bash", "tools/gpu_check.sh"], cwd=course, env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    log = (course / "results" / "logs" / "nbval-nvidia-fake.log").read_text()
    assert sorted(x.name for x in (course / "results").glob("*.json")) == ["nvidia-fake.json", "nvidia-h200.json"]
    return sorted(x for x in seen.read_text().split() if x.endswith(".json")), log


def test_gpu_check_in_a_copy_inside_another_checkout_keeps_the_records(tmp_path):
    """tools/gpu_check.sh, course copied into another git checkout (which does not track results/): the
    records stay for nbval, and the log says why; before the fix every one was set aside as 'not committed'."""
    outer = tmp_path / "outer"
    outer.mkdir()
    _git(outer, "init", "-q")
    (outer / "README").write_text("another project\n")
    _git(outer, "add", "README")
    _git(outer, "commit", "-q", "-m", "x")
    course = _course_copy(outer)
    seen, log = _gpu_check_nbval(course, tmp_path)
    assert seen == ["nvidia-fake.json", "nvidia-h200.json"], log
    assert "results/ is not in a git checkout of the course itself" in log and "not committed" not in log


def test_gpu_check_in_the_course_repository_sets_aside_what_is_not_committed(tmp_path):
    """In the course's own checkout the committed records are what nbval sees; this run's is set aside
    meanwhile and put back afterwards."""
    course = _course_copy(tmp_path)
    _git(course, "init", "-q")
    _git(course, "add", "results/nvidia-h200.json", "tools/gpu_check.sh")
    _git(course, "commit", "-q", "-m", "x")
    seen, log = _gpu_check_nbval(course, tmp_path)
    assert seen == ["nvidia-h200.json"], log
    assert "set aside while nbval runs (not committed): results/nvidia-fake.json" in log
