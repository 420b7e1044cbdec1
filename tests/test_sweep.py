"""Sweeps: config validation, and a real 2 tiny models × 2 benchmarks sweep through submitit's local executor."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from vlamb_nb.errors import DataError, NotAvailableError, SettingError
from vlamb_nb.sweep import load_config

BENCHES = ("vague", "mucar")
MODELS = ("tiny:qwen2_5_vl", "tiny:llava")


def _write(tmp_path, cfg) -> Path:
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def _bench_or_skip(name):
    from vlamb_nb.benchmarks import get_benchmark

    try:
        return get_benchmark(name)
    except NotAvailableError as e:
        pytest.skip(str(e))


def test_config_validation(tmp_path):
    _bench_or_skip("vague")
    base = {"models": ["m"], "benchmarks": [{"name": "vague"}]}
    cfg = load_config(_write(tmp_path, {**base, "models": ["m", {"spec": "n", "quantization": ["4bit", "none"]}]}))
    assert [(j.model, j.quantization) for j in cfg.jobs] == [("m", "4bit"), ("n", "4bit"), ("n", None)]
    assert cfg.out_dir.is_absolute()
    with pytest.raises(DataError, match="unknown key"):
        load_config(_write(tmp_path, {**base, "modles": []}))
    with pytest.raises(SettingError, match="unknown vague setting"):
        load_config(_write(tmp_path, {**base, "benchmarks": [{"name": "vague", "settings": ["bogus"]}]}))
    with pytest.raises(SettingError, match="unknown benchmark"):
        load_config(_write(tmp_path, {**base, "benchmarks": ["nope"]}))
    with pytest.raises(DataError, match="executor"):
        load_config(_write(tmp_path, {**base, "executor": "cloud"}))
    with pytest.raises(DataError, match="distinct"):
        load_config(_write(tmp_path, {**base, "models": ["m", "m"]}))


def _complete(text: str) -> list[dict]:
    """Complete records only: a line torn by the kill is not a record."""
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def _store_lines(out: Path) -> dict[str, list[dict]]:
    if not (out / "predictions").is_dir():
        return {}
    return {str(p.relative_to(out)): _complete(p.read_text()) for p in sorted((out / "predictions").rglob("*.jsonl"))}


@pytest.mark.slow
def test_sweep_two_tiny_models_two_benchmarks_resumes(tmp_path):
    pytest.importorskip("submitit")
    try:
        from vlamb_nb.models.tiny import build_tiny  # noqa: F401
    except ImportError as e:
        pytest.skip(f"tiny checkpoints unavailable: {e}")
    benches = []
    for name in BENCHES:
        bench = _bench_or_skip(name)
        src = bench.make_sample(tmp_path / f"{name}-data", n=4, seed=0)
        benches.append({"name": name, "source": str(src), "settings": [bench.default_setting],
                        "options": {"max_new_tokens": 8}})
    out = tmp_path / "sweep-out"
    cfg = _write(tmp_path, {"name": "t", "executor": "local", "out_dir": str(out), "batch_size": 2,
                            "progress": False, "models": list(MODELS), "benchmarks": benches})
    cmd = [sys.executable, "-m", "vlamb_nb.cli", "sweep", str(cfg)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # first run: interrupt it (SIGKILL to the whole process group) once some predictions are stored
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            process_group=0)
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        if sum(len(v) for v in _store_lines(out).values()) >= 3:
            break
        time.sleep(0.2)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _store_lines(out)
    assert sum(len(v) for v in before.values()) >= 3
    # second run finishes the sweep without redoing what was stored
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    after = _store_lines(out)
    assert len(after) == len(MODELS) * len(BENCHES)
    for path, recs in after.items():
        keys = [r["key"] for r in recs]
        assert len(keys) == len(set(keys)), f"{path}: an item was generated twice"
        assert recs[: len(before.get(path, []))] == before.get(path, []), f"{path}: earlier records changed"
    summary = (out / "summary.csv").read_text().splitlines()
    assert len(summary) == 1 + len(MODELS) * len(BENCHES)
    # and it ends with the comparison of its models on the items both answered
    assert "Comparison of 2 models" in (out / "summary.md").read_text()
    compared = json.loads((out / "comparison.json").read_text())
    assert {p["paper"] for p in compared["pairs"]} == set(BENCHES)


def test_the_example_sweep_file_in_the_repository_loads():
    from pathlib import Path

    from vlamb_nb.sweep import load_config

    cfg = load_config(Path(__file__).resolve().parent.parent / "examples" / "sweep.yaml")
    assert cfg.name == "qwen-vs-llava" and len(cfg.jobs) == 4  # Qwen 4bit, LLaVA 4bit and unquantized, a server
    served = [j for j in cfg.jobs if j.model.startswith("openai:")]
    assert len(served) == 1 and served[0].quantization is None
    assert served[0].model_options == {"base_url": "http://localhost:8000/v1", "concurrency": 64, "timeout": 120,
                                       "max_retries": 5, "deadline": 600}
    assert all(not j.model_options for j in cfg.jobs if j not in served)  # local models take no endpoint keys


def test_endpoint_keys_apply_to_served_models_and_the_command_line_wins(tmp_path):
    _bench_or_skip("refadv")
    path = _write(tmp_path, {"concurrency": 8, "timeout": 30, "deadline": 100,
                             "models": ["tiny:qwen2_5_vl", {"spec": "openai:m", "options": {"timeout": 5}}],
                             "benchmarks": [{"name": "refadv"}]})
    local, served = load_config(path).jobs
    assert local.model_options == {}  # a local model sends no requests over a network
    assert served.model_options == {"concurrency": 8, "timeout": 5, "deadline": 100}  # its own options win
    _, served = load_config(path, remote={"concurrency": 2, "max_retries": None}).jobs
    assert served.model_options == {"concurrency": 2, "timeout": 5, "deadline": 100}  # the command line wins


def test_a_served_model_sweeps_with_its_key_in_the_address_never_written(tmp_path):
    pytest.importorskip("submitit")
    from vlamb_nb.models import ScriptedModel
    from vlamb_nb.models.serve import ChatServer
    from vlamb_nb.sweep import sweep

    bench = _bench_or_skip("refadv")
    src = bench.make_sample(tmp_path / "data", n=3)
    srv = ChatServer(ScriptedModel(lambda r: '[{"bbox_2d": [1, 2, 30, 40]}]', model_id="m"), host="127.0.0.1",
                     port=0).start(lifetime=120)
    secret = "sweep-secret-0123456789"
    out = tmp_path / "out"
    cfg = _write(tmp_path, {"name": "served", "out_dir": str(out), "progress": False, "concurrency": 4,
                            "models": [{"spec": "openai:m", "quantization": "none",
                                        "options": {"base_url": f"{srv.base_url}?key={secret}", "max_retries": 0}}],
                            "benchmarks": [{"name": "refadv", "source": str(src), "settings": ["direct"]}]})
    try:
        failed = sweep(cfg, quiet=True)
    finally:
        srv.stop()
    assert failed == 0, (out / "summary.md").read_text()
    written = {p: p.read_text(errors="replace") for p in out.rglob("*") if p.is_file() and p.suffix != ".pkl"}
    assert any("key=***" in t for t in written.values())  # the address is there, masked
    assert not [p for p, t in written.items() if secret in t]
    config = json.loads((out / "config.json").read_text())[0]
    assert config["model_options"]["concurrency"] == 4


# -- what a sweep says when a job does not finish --------------------------------------------------------------
#: what sbatch says on a cluster whose nodes have no GPU when a job asks for one
SBATCH_REFUSAL = "sbatch: error: Batch job submission failed: Requested node configuration is not available"


def _cli(*argv: str) -> tuple[int, str, str]:
    import contextlib
    import io

    from vlamb_nb import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def _fake_sbatch(tmp_path: Path) -> tuple[Path, Path]:
    """A folder with an ``sbatch`` that keeps the script it is given and refuses it as SLURM does."""
    bin_dir, kept = tmp_path / "bin", tmp_path / "submitted.sh"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\ncp "$1" "{kept}"\necho "${{FAKE_SBATCH_ERROR:-{SBATCH_REFUSAL}}}" >&2\n'
                                    'exit 1\n')
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")  # submitit looks for it before it submits
    for tool in ("sbatch", "srun"):
        (bin_dir / tool).chmod(0o755)
    return bin_dir, kept


def test_sbatch_refusing_the_gpu_request_is_one_line_naming_the_setting_and_zero_asks_for_none(tmp_path, monkeypatch):
    pytest.importorskip("submitit")
    _bench_or_skip("refadv")
    bin_dir, kept = _fake_sbatch(tmp_path)
    tools = tmp_path / "tools"  # what the fake sbatch needs, and nothing else: a cluster's own sbatch or srun on
    tools.mkdir()  # the PATH (a login node) is never seen
    (tools / "cp").symlink_to(shutil.which("cp"))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{tools}")
    base = {"name": "nogpu", "executor": "slurm", "out_dir": str(tmp_path / "out"), "progress": False,
            "models": [{"spec": "openai:m", "quantization": "none", "options": {"base_url": "http://127.0.0.1:9/v1"}}],
            "benchmarks": [{"name": "refadv", "settings": ["direct"]}]}
    rc, out, err = _cli("sweep", str(_write(tmp_path, base)))
    assert (rc, out) == (2, "")
    assert err == ("vlamb-nb: error: sbatch refused the sweep's jobs: Requested node configuration is not available "
                   "(each job asked for gpus_per_node 1 (the default), mem_gb 64, cpus_per_task 8); on a cluster "
                   "without GPUs set `slurm: {gpus_per_node: 0}` in sweep.yaml\n")
    assert "#SBATCH --gpus-per-node=1" in kept.read_text()
    rc, out, err = _cli("sweep", str(_write(tmp_path, {**base, "slurm": {"gpus_per_node": 0, "partition": "cpu"}})))
    assert rc == 2 and len(err.splitlines()) == 1 and "gpus_per_node 0, mem_gb 64, cpus_per_task 8, partition cpu" in err
    assert "gpus" not in kept.read_text() and "#SBATCH --partition=cpu" in kept.read_text()  # no GPU asked for
    monkeypatch.setenv("FAKE_SBATCH_ERROR", "sbatch: error: invalid partition specified: gpu")
    rc, out, err = _cli("sweep", str(_write(tmp_path, {**base, "slurm": {"partition": "gpu"}})))
    assert rc == 2 and err == ("vlamb-nb: error: sbatch refused the sweep's jobs: invalid partition specified: gpu "
                               "(each job asked for gpus_per_node 1 (the default), mem_gb 64, cpus_per_task 8, "
                               "partition gpu); ask for what the cluster has under `slurm:` in sweep.yaml\n")
    with pytest.raises(DataError, match="gpus_per_node must be a whole number"):
        load_config(_write(tmp_path, {**base, "slurm": {"gpus_per_node": "one"}}))
    (bin_dir / "sbatch").unlink()
    for tool in ("sbatch", "srun"):  # a machine without SLURM: one line, whichever tool is missing first
        rc, out, err = _cli("sweep", str(_write(tmp_path, base)))
        assert rc == 2 and err == (f"vlamb-nb: error: executor: slurm needs SLURM's srun and sbatch on PATH, and {tool} "
                                   "is not there (executor: local runs the jobs on this machine)\n")
        monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))


def test_failed_jobs_lines_give_the_exception_and_all_failed_says_so_not_empty_dataframe(tmp_path, capsys):
    """submitit's local executor runs two jobs that both raise: each line is the exception, not a log path."""
    pytest.importorskip("submitit")
    from vlamb_nb.sweep import sweep

    _bench_or_skip("refadv")
    missing = tmp_path / "no-such-items.jsonl"
    cfg = _write(tmp_path, {"name": "allfail", "out_dir": str(tmp_path / "out"), "progress": False,
                            "models": [{"spec": f"openai:{m}", "quantization": "none",
                                        "options": {"base_url": "http://127.0.0.1:9/v1"}} for m in ("a", "b")],
                            "benchmarks": [{"name": "refadv", "source": str(missing), "settings": ["direct"]}]})
    assert sweep(cfg) == 2
    printed = capsys.readouterr().out
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "Empty DataFrame" not in printed + summary
    assert "No job finished: all 2 failed (below), so there is nothing to summarize." in summary
    failed = [line for line in summary.splitlines() if line.startswith("- openai")]
    assert len(failed) == 2
    for line in failed:
        assert str(missing) in line and "Error: " in line and ".out" not in line and "_log" not in line, line
    assert "Comparison not written: 0 of 2 models finished" in summary
    assert (tmp_path / "out" / "summary.csv").read_text().startswith("model,quantization,benchmark,setting")


