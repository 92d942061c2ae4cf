"""A user's own recipe repository, made in a test: a git repository holding one export recipe,
as `inventory trace --recipe-root` reads it."""

from __future__ import annotations

import subprocess
from pathlib import Path

RECIPE = '''\
"""My recipe: a depthwise conv, an fp16 batch norm, a scaled softmax. Exported elsewhere."""
import torch
from torch import nn

SCALE = {scale}


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.dw = nn.Conv1d(channels, channels, 5, padding=2, groups=channels, bias=False)
        self.norm = nn.BatchNorm1d(channels)

    def forward(self, x):
        return torch.softmax(self.norm(self.dw(x)) / SCALE, dim=-1)


class Model(nn.Module):
    def __init__(self, channels, blocks):
        super().__init__()
        self.blocks = nn.ModuleList([Block(channels) for _ in range(blocks)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def trace_target(channels, length, blocks=2):
    """The registry's builder contract: (module in the shipped dtype, example inputs)."""
    with torch.device("meta"):
        model = Model(channels, blocks).eval()
    return model.to(torch.float16), {{"x": torch.zeros(1, channels, length, dtype=torch.float16)}}
'''


# A plain MLP beside it, linear and GELU: its linears are probed as matmuls, its GELU by no
# probe (a "no" for it is earned only by its whole program).
MLP_RECIPE = '''\
"""My other recipe: a plain MLP, linear and GELU. Exported elsewhere."""
import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x):
        return self.down(nn.functional.gelu(self.up(x)))


def trace_target(width, hidden):
    """The registry's builder contract: (module in the shipped dtype, example inputs)."""
    with torch.device("meta"):
        model = Mlp(width, hidden).eval()
    return model, {"x": torch.zeros(2, width)}
'''


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def recipe_repo(tmp_path: Path, scale: float = 4.0) -> tuple[Path, str]:
    repo = tmp_path / "my-recipes"
    (repo / "export").mkdir(parents=True)
    (repo / "export" / "export_mine.py").write_text(RECIPE.format(scale=scale))
    (repo / "export" / "export_mlp.py").write_text(MLP_RECIPE)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "recipe")
    return repo, git(repo, "rev-parse", "HEAD")


# The same recipe with its block in a module of its own that the recipe imports (and a package
# helper it reaches through a relative import): what a builder's source closure holds.
SPLIT_RECIPE = '''\
"""My recipe, its block imported from a sibling module."""
import torch
from torch import nn

from layers import Block


class Model(nn.Module):
    def __init__(self, channels, blocks):
        super().__init__()
        self.blocks = nn.ModuleList([Block(channels) for _ in range(blocks)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def trace_target(channels, length, blocks=2):
    """The registry's builder contract: (module in the shipped dtype, example inputs)."""
    with torch.device("meta"):
        model = Model(channels, blocks).eval()
    return model.to(torch.float16), {"x": torch.zeros(1, channels, length, dtype=torch.float16)}
'''

LAYERS = '''\
"""The recipe's block: a depthwise conv, an fp16 batch norm, a scaled softmax."""
import torch
from torch import nn

SCALE = {scale}


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.dw = nn.Conv1d(channels, channels, 5, padding=2, groups=channels, bias=False)
        self.norm = nn.BatchNorm1d(channels)

    def forward(self, x):
        return torch.softmax(self.norm(self.dw(x)) / SCALE, dim=-1)
'''


def split_recipe_repo(tmp_path: Path, scale: float = 4.0) -> tuple[Path, str]:
    """A recipe repository whose builder (`export/export_mine.py`) imports `export/layers.py`,
    beside files it does not import (a README, another script)."""
    repo = tmp_path / "split-recipes"
    (repo / "export").mkdir(parents=True)
    (repo / "export" / "export_mine.py").write_text(SPLIT_RECIPE)
    (repo / "export" / "layers.py").write_text(LAYERS.format(scale=scale))
    (repo / "export" / "export_other.py").write_text("import torch\n")
    (repo / "README.md").write_text("our recipes\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "recipe")
    return repo, git(repo, "rev-parse", "HEAD")


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


# A user's registry entry for the recipe of `recipe_repo` (or `split_recipe_repo`): the bundle
# "mine", its builder called as the trace calls it; `extra` appended (a verify form, a stand-in).
_MINE = """\
[bundles.mine]
files = ["mine_float16.aimodel"]
dtype = "float16"

[bundles.mine.exporter]
converter = "0.4.1"
core = "1.0.0b2"
source = "our release notes"
{pipeline}
[bundles.mine.recipe]
repository = "example/my-recipes"
commit = "{commit}"

[bundles.mine.recipe.builder]
path = "{path}"
call = "trace_target"
kwargs = {{ channels = 8, length = 32 }}
{extra}"""


def mine_registry(
    commit: str, path: str = "export/export_mine.py", extra: str = "", pipeline: bool = True
) -> str:
    """The registry text of the bundle "mine" at `commit` of its recipe repository."""
    grad = '\n[bundles.mine.pipeline]\ngrad = "no_grad"\n' if pipeline else ""
    return _MINE.format(commit=commit, path=path, extra=extra, pipeline=grad)


_MLP = """\
[bundles.{name}]
files = ["{name}.aimodel"]
dtype = "float32"

[bundles.{name}.exporter]
converter = "{converter}"
core = "{core}"
source = "our release notes"

[bundles.{name}.pipeline]
grad = "no_grad"

[bundles.{name}.recipe]
repository = "example/my-recipes"
commit = "{commit}"

[bundles.{name}.recipe.builder]
path = "export/export_mlp.py"
call = "trace_target"
kwargs = {{ width = 8, hidden = 16 }}
"""


def mlp_registry(
    commit: str, name: str = "mlp", converter: str = "0.4.1", core: str = "1.0.0b2"
) -> str:
    """The registry text of the plain MLP of `recipe_repo` (`export/export_mlp.py`), registered
    by its builder, exported with `converter` (and its `core`)."""
    return _MLP.format(name=name, commit=commit, converter=converter, core=core)
