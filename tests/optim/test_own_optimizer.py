"""Your own optimizer, model and data, without editing the harness: named by module or file in a
grid, registered through an entry point, stored with typed columns, analysed and figured; bad
uses are one line; changed optimizer code never passes as current."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.core.catalogue import flat
from harness.data.catalogue import vocab_lookup
from harness.grid.load import load_grid

OPTIMIZER = '''
import torch


class AdamGamma(torch.optim.Optimizer):
    """Sign descent on an EMA of gradients, its step scaled by gamma."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.99), weight_decay=0.0,
                 gamma: float = 0.5, decay: float = 0.9):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay,
                                      gamma=gamma, decay=decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                m = self.state[p].setdefault("m", torch.zeros_like(p))
                m.lerp_(p.grad, 1 - group["betas"][0])
                p.add_(m.sign(), alpha=-group["lr"] * group["gamma"])


class NotAnOptimizer:
    def __init__(self, params, lr=1.0):
        pass


class NeedsRank(AdamGamma):
    def __init__(self, params, lr=1e-3, *, rank: int):  # required
        super().__init__(params, lr=lr)


class TakesRho(AdamGamma):
    def __init__(self, params, lr=1e-3, rho: float = 0.5):
        super().__init__(params, lr=lr)


class TakesSeed(AdamGamma):
    def __init__(self, params, lr=1e-3, seed=0):
        super().__init__(params, lr=lr)
