"""The SLURM launcher's planning, without a cluster: array chunking, the controller's limits,
node checks, records, packing and sbatch parameters, and the 10,000-run dry run."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any

import pytest

from harness.core.catalogue import with_values
from harness.core.errors import UserError
from harness.core.paths import submission_records_dir
from harness.launch.profile import LauncherProfile, load_profile
from harness.launch.slurm import arrays
from harness.launch.slurm.launcher import SlurmLauncher
from harness.launch.slurm.limits import ClusterLimits, array_sizes, cluster_limits, parse_config
from harness.launch.slurm.reconcile import killed_for_memory, unfinished
from harness.launch.slurm.records import (
    Submission,
    latest_assignments,
    read_submissions,
    write_submission,
)
from harness.launch.slurm.resources import Node, Request, check_fits, gpu_count, parse_sinfo
from harness.launch.slurm.scheduler import expand_ids
from harness.launch.slurm.settings import SlurmSettings
from tests.runs import tiny_run


def _profile(**fields: Any) -> LauncherProfile[SlurmSettings]:
    base = {"gpus_per_node": 1, "cpus_per_task": 4, "mem_gb": 16}
    return LauncherProfile(name="p", kind="slurm", settings=SlurmSettings(**{**base, **fields}))


# --- arrays and limits --------------------------------------------------------------------------
def test_array_sizes_respect_max_array_size_and_cover_every_task():
    assert array_sizes(10_000, 1001) == [1000] * 10
    assert array_sizes(1001, 1001) == [1001]
    assert array_sizes(1002, 1001) == [501, 501]
    assert array_sizes(44 // 4, 5) == [4, 4, 3]
    assert array_sizes(0, 1001) == []
    for tasks, cap in [(1, 1), (7, 3), (12345, 1001), (999, 1000)]:
        sizes = array_sizes(tasks, cap)
        assert sum(sizes) == tasks and max(sizes) <= cap and len(sizes) == -(-tasks // cap)


def test_parse_config_reads_the_limits():
    text = "Configuration data as of ...\nMaxArraySize            = 4001\nMaxJobCount = 200000\n"
    conf = parse_config(text)
    assert conf["MaxArraySize"] == "4001" and conf["MaxJobCount"] == "200000"


def test_without_slurm_the_limits_are_slurm_defaults_and_say_so(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol on PATH
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    limits = cluster_limits()
    assert (limits.max_array_size, limits.max_job_count) == (1001, 10000)
    assert "defaults assumed" in limits.source and "scontrol not found" in limits.source
    assert not (tmp_path / "cache" / "harness" / "slurm-limits.json").exists()  # never cached


def test_limits_come_from_a_fresh_cache_without_scontrol(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    cache = tmp_path / "cache" / "harness" / "slurm-limits.json"
    cache.parent.mkdir(parents=True)
    key = f"{conf}@{conf.stat().st_mtime_ns}"
    limits = {"max_array_size": 77, "max_job_count": 500, "source": "scontrol show config"}
    cache.write_text(json.dumps({"key": key, "time": time.time(), "limits": limits}))
    assert cluster_limits() == ClusterLimits(77, 500, "scontrol show config")
    os.utime(conf, ns=(1, 1))  # slurm.conf changed: the cache no longer applies
    assert cluster_limits().max_array_size == 1001


def test_expand_ids_reads_sacct_array_ranges():
    assert list(expand_ids("12")) == ["12"]
    assert list(expand_ids("12_3")) == ["12_3"]
    assert list(expand_ids("12_[4-6,9%2]")) == ["12_4", "12_5", "12_6", "12_9"]


# --- nodes --------------------------------------------------------------------------------------
SINFO = "vm|debug*|2|24105|gpu:a100:2|a100\nvm|a100|2|24105|gpu:a100:2(S:0-1)|a100\n"


def test_parse_sinfo_and_gpu_count():
    nodes = parse_sinfo(SINFO)
    assert [(n.partition, n.default, n.cpus, n.mem_mb, n.gpus) for n in nodes] == [
        ("debug", True, 2, 24105, 2),
        ("a100", False, 2, 24105, 2),
    ]
    assert nodes[0].features == {"a100"}
    assert gpu_count("(null)") == 0 and gpu_count("gpu:4,gpu:h100:2,shard:8") == 6


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (Request("a100", "a100", 4, 2, None), "asks for 4 GPUs, 2 CPUs but no node"),
        (Request("a100", None, 1, 1, 64 * 1024), "64 GB but no node in partition a100"),
        (Request(None, None, 0, 3, None), "3 CPUs but no node in partition default"),
        (Request("gpu", None, 1, 1, None), "unknown partition 'gpu'; partitions"),
        (Request("a100", "h100", 1, 1, None), "no node in partition a100 with features 'h100'"),
    ],
)
def test_impossible_requests_are_one_line_errors(request_, message):
    with pytest.raises(UserError, match=message) as e:
        check_fits(request_, parse_sinfo(SINFO), "slurm-x")
    assert "\n" not in str(e.value) and "(sinfo)" in str(e.value)


def test_requests_that_fit_pass():
    nodes = parse_sinfo(SINFO)
    check_fits(Request("a100", "a100", 2, 2, 20 * 1024), nodes, "x")
    check_fits(Request(None, "a100|h100", 0, 1, None), nodes, "x")
    check_fits(Request(None, None, 0, 1, None), [Node("n", "p", True, 1, 1, 0, frozenset())], "x")


# --- packing and sbatch parameters --------------------------------------------------------------
def test_pack_groups_by_processes_and_packs_runs(prepared_data):
    runs = [tiny_run(prepared_data, seed=s) for s in range(5)]
    runs += [tiny_run(prepared_data, seed=s, gpus_per_run=2, micro_batch_size=4) for s in range(2)]
    tasks = arrays.group_into_tasks(runs, 2)
    assert [(t.processes, len(t.run_ids)) for t in tasks] == [(1, 2), (1, 2), (1, 1), (2, 2)]
    assert [r for t in tasks for r in t.run_ids] == [r.run_id for r in runs]


def test_executor_parameters_map_the_profile_to_sbatch():
    p = _profile(
        partition="a100",
        account="acc",
        qos="hi",
        constraint="a100",
        mem_gb=1.5,
        timeout_min=90,
        array_parallelism=7,
        setup=("module load x",),
        sbatch={"exclusive": True},
    )
    params = arrays.executor_parameters(p, 1, "g")
    assert params["partition"] == "a100" and params["account"] == "acc" and params["qos"] == "hi"
    assert params["constraint"] == "a100" and params["mem"] == "1536M" and params["time"] == 90
    assert params["gpus_per_node"] == 1 and params["ntasks_per_node"] == 1
    assert params["array_parallelism"] == 7 and params["setup"] == ["module load x"]
    assert params["additional_parameters"] == {"exclusive": True}
    assert params["job_name"] == "harness-g" and params["signal_delay_s"] == 90
    cpu = arrays.executor_parameters(_profile(gpus_per_node=0, mem_gb=None), 2, "g")
    assert "gpus_per_node" not in cpu and "mem" not in cpu and cpu["ntasks_per_node"] == 2


def test_signal_comes_no_earlier_than_10_s_after_the_start():
    assert [arrays.signal_delay_s(m) for m in (1, 2, 3, 60)] == [50, 90, 90, 90]


def test_runs_needing_more_gpus_than_the_profile_allows_are_refused():
    with pytest.raises(UserError, match=r"gpus_per_run: 8 need 8 GPUs .* gpus_per_node: 1"):
        arrays.request(_profile(gpus_per_node=1), 8)
    assert arrays.request(_profile(gpus_per_node=8, cpus_per_task=2), 8).cpus == 16


def test_sbatch_reason_is_one_line():
    err = "sbatch: error: Batch job submission failed: Invalid account\nsbatch: error: more\n"
    assert arrays.sbatch_reason(err) == "Batch job submission failed: Invalid account; more"


# --- records ------------------------------------------------------------------------------------
def test_records_round_trip_and_the_latest_submission_wins(tmp_path):
    first = Submission("41", True, (("a", "b"), ("c",)), "2026-01-01T00:00:00+00:00", "p", "/l/41")
    retry = Submission("57", False, (("c",),), "2026-01-02T00:00:00+00:00", "p", "/l/57")
    write_submission(tmp_path, "g", retry)
    write_submission(tmp_path, "g", first)
    assert read_submissions(tmp_path, "g") == [first, retry]
    where = latest_assignments(read_submissions(tmp_path, "g"))
    assert {r: p.task for r, p in where.items()} == {"a": "41_0", "b": "41_0", "c": "57"}
    assert not list(submission_records_dir(tmp_path, "g").glob(".*"))  # no temporary files left


# --- dry run ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_dry_run_plan_of_10000_runs(prepared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # as on a laptop: no Slurm, defaults assumed
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    one = tiny_run(prepared_data)
    runs = [with_values(one, seed=s) for s in range(10_000)]
    launcher = SlurmLauncher(load_profile("slurm-a100"))
    text = launcher.plan(runs)  # its time: benchmarks/overhead.py (the 10,000-run dry run)
    assert "sbatch calls: 10 " in text and "10000 array tasks" in text
    assert "Slurm's defaults assumed" in text
    a100 = load_profile("slurm-a100")
    four = dataclasses.replace(a100.settings, runs_per_task=4)
    packed = SlurmLauncher(dataclasses.replace(a100, settings=four))
    assert "sbatch calls: 3 " in packed.plan(runs)  # 2500 tasks in arrays of <= 1001
    few = SlurmLauncher(load_profile("slurm-a100"), limits=ClusterLimits(10, 9000, "test"))
    assert "sbatch calls: 1000 " in few.plan(runs) and "exceed MaxJobCount" in few.plan(runs)


# --- classification helpers and the CLI without a cluster ---------------------------------------
def test_memory_kills_are_read_from_the_task_log(tmp_path):
    log = tmp_path / "7_0_0_log.err"
    log.write_text("x" * 20000 + "\nslurmstepd: error: StepId=7.0 exceeded memory limit (3 > 2)\n")
    assert killed_for_memory(log)
    log.write_text("Traceback ...\nValueError: bad\n")
    assert not killed_for_memory(log) and not killed_for_memory(tmp_path / "missing.err")


def test_unfinished_runs_are_those_without_a_row_from_their_latest_task():
    sub = Submission("9", True, (("a", "b"), ("c",)), "2026-01-01T00:00:00+00:00", "p", "/l")
    where = latest_assignments([sub])
    rows = {"a": "9_0", "b": "3_1", "x": "9_0"}  # b's row is from an older job
    assert sorted(unfinished(where, rows)) == ["b", "c"]


def test_cancel_without_submissions_is_a_one_line_error(tmp_path):
    from click.testing import CliRunner

    from harness.cli import main

    out = CliRunner().invoke(main, ["cancel", "nosuch", "--results", str(tmp_path)])
    assert out.exit_code == 2
    assert "grid 'nosuch' has no queued submissions under" in out.output
    assert "(backends asked: local, slurm); nothing to cancel" in out.output


def test_queued_runs_without_squeue_are_an_error_for_slurm_and_none_for_a_laptop(
    tmp_path, monkeypatch
):
    """Results copied from a cluster to a laptop hold submission records; a --local submit there
    (no squeue) trains the runs, a SLURM submit refuses to guess. A run with no record is never
    asked about (no squeue call at all)."""
    from harness.launch.slurm.queued import queued_on_slurm
    from harness.launch.slurm.scheduler import SchedulerError

    root = tmp_path / "results"
    sub = Submission("4242", True, (("aaa",), ("bbb",)), "2026-11-22T00:00:00+00:00", "x", "logs")
    write_submission(root, "g", sub)
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm-here"))
    assert queued_on_slurm(root, "g", ["aaa", "bbb"], need_squeue=False) == set()
    with pytest.raises(SchedulerError, match="squeue: command not found"):
        queued_on_slurm(root, "g", ["aaa"])
    assert queued_on_slurm(root, "g", ["ccc"]) == set()  # no record: squeue is not asked