def _job_error(exc: BaseException) -> str:
    """submitit's FailedJobError text for a job that raised ``exc`` (its format, with the job's traceback)."""
    import traceback

    try:
        raise exc
    except BaseException:  # noqa: BLE001 - formatted as the job's process formats it
        trace = traceback.format_exc()
    return (f"Job (task=0) failed during processing with trace:\n----------------------\n{trace}\n"
            "----------------------\nYou can check full logs with 'job.stderr(0)' and 'job.stdout(0)'or at paths:\n"
            "  - /cluster/sweeps/submitit/77_3/77_3_0_log.err\n  - /cluster/sweeps/submitit/77_3/77_3_0_log.out")


def test_a_cancelled_job_says_cancelled_and_the_models_that_finished_are_still_compared(tmp_path, monkeypatch):
    """Four jobs of one SLURM array (the executor faked, the job code real): two finish, one is cancelled after
    writing part of its store, one raises. The summary gives each cause; the two that finished are compared."""
    pytest.importorskip("submitit")
    from submitit.core.utils import FailedJobError, UncompletedJobError

    import vlamb_nb.models
    import vlamb_nb.sweep as sweep_mod
    from vlamb_nb.models import ScriptedModel

    bench = _bench_or_skip("refadv")
    src = bench.make_sample(tmp_path / "data", n=6)
    boxes = {"model-a": "[1, 2, 30, 40]", "model-b": "[5, 5, 60, 60]", "model-c": "[0, 0, 9, 9]",
             "model-d": "[2, 2, 8, 8]"}
    monkeypatch.setattr(vlamb_nb.models, "load_model", lambda spec, **_: ScriptedModel(
        lambda r: f'[{{"bbox_2d": {boxes[spec]}}}]', model_id=spec))

    class Handle:
        def __init__(self, job, k):
            self.job, self.job_id, self.state = job, f"77_{k}", "COMPLETED"

        def result(self):
            if self.job.model_name == "model-c":  # cancelled half-way: part of its store is on disk
                self.state = "CANCELLED by 1000"
                part = [sweep_mod.BenchmarkSpec(b.name, b.source, b.settings, 2, b.options) for b in self.job.benchmarks]
                sweep_mod.run_job(sweep_mod.SweepJob(**{**vars(self.job), "benchmarks": part}))
                raise UncompletedJobError(f"Job {self.job_id} (task: 0) with path /x/{self.job_id}_0_result.pkl\n"
                                          f"has not produced any output (state: {self.state})\nError stream produced:\n"
                                          f"{'-' * 40}\n{self.stderr()}")
            if self.job.model_name == "model-d":
                self.state = "FAILED"
                raise FailedJobError(_job_error(DataError("box out of the image", source="refadv.parquet", row=3)))
            return sweep_mod.run_job(self.job)

        def stderr(self):
            return ("srun: Job step aborted\nslurmstepd: error: *** JOB 77 ON node1 CANCELLED AT 2026-11-27T19:00:00 "
                    "***" if self.job.model_name == "model-c" else "")

    class Executor:
        def map_array(self, fn, jobs):
            assert fn is sweep_mod.run_job
            return [Handle(j, k) for k, j in enumerate(jobs)]

    monkeypatch.setattr(sweep_mod, "_executor", lambda cfg: Executor())
    out = tmp_path / "out"
    cfg = _write(tmp_path, {"name": "cancel", "executor": "slurm", "out_dir": str(out), "progress": False,
                            "models": [{"spec": m, "quantization": "none"} for m in boxes],
                            "benchmarks": [{"name": "refadv", "source": str(src), "settings": ["direct"]}]})
    assert sweep_mod.sweep(cfg, quiet=True) == 2
    summary = (out / "summary.md").read_text()
    assert ("- model-c__none: cancelled (SLURM state CANCELLED by 1000); its stores so far are kept: run the sweep "
            "again to finish it") in summary.splitlines()
    assert "- model-d__none: DataError: refadv.parquet, row 3: box out of the image" in summary.splitlines()
    assert "not compared, as they did not finish: model-c__none, model-d__none." in summary
    assert "Comparison of 2 models" in summary
    compared = json.loads((out / "comparison.json").read_text())
    assert [m["model"] for m in compared["models"]] == ["model-a", "model-b"]
    assert len(compared["pairs"]) >= 1 and {p["paper"] for p in compared["pairs"]} == {"refadv"}


