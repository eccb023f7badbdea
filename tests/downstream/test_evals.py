"""``harness eval``: downstream scores of finished runs' kept weights with lm-evaluation-harness,
on a small multiple-choice task read from local files (tests/data/eval_task), offline."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import yaml

from harness.core import paths
from harness.data.catalogue import resolve_dataset
from harness.data.prepare import dataset_encoder
from harness.model.build import build_model
from harness.store.db import connect
from harness.store.manifest import read_manifest

pytestmark = pytest.mark.slow  # its runs are trained by submit, lm-eval scores them

TESTS = Path(__file__).resolve().parents[1]
TASK_DIR = TESTS / "data" / "eval_task"
TASK = "harness_tiny_mc"
OFFLINE = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
SMALL: dict[str, Any] = {"n_layer": 1, "n_head": 2, "d_model": 32}
"""The tiny GPT cut to one narrow layer: what is checked (scores, rows, skips) holds at any size."""


def write_task(folder: Path) -> Path:
    """A --include folder holding the tiny task's YAML, reading the JSONL by absolute path."""
    folder.mkdir(parents=True, exist_ok=True)
    text = (TASK_DIR / "tiny_mc.yaml.in").read_text()
    text = text.replace("DATA_FILE", str(TASK_DIR / "tiny_mc.jsonl"))
    (folder / "tiny_mc.yaml").write_text(text)
    (folder / "tiny_mc2.yaml").write_text(text.replace(f"task: {TASK}", f"task: {TASK}2"))
    (folder / "tiny_group.yaml").write_text((TASK_DIR / "tiny_group.yaml").read_text())
    return folder


def write_grid(
    folder: Path, name: str, keep: bool = True, seeds: tuple[int, ...] = (0, 1), **base: Any
) -> Path:
    """A grid of small runs (one per seed) of 4 steps, keeping their weights."""
    doc = {
        "name": name,
        "launcher": "local",
        "base": {
            "model": "tiny",
            **SMALL,
            "dataset": "classics-bpe8k",
            "optimizer": "adamw",
            "lr": 3.0e-3,
            "seq_len": 32,
            "batch_size": 8,
            "tokens": 8 * 32 * 4,
            "eval_tokens": 2048,
            "log_every": 2,
            "keep_weights": keep,
            **base,
        },
        "seeds": list(seeds),
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def invoke(*args: Any) -> Any:
    from click.testing import CliRunner

    from harness.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Nothing downloaded; HF datasets' cache in a temporary folder."""
    with pytest.MonkeyPatch.context() as mp:
        for k, v in OFFLINE.items():
            mp.setenv(k, v)
        mp.setenv("HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf")))
        yield


@pytest.fixture(scope="module")
def trained(
    tmp_path_factory: pytest.TempPathFactory, prepared_data: Path, offline: None
) -> SimpleNamespace:
    """A grid of two completed tiny runs with kept weights, and the task folder."""
    tmp = tmp_path_factory.mktemp("evals")
    root = tmp / "results"
    grid = write_grid(tmp, "ev")
    out = invoke("submit", grid, "--launcher", "local", "--results", root, "--data", prepared_data)
    assert out.exit_code == 0, out.output
    return SimpleNamespace(root=root, grid="ev", data=prepared_data, tasks=write_task(tmp / "t"))


def eval_args(t: SimpleNamespace, *extra: Any) -> list[Any]:
    return [
        "eval",
        t.grid,
        "--tasks",
        TASK,
        "--include",
        t.tasks,
        "--results",
        t.root,
        "--data",
        t.data,
        *extra,
    ]


def eval_files(root: Path, grid: str) -> dict[str, int]:
    folder = paths.evals_dir(root, grid)
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*")} if folder.is_dir() else {}


