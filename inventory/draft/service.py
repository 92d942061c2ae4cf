"""`inventory draft --from A --to B`: the fix records of every release step from A to B, drafted
from what the instruments measure (`inventory.draft.observe`, grouped by
`inventory.draft.records`), as a fix database `--fixes` reads: the base database's records of
the releases up to A, then the drafted ones."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from inventory.attribution import release_steps
from inventory.draft.against import Comparison, compare
from inventory.draft.observe import observe
from inventory.draft.records import StepDraft, group
from inventory.errors import UsageError
from inventory.gitrepo import run_git
from inventory.policy import Policy
from inventory.registry import Bundle
from inventory.version import version
from oracle.catalog import Catalog, Regime, load_fixes, version_key
from oracle.infra import Progress, portable, read_toml


@dataclass(frozen=True)
class Draft:
    old: str
    new: str
    steps: tuple[StepDraft, ...]
    base: tuple[dict[str, Any], ...]  # the base database's records up to `old`, as tables
    base_source: str  # the base database, as the user named it
    repo: str  # the repository bisected, by name ("" without history)
    output: str | None = None  # the file the draft was written to (None: printed)
    against: Comparison | None = None

    @property
    def records(self) -> tuple[Any, ...]:
        return tuple(r for s in self.steps for r in s.records)

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(n for s in self.steps for n in s.notes)


def _forge_url(repo_path: Path) -> str:
    """The repository's address on GitHub (its `origin` remote), where its pull requests are
    `<url>/pull/N`; "" for another remote or none."""
    proc = run_git(repo_path, "remote", "get-url", "origin")
    url = proc.stdout.strip().removesuffix("/").removesuffix(".git")
    if proc.returncode != 0 or "github.com" not in url:
        return ""
    owner_name = url.split("github.com", 1)[1].lstrip(":/")
    return f"https://github.com/{owner_name}" if owner_name.count("/") == 1 else ""


def _base(path: Path, old: str) -> tuple[dict[str, Any], ...]:
    """The base database's records shipping in `old` or before, as written (checked first)."""
    from oracle.catalog import FixError

    load_fixes(path)
    data = read_toml(path, FixError)
    return tuple(
        t
        for t in data.get("fix", [])
        if version_key(str(t.get("ships_in", ""))) <= version_key(old)
    )


def draft(
    old: str,
    new: str,
    library: list[Regime],
    bundles: list[Bundle],
    catalog: Catalog,
    policy: Policy,
    base: Path,
    repo_path: Path | None = None,
    allow_code: bool = False,
    verify: bool = False,
    use_cache: bool = True,
    only: frozenset[str] = frozenset(),
    against: Path | None = None,
    progress: Progress = lambda _: None,
) -> Draft:
    catalog.release(old)
    catalog.release(new)
    if version_key(new) <= version_key(old):
        raise UsageError(f"--to {new} must be a later release than --from {old}")
    if repo_path is not None and not allow_code:
        raise UsageError(
            "draft --repo converts the probes with the code of each commit of the "
            "repository (inventory bisect): refused without --allow-code"
        )
    curated = load_fixes(against) if against is not None else None
    kept = _base(base, old)
    url = _forge_url(repo_path) if repo_path is not None else ""
    steps = []
    for a, b in release_steps(catalog, old, new):
        progress(f"drafting {a} -> {b}")
        seen = observe(
            a,
            b,
            library,
            bundles,
            catalog,
            policy,
            repo_path,
            allow_code,
            verify,
            use_cache,
            only,
            progress,
        )
        steps.append(group(seen, url))
    repo = next((s.observed.repo for s in steps if s.observed.repo), "")
    comparison = compare(tuple(steps), curated, str(against)) if curated is not None else None
    return Draft(old, new, tuple(steps), kept, str(base), repo, None, comparison)


def text(d: Draft) -> str:
    """The draft as a fix database: what `--fixes` reads."""
    history = (
        f"bisected over {d.repo}'s history (inventory bisect), each record one pull "
        "request's commit"
        if d.repo
        else "no history was available (no --repo): each lowering record groups the changes "
        "of one construct at the lowering stage, named draft-<from>-<to>-<construct>, "
        "not a pull request"
    )
    head = [
        f"# Fix records drafted by `inventory draft --from {d.old} --to {d.new}` "
        f"(inventory {version()}).",
        f"# Records shipping in {d.old} or before: copied from {_name(d.base_source)}.",
        f"# Records of {', '.join(s.observed.label for s in d.steps)}: drafted from what the "
        "instruments measured (the library and registry sweeps, the whole-program regions "
        "of stored checks, the load checks of the asset probe), " + history + ".",
        '# checked = "drafted": read against no upstream diff yet. [fix.draft] holds what '
        "was measured; evidence names the stored results (`$INVENTORY_STORE/results/ID`).",
        "",
    ]
    out = "\n".join(head) + "\n"
    if d.base:
        out += tomli_w.dumps({"fix": [portable(t) for t in d.base]}) + "\n"
    for s in d.steps:
        out += f"# ---- drafted: {s.observed.label}\n\n"
        if s.records:
            out += tomli_w.dumps({"fix": [portable(r.table()) for r in s.records]}) + "\n"
        else:
            out += "# (no change seen in this step)\n\n"
        for note in s.notes:
            out += f"# {portable(note)}\n"
    return out


def _name(path: str) -> str:
    return str(portable(path))


def write(d: Draft, output: Path) -> Draft:
    from oracle.infra import write_text_atomic

    write_text_atomic(output, text(d))
    return Draft(d.old, d.new, d.steps, d.base, d.base_source, d.repo, str(output), d.against)