@pytest.mark.slow  # two sweeps of two served models through submitit's executor: about 16 s
def test_a_sweep_rerun_on_more_items_compares_the_rerun_not_the_first_run(tmp_path):
    """A sweep tried with ``limit: 2``, then run on every item: each job's second run is another run (other items),
    so it writes its own store beside the first; the comparison and the stores it reads are the rerun's, each
    model on every item (both runs in one store, the comparison took the first run's two items)."""
    pytest.importorskip("submitit")
    from vlamb_nb.models import ScriptedModel
    from vlamb_nb.models.serve import ChatServer
    from vlamb_nb.sweep import sweep

    bench = _bench_or_skip("refadv")
    src = bench.make_sample(tmp_path / "data", n=4)
    servers = [ChatServer(ScriptedModel(lambda r, k=k: f'[{{"bbox_2d": [1, 2, {30 + k}, 40]}}]', model_id=name),
                          host="127.0.0.1", port=0).start(lifetime=180) for k, name in enumerate(("m", "n"))]
    out = tmp_path / "out"

    def run(limit):
        spec = {"name": "refadv", "source": str(src), "settings": ["direct"], **({"limit": limit} if limit else {})}
        cfg = _write(tmp_path, {"name": "rerun", "out_dir": str(out), "progress": False,
                                "models": [{"spec": f"openai:{s.model.info.model_id}", "quantization": "none",
                                            "options": {"base_url": s.base_url, "max_retries": 0}} for s in servers],
                                "benchmarks": [spec]})
        assert sweep(cfg, quiet=True) == 0, (out / "summary.md").read_text()
        return json.loads((out / "comparison.json").read_text())

    try:
        first = run(2)
        again = run(None)
    finally:
        for s in servers:
            s.stop()
    assert {v["n"] for v in first["values"] if v["slice"] == "overall"} == {2}
    assert {v["n"] for v in again["values"] if v["slice"] == "overall"} == {4}
    stores = sorted(p.name for p in (out / "predictions").rglob("*.jsonl"))
    assert len(stores) == 4 and len([s for s in stores if s == "refadv__direct.jsonl"]) == 2, stores