def own_accuracy(model: torch.nn.Module, encoder: Any, docs: list[dict[str, Any]]) -> float:
    """Accuracy of argmax over each choice's summed log-probabilities, computed here: the
    question's tokens after the end-of-text token, the choice's (after lm-eval's target
    delimiter, a space) the joined text's beyond them."""
    right = 0
    for doc in docs:
        q = [int(t) for t in encoder.encode_docs([doc["question"]])[0]]
        sums = []
        for choice in doc["choices"]:
            whole = [int(t) for t in encoder.encode_docs([doc["question"] + " " + choice])[0]]
            assert whole[: len(q)] == q
            ids = torch.tensor([[encoder.eot_token, *whole]])
            with torch.no_grad():
                logp = torch.log_softmax(model(ids[:, :-1]).float(), -1)[0]
            n = len(whole) - len(q)
            targets = ids[0, -n:]
            sums.append(sum(logp[-n + i, targets[i]].item() for i in range(n)))
        right += int(max(range(len(sums)), key=sums.__getitem__) == doc["answer"])
    return right / len(docs)


def kept_val_loss(model: torch.nn.Module, run: Any, data: Path) -> float:
    """The validation loss of kept weights, as the run measured its own at the end."""
    from harness.data.batches import TokenData

    tokens = TokenData(resolve_dataset(run.data.dataset, data))
    total, count = 0.0, 0
    for x, y in tokens.eval_batches(run.data.eval_tokens, run.data.seq_len, 8):
        with torch.no_grad():
            total += torch.nn.functional.cross_entropy(
                model(x).flatten(0, 1).float(), y.flatten(), reduction="sum"
            ).item()
        count += y.numel()
    return total / count


def test_eval_writes_rows_joining_runs_with_our_accuracy(trained: SimpleNamespace) -> None:
    out = invoke(*eval_args(trained))
    assert out.exit_code == 0, out.output
    assert "evaluated 2 (run, task) pairs of 2 runs" in out.output
    con = connect(trained.root, trained.grid)
    val_loss = dict(con.execute("SELECT run_id, val_loss FROM runs").fetchall())
    rows = con.execute(
        "SELECT e.run_id, e.task, e.subtask, e.metric, e.filter, e.value, e.stderr, e.version, "
        "e.num_fewshot, e.samples, e.weights_sha256, e.lm_eval_version, r.status "
        "FROM evals e JOIN runs r USING (run_id) ORDER BY e.run_id"
    ).fetchall()
    assert len(rows) == 2 and {r[-1] for r in rows} == {"completed"}
    docs = [json.loads(line) for line in (TASK_DIR / "tiny_mc.jsonl").read_text().splitlines()]
    runs = read_manifest(trained.root, trained.grid)
    encoder = dataset_encoder(resolve_dataset("classics-bpe8k", trained.data))
    for run_id, task, sub, metric, filt, value, stderr, version, shots, n, sha, ver, _ in rows:
        assert (task, sub, metric, filt, version, shots, n) == (
            TASK,
            TASK,
            "acc",
            "none",
            "1.0",
            0,
            len(docs),
        )
        assert ver == "0.4.13" and stderr is not None
        weights = paths.weights_path(trained.root, trained.grid, run_id)
        assert sha == hashlib.sha256(weights.read_bytes()).hexdigest()
        run = runs[run_id]
        model = build_model(run.arch, run.data.seq_len).eval()
        model.load_state_dict(torch.load(weights, weights_only=True)["model"])
        assert value == pytest.approx(own_accuracy(model, encoder, docs), abs=1e-12)
        assert kept_val_loss(model, run, trained.data) == pytest.approx(val_loss[run_id], rel=1e-5)
        assert math.isclose(stderr, math.sqrt(value * (1 - value) / (len(docs) - 1)))