'''

GRID = """
name: own
base:
  model: tiny
  dataset: classics-bpe8k
  seq_len: 32
  batch_size: 8
  steps: 6
  eval_tokens: 2048
  log_every: 2
  warmup_steps: 1
grid:
  optimizer:
    ./my_opt.py:AdamGamma: {{lr: [3.0e-3], gamma: [0.5, 1.0]}}
    adamw: {{lr: [3.0e-3]}}
seeds: [0]
{extra}
"""

GPT_KEYS = "  model: tiny\n  dataset: classics-bpe8k\n  seq_len: 32\n  batch_size: 8\n"
QUADRATIC = GRID.replace(GPT_KEYS, "  workload: quadratic\n").replace("  eval_tokens: 2048\n", "")
"""The grid on the quadratic workload: what is under test is the optimizer's own code and
hyperparameter (columns, queries, analysis, staleness), never the model (0.02 s a run)."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's folder: an optimizer module and a grid naming it by file."""
    (tmp_path / "my_opt.py").write_text(OPTIMIZER)
    (tmp_path / "own.yaml").write_text(GRID.format(extra=""))
    return tmp_path


def _cli(*args: object, code: int = 0, stdout: bool = False) -> str:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r.stdout if stdout else r.output


def test_a_grid_expands_over_the_optimizers_own_hyperparameter(project: Path) -> None:
    runs = load_grid(project / "own.yaml", vocab=vocab_lookup(project)).runs
    own = [r for r in runs if r.optim.optimizer.endswith("my_opt.py:AdamGamma")]
    assert [r.optim.hyperparameters.as_dict() for r in own] == [
        {"decay": 0.9, "gamma": 0.5},
        {"decay": 0.9, "gamma": 1.0},
    ]
    assert own[0].optim.optimizer == f"{(project / 'my_opt.py').resolve()}:AdamGamma"
    assert (own[0].optim.beta1, own[0].optim.beta2) == (0.9, 0.99)  # betas: the run's fields
    assert own[0].optim.eps is None  # its constructor takes no eps
    assert "gamma" not in flat(runs[-1])  # adamw takes no gamma


@pytest.mark.slow
def test_trained_stored_typed_queried_analysed_and_figured(project: Path) -> None:
    common = ["--results", project / "results"]
    (project / "own.yaml").write_text(QUADRATIC.format(extra=""))
    _cli("submit", project / "own.yaml", "--launcher", "local", *common)
    files = sorted((project / "results" / "own").glob("runs/*"))  # each with its own schema
    rows = [row for f in files for row in pq.read_table(f).to_pylist()]
    assert sorted(r["status"] for r in rows) == ["completed"] * 3
    gamma_rows = [r for r in rows if r.get("gamma") is not None]
    assert sorted(r["gamma"] for r in gamma_rows) == [0.5, 1.0]
    assert {r["own_hyperparameters"] for r in gamma_rows} == {"decay,gamma"}
    schemas = [pq.read_schema(f) for f in files]
    own_schemas = [s for s in schemas if "gamma" in s.names]  # adamw's row has no gamma column
    assert len(schemas) == 3 and len(own_schemas) == 2
    assert {str(s.field("gamma").type) for s in own_schemas} == {"double"}
    assert {str(s.field("optimizer_fingerprint").type) for s in schemas} == {"string"}
    out = _cli(
        "query",
        "SELECT gamma, count(*) AS n FROM runs GROUP BY gamma ORDER BY gamma",
        "--format",
        "csv",
        *common,
    )
    assert "0.5,1" in out and "1.0,1" in out
    best = _cli(
        "analyze",
        "best",
        project / "own.yaml",
        "--over",
        "gamma",
        "--by",
        "optimizer",
        "--metric",
        "val_loss",
        "--format",
        "json",
        *common,
        stdout=True,
    )
    cells = json.loads(best)
    own_cell = next(c for c in cells if str(c["optimizer"]).endswith("AdamGamma"))
    assert own_cell["gamma"] in (0.5, 1.0) and own_cell["n"] == 1
    _cli("figures", project / "own.yaml", "--figure", "loss_curves", *common)
    figures = project / "results" / "own" / "figures"  # the quadratic's: loss_curves-val_loss
    assert [p.name for p in figures.glob("loss_curves*.png")] == ["loss_curves-val_loss.png"]


@pytest.mark.slow
def test_changed_optimizer_code_is_refused_or_rerun(project: Path) -> None:
    common = ["--results", project / "results", "--launcher", "local"]
    (project / "own.yaml").write_text(QUADRATIC.format(extra="").replace(", 1.0]", "]"))
    _cli("submit", project / "own.yaml", *common)
    opt = project / "my_opt.py"
    opt.write_text(opt.read_text().replace("# required", "# an edited comment changes nothing"))
    assert "skipped 2 with a result" in _cli("submit", project / "own.yaml", *common)
    step = 'alpha=-group["lr"] * group["gamma"]'
    opt.write_text(opt.read_text().replace(step, step + " * 0.5"))  # the optimizer's code changes
    refused = _cli("submit", project / "own.yaml", *common, code=2)
    assert "1 run(s) of 'own' have results computed with other optimizer code" in refused
    assert "--stale rerun" in refused and "--stale keep" in refused
    kept = _cli("submit", project / "own.yaml", *common, "--stale", "keep")
    assert "keeping them" in kept and "launching 0" in kept
    rerun = _cli("submit", project / "own.yaml", *common, "--stale", "rerun")
    assert "re-running them" in rerun and "launching 1" in rerun
    assert "skipped 2 with a result" in _cli("submit", project / "own.yaml", *common)


BAD_USES = [
    ("nope_module:AdamGamma", "", "cannot import module 'nope_module'"),
    ("./missing.py:AdamGamma", "", "missing.py: no such file"),
    ("./my_opt.py:Nope", "", "has no attribute 'Nope'"),
    ("./my_opt.py:NotAnOptimizer", "", "is not a torch.optim.Optimizer subclass"),
    ("./my_opt.py:AdamGamma", "delta: [1.0]", "unknown key 'delta'"),
    ("./my_opt.py:AdamGamma", "gamma: [true]", "gamma: expected float, got bool True"),
    ("./my_opt.py:AdamGamma", "gamma: [fast]", "gamma: expected float, got the string 'fast'"),
    ("./my_opt.py:NeedsRank", "", "needs 'rank'"),
    ("./my_opt.py:TakesSeed", "seed: [1]", "set seeds with the top-level 'seeds' key"),
    ("adamw", "gamma: [0.5]", "unknown key 'gamma'"),
    ("./my_opt.py:TakesRho", "rho: [0.1]", "named like a result column; set it as 'opt_rho'"),
]


@pytest.mark.parametrize(("optimizer", "axis", "message"), BAD_USES)
def test_each_bad_use_is_one_line_exit_2_nothing_written(project, optimizer, axis, message):
    text = textwrap.dedent(f"""
        name: bad
        base: {{model: tiny, seq_len: 32, batch_size: 8, steps: 6, lr: 1.0e-3,
                optimizer: "{optimizer}"}}
        grid: {{{axis}}}
    """)
    (project / "bad.yaml").write_text(text)
    argv = ["submit", project / "bad.yaml", "--launcher", "local", "--results", project / "results"]
    r = CliRunner().invoke(main, [str(a) for a in argv])
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert len([ln for ln in r.output.splitlines() if ln.startswith("error:")]) == 1
    assert "Traceback" not in r.output and not (project / "results").exists()


def _installed_cli(project: Path, module: str, code: str, entry_point: str, *args: str):
    """Run ``harness *args`` where a distribution providing ``module`` (``code``) with the
    entry point ``entry_point`` (``[group]\nname = module:attr``) is installed."""
    site = project / "site"
    dist = site / f"{module}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_point + "\n")
    (site / f"{module}.py").write_text(code)
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    cli = [sys.executable, "-c", "from harness.cli import main; main()", *args]
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run(cli, capture_output=True, text=True, env=env, check=False)


def test_an_entry_point_of_an_installed_package_is_found(project: Path) -> None:
    grid = (project / "own.yaml").read_text().replace("./my_opt.py:AdamGamma", "adam_gamma")
    (project / "ep.yaml").write_text(grid)
    out = _installed_cli(
        project,
        "my_opts",
        OPTIMIZER,
        "[harness.optimizers]\nadam_gamma = my_opts:AdamGamma",
        "submit",
        str(project / "ep.yaml"),
        "--dry-run",
        "--launcher",
        "local",
    )
    assert out.returncode == 0, out.stderr
    assert "adam_gamma" in out.stdout and "gamma" in out.stdout and "runs: 3" in out.stdout


MODEL = '''
import torch
from torch import nn


