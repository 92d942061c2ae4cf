"""The commands an answer tells the user to run (`inventory scan ...`, `inventory repair ...`),
runnable as printed in a POSIX shell, from the folder that holds the shipped bundles.

File names come from the registry (`[bundles.X] files`). A name the registry states with a
placeholder (`lfm_audio_encoder_adapter_float16_L<L>.aimodel`: the sequence length is not
published) becomes a shell glob (`..._L*.aimodel`), which the shell expands to the file shipped;
every other character is quoted where the shell would read it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inventory.registry import Bundle

_PLACEHOLDER = re.compile(r"<[^<>]+>")
# The repaired copy sits beside the original under a name no registry glob of it matches.
REPAIRED_PREFIX = "repaired-"


def shell_path(name: str) -> str:
    """A registry file name as a shell word: quoted, its placeholders a `*` glob."""
    return "*".join(shlex.quote(part) if part else "" for part in _PLACEHOLDER.split(name))


def has_glob(name: str) -> bool:
    return _PLACEHOLDER.search(name) is not None


def scan_command(files: Sequence[str]) -> str:
    return "inventory scan " + " ".join(shell_path(f) for f in files)


def _repaired(name: str) -> str:
    folder, _, base = name.rpartition("/")
    return f"{folder}/{REPAIRED_PREFIX}{base}" if folder else f"{REPAIRED_PREFIX}{base}"


def repair_command(files: Sequence[str]) -> str:
    """`inventory repair` for every file of a bundle, each written beside its original as
    `repaired-<name>`: one command for one named file, else a loop (a glob or several files)."""
    if len(files) == 1 and not has_glob(files[0]):
        return f"inventory repair {shell_path(files[0])} -o {shlex.quote(_repaired(files[0]))}"
    words = " ".join(shell_path(f) for f in files)
    return (
        f'for f in {words}; do inventory repair "$f" -o '
        f'"$(dirname "$f")/{REPAIRED_PREFIX}$(basename "$f")"; done'
    )


def weights_command(fix: str, bundle: str, target: str | None = None) -> str:
    """The `affected` run that decides a record's value condition from the bundle's own
    checkpoint: `plan` cannot (it takes no checkpoint), so its hint names this command;
    `target` is the release the answer was given for, when not the record's own."""
    to = f" --to {shlex.quote(target)}" if target is not None else ""
    name = shlex.quote(bundle)
    return (
        f"inventory affected --fix {shlex.quote(fix)}{to} --bundle {name} "
        f"--weights {shlex.quote(bundle + '=')}CHECKPOINT.safetensors"
    )


def verify_command(bundle: str, target: str) -> str:
    """The whole-program check of a bundle up to `target`, stored for every later answer."""
    return f"inventory verify {shlex.quote(bundle)} --to {shlex.quote(target)}"


def trace_command(bundle: Bundle) -> str:
    """The trace that records a bundle's instances and op census in the registry: from its
    recipe's checkout when the registry's trace came from the recipe."""
    name = shlex.quote(bundle.name)
    if bundle.trace.get("origin") == "recipe":
        return f"inventory trace {name} --recipe-root CHECKOUT --write"
    return f"inventory trace {name} --write"