def test_rerun_skips_pairs_done_with_the_same_weights(trained: SimpleNamespace) -> None:
    assert invoke(*eval_args(trained)).exit_code == 0
    before = eval_files(trained.root, trained.grid)
    out = invoke(*eval_args(trained))
    assert out.exit_code == 0 and "evaluated 0 (run, task) pairs" in out.output
    assert "skipped 2" in out.output and eval_files(trained.root, trained.grid) == before
    # one run's weights change: only its pair is evaluated again
    run_id = sorted(read_manifest(trained.root, trained.grid))[0]
    path = paths.weights_path(trained.root, trained.grid, run_id)
    saved = torch.load(path, weights_only=True)
    saved["model"]["embedding.weight"] += 0.01
    torch.save(saved, path)
    out = invoke(*eval_args(trained))
    assert "evaluated 1 (run, task) pairs of 1 runs; skipped 1" in out.output, out.output
    after = eval_files(trained.root, trained.grid)
    changed = {k for k in after if after[k] != before.get(k)}
    assert changed == {paths.eval_path(trained.root, trained.grid, run_id, TASK).name}
    # another --limit is another evaluation: both pairs again, on 5 documents
    out = invoke(*eval_args(trained, "--limit", 5))
    assert "evaluated 2 (run, task) pairs of 2 runs; skipped 0" in out.output, out.output
    con = connect(trained.root, trained.grid)
    assert con.execute("SELECT DISTINCT doc_limit, samples FROM evals").fetchall() == [(5, 5)]
    out = invoke(*eval_args(trained))
    assert "evaluated 2 (run, task) pairs of 2 runs; skipped 0" in out.output, out.output


def test_a_run_evaluated_elsewhere_is_left_to_it(trained: SimpleNamespace) -> None:
    from harness.core.files import try_locked

    busy, free = sorted(read_manifest(trained.root, trained.grid))
    before = eval_files(trained.root, trained.grid)
    with try_locked(paths.eval_lock_path(trained.root, trained.grid, busy)) as held:
        assert held
        out = invoke(*eval_args(trained, "--limit", 3))  # a new limit: both pairs planned
    assert f"run {busy} is being evaluated by another process" in out.output, out.output
    assert "evaluated 1 (run, task) pairs of 2 runs" in out.output
    after = eval_files(trained.root, trained.grid)
    changed = {k for k in after if after[k] != before.get(k)}
    assert changed == {paths.eval_path(trained.root, trained.grid, free, TASK).name}


def test_a_group_gives_rows_for_itself_and_each_member(trained: SimpleNamespace) -> None:
    args = eval_args(trained)
    args[args.index("--tasks") + 1] = "harness_tiny_group"
    assert invoke(*args).exit_code == 0
    rows = (
        connect(trained.root, trained.grid)
        .execute(
            "SELECT run_id, subtask, value, samples FROM evals "
            "WHERE task = 'harness_tiny_group' AND metric = 'acc'"
        )
        .fetchall()
    )
    by_run: dict[str, dict[str, tuple[float, int | None]]] = {}
    for run_id, sub, value, n in rows:
        by_run.setdefault(run_id, {})[sub] = (value, n)
    assert len(by_run) == 2
    for subs in by_run.values():
        assert set(subs) == {"harness_tiny_group", TASK, f"{TASK}2"}
        assert subs[TASK] == subs[f"{TASK}2"] and subs[TASK][1] == 12  # the same documents
        assert subs["harness_tiny_group"][0] == pytest.approx(subs[TASK][0])


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (
            ["--tasks", "harness_tiny_mcq"],
            ["unknown task 'harness_tiny_mcq'", "valid:", "nearest: harness_tiny_mc"],
        ),
        (["--include", "/no/such/folder"], ["--include /no/such/folder", "no such folder"]),
        (["--launcher", "nosuch"], ["nosuch", "local"]),
        (["--limit", "0"], ["--limit 0"]),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_written(
    trained: SimpleNamespace, extra: list[str], words: list[str]
) -> None:
    before = eval_files(trained.root, trained.grid)
    args = eval_args(trained)
    if extra[0] == "--tasks":
        args[args.index("--tasks") + 1] = extra[1]
    else:
        args += extra
    out = invoke(*args)
    assert out.exit_code == 2, out.output
    lines = out.output.strip().splitlines()
    assert len(lines) == 1 and all(w in lines[0] for w in words), lines
    assert eval_files(trained.root, trained.grid) == before


def test_lm_eval_missing_is_one_line_exit_2(
    trained: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "lm_eval" else real(name, *a)
    )
    before = eval_files(trained.root, trained.grid)
    out = invoke(*eval_args(trained))
    assert out.exit_code == 2 and "pip install 'harness[eval]'" in out.output, out.output
    assert eval_files(trained.root, trained.grid) == before


