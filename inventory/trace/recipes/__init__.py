"""Tracing a recipe's own module from a checkout of its repository (`trace --recipe-root`).

The registry names the builder in the recipe repository as data (`[bundles.X.recipe.builder]`):
the file (`path`, relative to the repository root) or module (`module`, importable from the root),
the entry point (`call`) and its keyword arguments (`kwargs`). Nothing of a recipe is copied into
this project: it is imported from the user's checkout, in the trace subprocess only.

Two ways to turn that entry point into a trace target:

* **The contract** (a user's own bundle; no `adapter`): `call(**kwargs)` returns
  `(module, inputs)`: the `torch.nn.Module` the recipe exports, already in the bundle's dtype, and
  its example inputs as a dict of keyword arguments (name -> tensor), the way coreai-models'
  `export_to_coreai` takes them. Build it without loading weights: on the meta device (it is then
  moved to uninitialised CPU storage, so the export sees the CPU kernels the recipe saw) or with
  random weights.
* **An adapter** (`adapter = "inventory.trace.recipes.<bundle>:build"`): project code that calls
  the recipe's own names and does what the recipe needs to be built offline (a placeholder cache
  entry, a module the recipe downloads, an `__init__` that loads a gated checkpoint). The five
  shipped bundles need one each; every adapter says what it does instead of the recipe.

The registry decides which module may be imported: `path`/`module` must resolve inside the recipe
root, and an `adapter` must be a module of this package.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inventory.errors import InventoryError
from inventory.trace import trust

ADAPTERS_PACKAGE = __name__  # inventory.trace.recipes
COMMIT_FILE = ".commit"
TORCH_DTYPES = ("float32", "float16", "bfloat16", "int64", "int32", "int8", "bool")


class RecipeError(InventoryError):
    """The recipe cannot be imported or built as the registry says; one line for the user."""


# what `[bundles.X.recipe.builder]` may hold (docs/reference/registry.md lists each)
BUILDER_KEYS = (
    "call",
    "path",
    "module",
    "kwargs",
    "adapter",
    "search_path",
    "inputs",
    "packages",
    "cannot_trace_offline",
)


@dataclass(frozen=True)
class Builder:
    """`[bundles.X.recipe.builder]`: where the recipe's module builder is, and how to call it."""

    call: str
    path: str = ""  # a file of the recipe repository, relative to its root
    module: str = ""  # or a module importable with the root on sys.path
    kwargs: dict[str, Any] = field(default_factory=dict)
    adapter: str = ""  # module:function in this package, or "" for the contract
    # folders of the repository put on sys.path before the import (the recipe's own imports)
    search_path: tuple[str, ...] = ()
    # name -> {shape, dtype, fill}: the recipe's example inputs, where the registry states them
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    # distributions (beside torch) whose versions the trace records
    packages: tuple[str, ...] = ()
    # "" when the recipe traces offline, else why it cannot (then no trace is attempted)
    offline: str = ""

    @classmethod
    def from_table(cls, table: dict[str, Any]) -> Builder:
        unknown = set(table) - set(BUILDER_KEYS)
        if unknown:
            raise RecipeError(f"recipe.builder has unknown keys: {', '.join(sorted(unknown))}")
        if not table.get("call"):
            raise RecipeError("recipe.builder lacks 'call' (the entry point)")
        if bool(table.get("path")) == bool(table.get("module")):
            raise RecipeError(
                "recipe.builder needs exactly one of 'path' (a file of the recipe "
                "repository) or 'module'"
            )
        return cls(
            call=str(table["call"]),
            path=str(table.get("path", "")),
            module=str(table.get("module", "")),
            kwargs=dict(table.get("kwargs", {})),
            adapter=str(table.get("adapter", "")),
            search_path=tuple(str(p) for p in table.get("search_path", [])),
            inputs=dict(table.get("inputs", {})),
            packages=tuple(str(p) for p in table.get("packages", [])),
            offline=str(table.get("cannot_trace_offline", "")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "path": self.path,
            "module": self.module,
            "kwargs": self.kwargs,
            "adapter": self.adapter,
            "search_path": list(self.search_path),
            "inputs": self.inputs,
            "packages": list(self.packages),
            "cannot_trace_offline": self.offline,
        }

    @property
    def file(self) -> str:
        """The recipe file, relative to the repository root."""
        if self.path:
            return self.path
        return self.module.replace(".", "/") + ".py"

    def described(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"{self.file}: {self.call}({args})"


def inside(root: Path, relative: str, what: str) -> Path:
    """`relative` resolved under `root`; a path that leaves the root is refused."""
    if not relative or Path(relative).is_absolute():
        raise RecipeError(f"{what} {relative!r} must be a path relative to the recipe root")
    try:
        resolved = (root / relative).resolve()
        top = root.resolve()
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError for a symlink loop
        raise RecipeError(
            f"{what} {relative!r}: a symlink loop under the recipe root {root}"
        ) from None
    if not resolved.is_relative_to(top):
        raise RecipeError(f"{what} {relative!r} leaves the recipe root {root}")
    return resolved


def check(builder: Builder, root: Path, allow_code: bool = False) -> None:
    """Refuse, before anything is imported, a builder that names code outside the recipe root or
    an adapter outside this package (unless `--allow-code`, see `inventory.trace.trust`)."""
    if not root.is_dir():
        raise RecipeError(f"--recipe-root {root}: not a folder")
    if builder.adapter:
        try:
            trust.check_adapter(builder.adapter, allow_code)
        except trust.UntrustedCode as exc:
            raise RecipeError(str(exc)) from None
    for folder in builder.search_path:
        inside(root, folder, "recipe.builder.search_path entry")
    if builder.path:
        file = inside(root, builder.path, "recipe.builder.path")
    else:
        if not all(part.isidentifier() for part in builder.module.split(".")):
            raise RecipeError(f"recipe.builder.module {builder.module!r} is not a module name")
        file = inside(root, builder.file, "recipe.builder.module")
        if not file.is_file():
            file = inside(
                root, builder.module.replace(".", "/") + "/__init__.py", "recipe.builder.module"
            )
    if not file.is_file():
        raise RecipeError(
            f"the registry's recipe file {builder.file} is not in {root} "
            f"(is --recipe-root the repository's checkout?)"
        )


@dataclass(frozen=True)
class Checkout:
    """Which commit of the recipe repository a trace imported."""

    commit: str
    how: str  # "git rev-parse HEAD", "the checkout's .commit file", or why it is unknown
    modified: bool = False


def checkout(root: Path) -> Checkout:
    """The checkout's commit: `git rev-parse` where git works, else a `.commit` file (a `git
    archive` of a fetched mirror has no `.git`; `git worktree` fails on mirrors with absent
    blobs)."""
    from inventory.gitrepo import run_git

    try:
        proc = run_git(root, "rev-parse", "--show-toplevel", "HEAD", timeout=30)
        top, _, head = proc.stdout.strip().partition("\n")
        if proc.returncode == 0 and Path(top).resolve() == root.resolve() and head:
            status = run_git(
                root,
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--ignore-submodules=all",
                timeout=60,
            )
            return Checkout(head.strip(), "git rev-parse HEAD", bool(status.stdout.strip()))
    except (OSError, subprocess.TimeoutExpired):
        pass
    marker = root / COMMIT_FILE
    if marker.is_file():
        commit = marker.read_text().strip().split()[0] if marker.read_text().strip() else ""
        if commit:
            return Checkout(commit, f"the checkout's {COMMIT_FILE} file")
    return Checkout("unknown", f"not a git work tree and no {COMMIT_FILE} file")


# ---- inside the trace subprocess ---------------------------------------------------------------


@contextmanager
def on_path(*folders: Path) -> Iterator[None]:
    added = [str(f) for f in folders if str(f) not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for folder in added:
            if folder in sys.path:
                sys.path.remove(folder)


def load(root: Path, builder: Builder) -> Any:
    """The recipe's module, imported from the checkout (its own folder and the registry's
    search_path on sys.path, so its sibling imports resolve as when it is run)."""
    folders = [inside(root, p, "search_path entry") for p in builder.search_path]
    if builder.module:
        with on_path(root, *folders):
            try:
                return importlib.import_module(builder.module)
            except Exception as exc:  # noqa: BLE001 - a recipe's import error, one line
                raise RecipeError(
                    f"importing {builder.module} from {root} failed: {type(exc).__name__}: {exc}"
                ) from exc
    file = inside(root, builder.path, "recipe.builder.path")
    name = file.stem
    sys.path[:0] = [str(file.parent)] + [str(f) for f in folders]  # kept: the recipe may import
    spec = importlib.util.spec_from_file_location(name, file)  # lazily, later
    if spec is None or spec.loader is None:
        raise RecipeError(f"{file} is not importable")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001
        raise RecipeError(f"importing {builder.path} failed: {type(exc).__name__}: {exc}") from exc
    return module


def entry_point(root: Path, builder: Builder) -> Any:
    module = load(root, builder)
    try:
        return getattr(module, builder.call)
    except AttributeError:
        raise RecipeError(f"{builder.file} has no {builder.call!r}") from None


def example_inputs(builder: Builder, device: str = "cpu") -> dict[str, Any]:
    """The recipe's example inputs as the registry states them (`inputs`): zeros, ones, or the
    listed values."""
    import torch

    out = {}
    for name, spec in builder.inputs.items():
        dtype = getattr(torch, spec.get("dtype", "float32"))
        fill = spec.get("fill", "zeros")
        if isinstance(fill, list):
            out[name] = torch.tensor(fill, dtype=dtype, device=device).reshape(spec["shape"])
        elif fill in ("zeros", "ones"):
            out[name] = getattr(torch, fill)(*spec["shape"], dtype=dtype, device=device)
        else:
            raise RecipeError(f"input {name}: fill must be zeros, ones or a list of values")
    return out


class _Values:
    """Whether a module built on the meta device must also get values (verify runs it; a trace
    never reads them). Set for one build by `with_values()`, in the build subprocess."""

    wanted = False


@contextmanager
def with_values() -> Iterator[None]:
    """Inside: `on_cpu` gives a meta-built module values (`materialise`), for `inventory verify`,
    which runs what it builds."""
    _Values.wanted = True
    try:
        yield
    finally:
        _Values.wanted = False


def materialise(module: Any, meta: list[str]) -> None:
    """Values for the tensors `meta` names, which were built on the meta device and now hold
    uninitialised storage: each submodule's own `reset_parameters()` (the values its __init__
    would have given, under the caller's seed). A tensor no reset reaches (a buffer computed in
    __init__, a bare Parameter) cannot be given its values here: refused in one line, never
    run with whatever the storage held."""
    import torch

    tensors = dict([*module.named_parameters(), *module.named_buffers()])
    with torch.no_grad():
        for name in meta:  # a marker no reset leaves behind
            t = tensors[name]
            if t.is_floating_point() or t.is_complex():
                t.fill_(float("nan"))
            elif t.dtype != torch.bool:
                t.fill_(torch.iinfo(t.dtype).min)
        for sub in module.modules():
            reset = getattr(sub, "reset_parameters", None)
            if callable(reset):
                reset()
    left = [
        n
        for n in meta
        if tensors[n].numel()
        and (
            tensors[n].dtype == torch.bool
            or bool(
                (
                    tensors[n].isnan()
                    if tensors[n].is_floating_point() or tensors[n].is_complex()
                    else tensors[n] == torch.iinfo(tensors[n].dtype).min
                ).all()
            )
        )
    ]
    if left:
        raise RecipeError(
            f"{len(left)} tensor(s) built on the meta device get no values from "
            f"any reset_parameters() ({', '.join(left[:3])}"
            f"{' ...' if len(left) > 3 else ''}): build the module on the CPU "
            "(random weights are fine) for it to be run"
        )


def on_cpu(module: Any, inputs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A module built on the meta device, moved to uninitialised CPU storage (no init cost), and
    its inputs on the CPU: the recipes export CPU tensors, and some kernels' meta versions give
    other strides (extra clones in the graph). Values are never read: torch.export traces with
    fake tensors (`with_values()`: they are, and the module gets them, `materialise`)."""
    import torch

    meta = [n for n, t in [*module.named_parameters(), *module.named_buffers()] if t.is_meta]
    if meta:
        module = module.to_empty(device="cpu")
        if _Values.wanted:
            materialise(module, meta)
    cpu = {
        k: (torch.zeros_like(v, device="cpu") if isinstance(v, torch.Tensor) and v.is_meta else v)
        for k, v in inputs.items()
    }
    return module, cpu


def contract(root: Path, builder: Builder, dtype: str) -> Any:
    """The contract: `call(**kwargs) -> (module, inputs)`; the trace target it gives."""
    import torch

    from inventory.trace.targets import TraceTarget

    made = entry_point(root, builder)(**builder.kwargs)
    if not (
        isinstance(made, tuple)
        and len(made) == 2
        and isinstance(made[0], torch.nn.Module)
        and isinstance(made[1], dict)
    ):
        raise RecipeError(
            f"{builder.described()} must return (module, inputs): a torch.nn."
            f"Module and a dict of example inputs, not {type(made).__name__}"
        )
    module, inputs = on_cpu(made[0].eval(), {**example_inputs(builder), **made[1]})
    notes = (
        f"The recipe's own module: {builder.described()} from the checkout, called as the "
        "registry's builder contract says (module and example inputs), moved to "
        "uninitialised CPU storage if built on meta."
    )
    return TraceTarget(
        module=module, args=(), kwargs=inputs, dtype=dtype, packages=builder.packages, notes=notes
    )


def target(recipe: dict[str, Any], allow_code: bool) -> Any:
    """The trace target a recipe's builder makes (`recipe`: the checkout's `root`, the
    `builder` table, the bundle's `dtype`): the contract, or the adapter the registry names,
    each checked first (the file inside the root, an adapter of this package unless
    `allow_code`). In the trace subprocess, and in verify's build of a recipe-traced bundle."""
    root = Path(recipe["root"])
    builder = Builder.from_table(recipe["builder"])
    check(builder, root, allow_code)
    if not builder.adapter:
        return contract(root, builder, recipe["dtype"])
    mod_name, _, fn_name = builder.adapter.partition(":")
    return getattr(importlib.import_module(mod_name), fn_name or "build")(
        root, builder, recipe["dtype"]
    )