class Bigram(nn.Module):
    """Logits from the current token alone: a tiny model the harness has never seen."""

    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        return self.head(self.embedding(idx))  # (B, T, V)


def build(vocab_size: int, d_model: int = 16):
    return Bigram(vocab_size, d_model)
'''


@pytest.mark.slow
def test_a_users_model_is_built_counted_and_trained(project: Path, prepared_data: Path) -> None:
    (project / "bigram.py").write_text(MODEL)
    grid = (project / "own.yaml").read_text().replace("model: tiny", "model: ./bigram.py:build")
    (project / "bigram.yaml").write_text(grid)
    common = ["--results", project / "results", "--data", prepared_data, "--launcher", "local"]
    dry = _cli("submit", project / "bigram.yaml", *common, "--dry-run")
    params = 8192 * 16 * 2  # embedding + head, measured on the meta device
    assert f"({params / 1e6:.1f}M params)" in dry
    runs = load_grid(project / "bigram.yaml", vocab=vocab_lookup(prepared_data)).runs
    assert runs[0].arch.d_model == 16 and runs[0].arch.n_layer is None  # not an argument: None
    _cli("submit", project / "bigram.yaml", *common)
    rows = pq.read_table(project / "results" / "own" / "runs").to_pylist()
    assert {r["status"] for r in rows} == {"completed"} and {r["params"] for r in rows} == {params}


def test_register_makes_a_class_available_by_name(project: Path, monkeypatch) -> None:
    from harness.optim.registry import OPTIMIZERS, get_spec, register

    monkeypatch.syspath_prepend(str(project))
    from my_opt import AdamGamma  # type: ignore[import-not-found]

    # the registry as it was once the test ends: a later test of this process (a worker's next
    # file, e.g. test_optim_reference's "every registered optimizer") never sees the test's name
    monkeypatch.setattr(OPTIMIZERS, "_entries", dict(OPTIMIZERS._entries))
    register("test_registered_gamma", AdamGamma)
    spec = get_spec("test_registered_gamma")
    assert spec.cls == "my_opt:AdamGamma"
    assert {h.name: h.default for h in spec.hyperparameters} == {"gamma": 0.5, "decay": 0.9}
    with pytest.raises(ValueError, match="registered already"):
        register("test_registered_gamma", AdamGamma)


DATASET = '''
import json
import numpy as np
from harness.data.catalogue import DatasetSpec


def prepare(out):
    """Random tokens: a stand-in for a user's own corpus pipeline."""
    rng = np.random.default_rng(0)
    rng.integers(0, 256, 40_000, dtype=np.uint16).tofile(out / "train.bin")
    rng.integers(0, 256, 10_000, dtype=np.uint16).tofile(out / "val.bin")
    (out / "meta.json").write_text(json.dumps({"vocab_size": 256}))