def test_runs_without_kept_weights_are_refused(trained: SimpleNamespace, tmp_path: Path) -> None:
    from harness.core.provenance import provenance
    from harness.core.result import RunResult
    from harness.store.manifest import write_manifest
    from harness.store.rows import write_result
    from tests.runs import tiny_run

    root = tmp_path / "results"  # a completed run (its row written here) that keeps no weights
    run = tiny_run(trained.data, grid="nokeep")
    write_manifest(root, "nokeep", [run])
    write_result(root, run, RunResult(status="completed", steps_done=6), provenance())
    t = SimpleNamespace(root=root, grid="nokeep", data=trained.data, tasks=trained.tasks)
    out = invoke(*eval_args(t))
    assert out.exit_code == 2 and "no completed run kept its weights (1 completed)" in out.output
    assert "keep_weights: true" in out.output and not paths.evals_dir(root, "nokeep").exists()
    # a run that keeps its weights but lost them is named
    root2 = trained.root
    run_id = sorted(read_manifest(root2, trained.grid))[1]
    w = paths.weights_path(root2, trained.grid, run_id)
    moved = w.with_suffix(".moved")
    w.rename(moved)
    try:
        before = eval_files(root2, trained.grid)
        out = invoke(*eval_args(trained))
        assert out.exit_code == 2 and run_id in out.output and "have none" in out.output
        assert eval_files(root2, trained.grid) == before
    finally:
        moved.rename(w)


# --- the model as lm-eval sees it --------------------------------------------------------------


@pytest.fixture
def small_lm(prepared_data: Path) -> Any:
    """An untrained small model of context 8 (so that requests get truncated), as an lm-eval LM."""
    from harness.downstream.lm import HarnessLM
    from tests.runs import tiny_run

    torch.manual_seed(0)
    run = tiny_run(prepared_data, seq_len=8, **SMALL)
    model = build_model(run.arch, 8).eval()
    encoder = dataset_encoder(resolve_dataset("classics-bpe8k", prepared_data))
    return HarnessLM(model, encoder, 8, batch_size=3)


def _request(*args: Any) -> Any:
    return SimpleNamespace(args=args)


def test_loglikelihood_is_the_sum_of_each_tokens_log_prob(small_lm: Any) -> None:
    lm, eot = small_lm, small_lm.encoder.eot_token
    requests = [
        ("And God said, Let there be", " light"),
        ("In the beginning God created the heaven and the earth. And the earth", " was void"),
        ("", "To be, or not to be"),
        ("Thou shalt not ", "kill"),  # the context's space goes to the continuation
    ]
    got = lm.loglikelihood([_request(c, x) for c, x in requests])
    for (context, cont), (total, greedy) in zip(requests, got, strict=True):
        ctx = lm.tokens(context.rstrip())
        whole = lm.tokens(context + cont)
        ids, n = [eot, *whole], len(whole) - len(ctx)
        expected, all_greedy = 0.0, True
        start = max(0, len(ids) - 9)  # one window of the context: cut on the left (as lm-eval's HF)
        for k in range(len(ids) - n, len(ids)):  # token k given the window's tokens before it
            with torch.no_grad():
                logits = lm.model(torch.tensor([ids[start:k]]))[0, -1]
            expected += torch.log_softmax(logits.float(), -1)[ids[k]].item()
            all_greedy &= int(logits.argmax()) == ids[k]
        assert total == pytest.approx(expected, rel=1e-5, abs=1e-5)
        assert greedy == all_greedy
    assert any(len(lm.tokens(c)) + len(lm.tokens(x)) > 8 for c, x in requests)  # truncated


