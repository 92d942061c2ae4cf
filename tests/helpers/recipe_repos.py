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


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def recipe_repo(tmp_path: Path, scale: float = 4.0) -> tuple[Path, str]:
    repo = tmp_path / "my-recipes"
    (repo / "export").mkdir(parents=True)
    (repo / "export" / "export_mine.py").write_text(RECIPE.format(scale=scale))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "recipe")
    return repo, git(repo, "rev-parse", "HEAD")