SPEC = DatasetSpec(name="noise256", vocab_size=256, doc="random tokens", build="my_data:prepare")
'''


def test_a_dataset_registered_by_entry_point_is_prepared_by_its_function(project: Path) -> None:
    out = _installed_cli(
        project,
        "my_data",
        DATASET,
        "[harness.datasets]\nnoise256 = my_data:SPEC",
        "data",
        "prepare",
        "noise256",
        "--data",
        str(project / "data"),
    )
    assert out.returncode == 0, out.stderr
    assert "40,000 train" in out.stdout or "vocab 256" in out.stdout
    from harness.data.batches import TokenData
    from harness.data.fingerprint import dataset_fingerprint

    data = TokenData(project / "data" / "noise256")
    assert data.vocab_size == 256 and len(data.train) == 40_000
    before = dataset_fingerprint(project / "data" / "noise256")
    (project / "data" / "noise256" / "val.bin").write_bytes(np.zeros(10_000, np.uint16).tobytes())
    assert dataset_fingerprint(project / "data" / "noise256") != before  # rewritten val.bin


@pytest.mark.slow
def test_rewritten_data_is_refused_or_rerun(project: Path, prepared_data: Path) -> None:
    import shutil

    data = project / "my_data"
    data.mkdir()
    for f in ("train.bin", "val.bin", "meta.json"):
        shutil.copy(prepared_data / "classics-bpe8k" / f, data / f)
    grid = (project / "own.yaml").read_text().replace("classics-bpe8k", str(data))
    grid = grid.replace("    ./my_opt.py:AdamGamma: {lr: [3.0e-3], gamma: [0.5, 1.0]}\n", "")
    (project / "data.yaml").write_text(grid)
    common = ["--results", project / "results", "--launcher", "local"]
    _cli("submit", project / "data.yaml", *common)
    assert "skipped 1 with a result" in _cli("submit", project / "data.yaml", *common)
    val = np.fromfile(data / "val.bin", dtype=np.uint16)
    val[:100] = 0
    val.tofile(data / "val.bin")  # the same size: only the contents changed
    refused = _cli("submit", project / "data.yaml", *common, code=2)
    assert "have results computed with other data inputs" in refused
    assert "launching 1" in _cli("submit", project / "data.yaml", *common, "--stale", "rerun")


def test_an_optimizer_that_takes_matrices_leaves_the_rest_to_adamw(project, monkeypatch) -> None:
    from harness.optim.build import build_optimizer
    from harness.optim.registry import OPTIMIZERS
    from harness.optim.spec import Hyperparameter, OptimizerSpec
    from tests.optim_runs import make_model, make_run, train_steps

    monkeypatch.syspath_prepend(str(project))
    spec = OptimizerSpec(
        cls="my_opt:AdamGamma",
        hyperparameters=(Hyperparameter(name="gamma", type=float, default=0.5),),
        takes=("matrix",),
    )
    with OPTIMIZERS.temporarily("gamma_on_matrices", spec):
        run = make_run(optimizer="gamma_on_matrices")
        model = make_model(run)
        opt = build_optimizer(model, run)
        assert list(opt.parts) == ["main", "fallback"]
        assert [g["name"] for g in opt.parts["main"].param_groups] == ["matrix"]
        fallback = opt.parts["fallback"]
        assert type(fallback).__name__ == "AdamW"
        assert {g["name"] for g in fallback.param_groups} == {"embedding", "vector"}
        train_steps(model, opt, range(3))
        assert all("exp_avg_sq" in fallback.state[p] for p in model.embedding.parameters())


def test_code_that_is_not_the_class_or_object_expected_is_refused_naming_it() -> None:
    """What a reference imports is checked (an optimizer class, a click command), so a wrong
    reference is a one-line error, not a failure at the first ``step()``."""
    import click
    import torch

    from harness.core.errors import UserError
    from harness.core.registry import load_class, load_instance
    from harness.optim.spec import OptimizerSpec

    with pytest.raises(UserError, match=r"'os.path:join': <function join .* is not a class"):
        OptimizerSpec(cls="os.path:join").load()
    with pytest.raises(UserError, match=r"is not a subclass of torch\.optim\.optimizer\.Opt"):
        load_class("collections:OrderedDict", torch.optim.Optimizer)
    assert load_class("torch.optim:SGD", torch.optim.Optimizer) is torch.optim.SGD
    with pytest.raises(UserError, match=r"'os.path:join': .* is not a click\.core\.Command"):
        load_instance("os.path:join", click.Command)