def test_rolling_loglikelihood_and_greedy_generation(small_lm: Any) -> None:
    lm = small_lm
    short = "Let there be light"
    assert len(lm.tokens(short)) <= 8
    (rolling,) = lm.loglikelihood_rolling([_request(short)])
    ((whole, _),) = lm.loglikelihood([_request("", short)])
    assert rolling == pytest.approx(whole, rel=1e-6)
    long = "In the beginning God created the heaven and the earth. And the earth was void."
    (rolling,) = lm.loglikelihood_rolling([_request(long)])
    ids = [lm.encoder.eot_token, *lm.tokens(long)]
    expected = 0.0
    n = len(ids) - 1  # tokens predicted, in disjoint chunks of 8; each chunk's window of 8
    for k in range(1, n + 1):  # inputs ends where the chunk ends (the last sees a full window)
        end = min(8 * ((k - 1) // 8 + 1), n)
        with torch.no_grad():
            logits = lm.model(torch.tensor([ids[max(0, end - 8) : k]]))[0, -1]
        expected += torch.log_softmax(logits.float(), -1)[ids[k]].item()
    assert rolling == pytest.approx(expected, rel=1e-5)
    context = "And God said, Let there be light: and there was light. And God"
    (text,) = lm.generate_until([_request(context, {"until": ["\n\n"], "max_gen_toks": 5})])
    ids = [lm.encoder.eot_token, *lm.tokens(context)]
    for _ in range(5):
        with torch.no_grad():
            ids.append(int(lm.model(torch.tensor([ids[-8:]]))[0, -1].argmax()))
    expected_text = lm.encoder.decode(ids[-5:])
    assert text == expected_text.split("\n\n")[0]
    stop = expected_text[len(expected_text) // 2 :][:2] or expected_text
    (cut,) = lm.generate_until([_request(context, {"until": stop, "max_gen_toks": 5})])
    assert stop not in cut and expected_text.startswith(cut)


# --- SLURM -------------------------------------------------------------------------------------


@pytest.mark.slurm
def test_eval_runs_as_a_slurm_array(
    slurm_env: Path, trained: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The evaluations of a grid's runs as an array on the test cluster (one task per run)."""
    import shutil

    from tests.slurm_runs import FAST_WAIT, write_profile

    assert invoke(*eval_args(trained)).exit_code == 0  # local scores (or skipped: done)
    root = slurm_env / "results"
    shutil.copytree(trained.root, root)  # the trained runs, fresh of scores
    shutil.rmtree(paths.evals_dir(root, trained.grid), ignore_errors=True)
    for k, v in {**OFFLINE, **FAST_WAIT}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(slurm_env / "hf"))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(TESTS.parent), os.environ.get("PYTHONPATH", "")])
    )
    profile = write_profile(slurm_env / "launchers", "slurm-eval")
    t = SimpleNamespace(root=root, grid=trained.grid, data=trained.data, tasks=trained.tasks)
    out = invoke(*eval_args(t, "--launcher", profile, "--wait"))
    assert out.exit_code == 0, out.output
    assert "queued 2 runs' evaluations as array job" in out.output
    assert "evaluated 2 (run, task) pairs of 2 runs" in out.output  # waited: done
    con = connect(root, trained.grid)
    rows = con.execute(
        "SELECT e.run_id, e.value, e.job_id FROM evals e JOIN runs r USING (run_id)"
    ).fetchall()
    assert len(rows) == 2 and all(j and "_" in j for _, _, j in rows), rows
    local = (
        connect(trained.root, trained.grid)
        .execute("SELECT run_id, value FROM evals WHERE metric = 'acc'")
        .fetchall()
    )
    assert dict((r, v) for r, v, _ in rows) == dict(local)


def test_a_backend_without_an_evaluator_is_refused_naming_those_with_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness.core.errors import UserError
    from harness.launch import evals
    from harness.launch.profile import Backend, backend

    def no_evaluator(kind: str) -> Backend:
        return Backend(settings=object, launcher="x:y") if kind == "toy" else backend(kind)

    monkeypatch.setattr(evals, "backend", no_evaluator)
    with pytest.raises(UserError) as e:
        evals.evaluator_of(SimpleNamespace(name="toyp", kind="toy"))  # type: ignore[arg-type]
    assert str(e.value) == (
        "--launcher toyp: kind 'toy' cannot run evaluations; valid kinds: local, slurm"
    )
