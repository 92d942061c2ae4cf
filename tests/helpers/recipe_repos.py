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


# A plain MLP beside it, an RNN-T joint network (linear, tanh, linear): its linears are probed
# as matmuls, its tanh by no probe (a "no" for it is earned only by its whole program).
MLP_RECIPE = '''\
"""My other recipe: a plain MLP, an RNN-T joint network (linear, tanh, linear). Exported
elsewhere."""
import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x):
        return self.down(torch.tanh(self.up(x)))


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


# A decoder of the transformer era, Llama-style: RMSNorm upcast to fp32, rotary embedding
# (rotate-half with slice, neg and cat), causal SDPA and a SwiGLU MLP, in fp16.
DECODER_RECIPE = '''\
"""My decoder recipe: a Llama-style block (RMSNorm, rotary, causal SDPA, SwiGLU) in fp16."""
import torch
from torch import nn
from torch.nn import functional as F


class RMSNorm(nn.Module):
    def __init__(self, size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Block(nn.Module):
    def __init__(self, width, heads, hidden):
        super().__init__()
        self.heads = heads
        self.input_norm = RMSNorm(width)
        self.q = nn.Linear(width, width, bias=False)
        self.k = nn.Linear(width, width, bias=False)
        self.v = nn.Linear(width, width, bias=False)
        self.o = nn.Linear(width, width, bias=False)
        self.post_norm = RMSNorm(width)
        self.gate = nn.Linear(width, hidden, bias=False)
        self.up = nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)

    def forward(self, x, cos, sin):
        b, t, c = x.shape
        h = self.input_norm(x)
        q, k, v = (
            p(h).view(b, t, self.heads, -1).transpose(1, 2) for p in (self.q, self.k, self.v)
        )
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, c))
        h = self.post_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Decoder(nn.Module):
    def __init__(self, width, heads, hidden, layers):
        super().__init__()
        self.layers = nn.ModuleList(Block(width, heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(width)

    def forward(self, x, cos, sin):
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.norm(x)


def trace_target(width, heads, hidden, length, layers=2):
    """The registry's builder contract: (module in the shipped dtype, example inputs)."""
    with torch.device("meta"):
        model = Decoder(width, heads, hidden, layers).eval()
    half = torch.float16
    rotary = torch.zeros(1, 1, length, width // heads, dtype=half)
    inputs = {"x": torch.zeros(1, length, width, dtype=half), "cos": rotary, "sin": rotary}
    return model.to(half), inputs
'''


def decoder_repo(tmp_path: Path) -> tuple[Path, str]:
    """A recipe repository holding `export/export_decoder.py` (DECODER_RECIPE), and its commit."""
    repo = tmp_path / "my-decoder"
    (repo / "export").mkdir(parents=True)
    (repo / "export" / "export_decoder.py").write_text(DECODER_RECIPE)
    git(repo, "init", "-q")
    return repo, commit_all(repo, "decoder")


_DECODER = """\
[bundles.decoder]
files = ["decoder.aimodel"]
dtype = "float16"

[bundles.decoder.exporter]
converter = "0.4.1"
core = "1.0.0b2"
source = "our release notes"

[bundles.decoder.pipeline]
grad = "no_grad"

[bundles.decoder.recipe]
repository = "example/my-decoder"
commit = "{commit}"

[bundles.decoder.recipe.builder]
path = "export/export_decoder.py"
call = "trace_target"
kwargs = {{ width = 64, heads = 4, hidden = 128, length = 16 }}
"""


def decoder_registry(commit: str) -> str:
    """The registry text of the bundle "decoder" of `decoder_repo`, at `commit`."""
    return _DECODER.format(commit=commit)
