"""A hostile round over the surfaces that run or read foreign things: source trees
(`envs build --from-source`), repositories (`bisect`), trace builders, stores and settings,
input and draft files, release catalogs and discovered wheels (`--catalog`, `envs build`,
`envs discover`), bundles (`scan`, `repair`), `--json` under noise, and the command line's
own inputs and outputs (`-o`, repeated options, formats, typos). Every case is built
here, in a scratch folder (never the repository), run through the real CLI as a process, and
judged by the same rules: an exit code of 0-3 or 5 (4 is the tool's own bug), no traceback, a
refusal in one line, no marker file written by foreign code, stdout one JSON document under
`--json`, no process left behind, within the case's bound; and where a case's markdown names
values from data (`markdown/`), each rendered as its literal text, with no tag, comment or
link of its own.

    scripts/hostile-round OUT_DIR [--only PREFIX] [--slow | --slow-only]

Writes OUT_DIR/results.json (one record per case) and prints a summary. `--slow` adds the cases
that build or convert (a source environment, bisect, trace builders); they need the converter
environments of 0.4.0-0.4.2 in INVENTORY_CACHE. The Ray refusals are
the `ray/` cases; Ray under faults (an agent, a node or the head lost, Ctrl-C) is
tests/oracle/executors/test_executor_ray.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
_LONGEST_LINE = 2000  # characters of one line on stderr (a bounded message is under 1000)
FIXES = ROOT / "oracle" / "catalog" / "fixes.toml"


@dataclass
class Case:
    name: str
    args: list[str]
    setup: Callable[[Path], dict[str, str]] = lambda _: {}  # builds inputs, returns env
    exits: tuple[int, ...] = (2,)  # what the case may end with
    bound: float = 120.0  # seconds
    slow: bool = False
    json: bool = False
    markers: list[str] = field(default_factory=list)  # files foreign code would write
    # with consent (--allow-code) the converter imports the tree's package: its `init` and
    # `version` lines are consented; a build step's (setup, backend, shell) never is
    consented: bool = False
    # values from data the case's markdown (stdout) must show as their literal text, rendered,
    # with no tag, comment or link of their own
    literal: list[str] = field(default_factory=list)


def _marker_code(marker: Path, what: str) -> str:
    return f"open({str(marker)!r}, 'a').write({what!r} + '\\n')\n"


def tree(root: Path, marker: Path, version: str = "0.4.1") -> Path:
    """A coreai-torch tree whose every build and import step writes `marker`."""
    pkg = root / "coreai_torch"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(_marker_code(marker, "init"))
    (pkg / "__version__.py").write_text(
        _marker_code(marker, "version") + f'__version__ = "{version}"\n'
    )
    (root / "setup.py").write_text(
        _marker_code(marker, "setup") + f"import os\nos.system('touch {marker}.shell')\n"
    )
    (root / "backend.py").write_text(_marker_code(marker, "backend"))
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )
    return root


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def sign_head(repo: Path) -> None:
    """HEAD replaced by the same commit with a (never valid) signature: a `git log` that honours
    `log.showSignature` runs `gpg.program` on it."""
    text = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "commit", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    head, _, message = text.partition("\n\n")
    signature = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEz\n -----END PGP SIGNATURE-----"
    signed = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-t", "commit", "-w", "--stdin"],
        input=f"{head}\n{signature}\n\n{message}",
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    git(repo, "update-ref", "HEAD", signed)


def repo_of(
    folder: Path,
    marker: Path,
    mutate: Callable[[Path], None] = lambda _: None,
    configure: Callable[[Path], None] = lambda _: None,
) -> Path:
    repo = tree(folder / "repo", marker)
    git(repo, "init", "-q", "-b", "main")
    mutate(repo)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "release")
    git(repo, "tag", "v0.4.1")
    version = repo / "coreai_torch" / "__version__.py"
    version.unlink()  # it may be a symlink the case made
    version.write_text('__version__ = "0.4.2"\n')
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "bump (#64)")
    configure(repo)
    return repo


def source_cases() -> list[Case]:
    out = []
    placements = {
        "link-etc": lambda pkg: (pkg / "etc").symlink_to("/etc"),
        "link-etc-passwd": lambda pkg: (pkg / "p.py").symlink_to("/etc/passwd"),
        "link-up": lambda pkg: (pkg / "up.py").symlink_to("../../../../../etc/hostname"),
        "link-dev-zero-version": lambda pkg: (
            (pkg / "__version__.py").unlink(),
            (pkg / "__version__.py").symlink_to("/dev/zero"),
        ),
        "link-dev-zero-file": lambda pkg: (pkg / "z.py").symlink_to("/dev/zero"),
        "link-loop": lambda pkg: ((pkg / "a").symlink_to("b"), (pkg / "b").symlink_to("a")),
        "link-self-dir": lambda pkg: (pkg / "me").symlink_to("."),
        "link-parent-dir": lambda pkg: (pkg / "parent").symlink_to(".."),
        "link-broken": lambda pkg: (pkg / "gone.py").symlink_to("nowhere.py"),
        "fifo-version": lambda pkg: (
            (pkg / "__version__.py").unlink(),
            os.mkfifo(pkg / "__version__.py"),
        ),
        "fifo-file": lambda pkg: os.mkfifo(pkg / "pipe.py"),
        "fifo-pyproject": lambda pkg: (
            (pkg.parent / "pyproject.toml").unlink(),
            os.mkfifo(pkg.parent / "pyproject.toml"),
        ),
        "socket-file": lambda pkg: _socket(pkg / "s.sock"),
        "huge-file": lambda pkg: _sparse(pkg / "w.bin", 65 * 1024 * 1024),
        "huge-version": lambda pkg: _sparse(pkg / "__version__.py", 2 * 1024 * 1024),
        "binary-version": lambda pkg: (pkg / "__version__.py").write_bytes(b"\xff\xfe\x00"),
        "no-version": lambda pkg: (pkg / "__version__.py").write_text("# nothing\n"),
        "unknown-version": lambda pkg: (pkg / "__version__.py").write_text(
            '__version__ = "9.9.9"\n'
        ),
        "version-path": lambda pkg: (pkg / "__version__.py").write_text(
            '__version__ = "../../../etc"\n'
        ),
        "native-pyx": lambda pkg: (pkg / "fast.pyx").write_text("def f(): pass\n"),
        "native-so": lambda pkg: (pkg / "fast.so").write_bytes(b"\x7fELF"),
        "package-is-file": lambda pkg: (_rm(pkg), pkg.write_text("x")),
        "package-link-out": lambda pkg: (_rm(pkg), pkg.symlink_to("/etc")),
        "no-package": lambda pkg: _rm(pkg),
        "pyproject-link-out": lambda pkg: (
            (pkg.parent / "pyproject.toml").unlink(),
            (pkg.parent / "pyproject.toml").symlink_to("/etc/passwd"),
        ),
        "many-files": lambda pkg: _many(pkg, 20_001),
    }
    for name, place in placements.items():

        def setup(folder: Path, place: Callable = place) -> dict[str, str]:
            t = tree(folder / "tree", folder / "ran")
            place(t / "coreai_torch")
            return {}

        out.append(
            Case(
                f"source/{name}",
                ["envs", "build", "--from-source", "{tree}"],
                setup,
                markers=["ran", "ran.shell"],
            )
        )
    out.append(
        Case(
            "source/clean-tree-builds",
            ["envs", "build", "--from-source", "{tree}"],
            lambda f: (tree(f / "tree", f / "ran"), {})[1],
            exits=(0,),
            slow=True,
            markers=["ran", "ran.shell"],
        )
    )
    return out


def _rm(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def _sparse(path: Path, size: int) -> None:
    if path.exists():
        path.unlink()
    with open(path, "wb") as handle:
        handle.truncate(size)


def _many(pkg: Path, n: int) -> None:
    many = pkg / "many"
    many.mkdir()
    for i in range(n):
        (many / f"m{i}.py").write_text("")


def _socket(path: Path) -> None:
    import socket

    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))


def _env(var: str, value: str) -> Callable[[Path], dict[str, str]]:
    """A case's setup that only sets one variable."""
    return lambda _folder: {var: value}


def git_cases() -> list[Case]:
    def evil_config(marker: Path) -> Callable[[Path], None]:
        def configure(repo: Path) -> None:
            sign_head(repo)  # before the hooks: its update-ref would run one
            script = repo.parent / "evil.sh"
            script.write_text(f'#!/bin/sh\necho "$0" >> {marker}\ncat\n')
            script.chmod(0o755)
            hooks = repo.parent / "hooks"
            hooks.mkdir(exist_ok=True)
            for hook in (
                "post-checkout",
                "pre-commit",
                "reference-transaction",
                "post-index-change",
                "pre-auto-gc",
            ):
                (hooks / hook).write_text(f"#!/bin/sh\necho hook >> {marker}\n")
                (hooks / hook).chmod(0o755)
            (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
            for key, value in (
                ("filter.evil.smudge", str(script)),
                ("filter.evil.clean", str(script)),
                ("filter.evil.process", str(script)),
                ("filter.evil.required", "true"),
                ("diff.evil.textconv", str(script)),
                ("core.fsmonitor", str(script)),
                ("core.hooksPath", str(hooks)),
                ("core.pager", str(script)),
                ("core.sshCommand", str(script)),
                ("gc.auto", "1"),
                ("log.showSignature", "true"),
                ("gpg.program", str(script)),
            ):
                git(repo, "config", key, value)

        return configure

    mutations: dict[str, Callable[[Path], object]] = {
        "symlink-abs": lambda r: (r / "coreai_torch" / "etc").symlink_to("/etc"),
        "symlink-rel-out": lambda r: (r / "coreai_torch" / "x").symlink_to("../../../outside"),
        "symlink-version-dev-zero": lambda r: (
            (r / "coreai_torch" / "__version__.py").unlink(),
            (r / "coreai_torch" / "__version__.py").symlink_to("/dev/zero"),
        ),
        "blob-65mib": lambda r: (r / "coreai_torch" / "w.bin").write_bytes(
            b"\0" * (65 * 1024 * 1024)
        ),
        "unicode-names": lambda r: (r / "coreai_torch" / "ünï cødé.py").write_text("X = 1\n"),
        "gitattributes-export": lambda r: (r / ".gitattributes").write_text(
            "* export-subst\ncoreai_torch/__version__.py export-ignore\n"
        ),
    }
    out = []
    for name, mutate in mutations.items():

        def setup(folder: Path, mutate: Callable = mutate) -> dict[str, str]:
            repo_of(folder, folder / "ran", mutate, evil_config(folder / "ran"))
            return {}

        # without consent: refused before anything
        out.append(
            Case(
                f"git/{name}/no-consent",
                ["bisect", "--from", "0.4.1", "--to", "0.4.2", "--repo", "{repo}", "-q"],
                setup,
                markers=["ran", "ran.shell"],
            )
        )
        out.append(
            Case(
                f"git/{name}/consent",
                [
                    "bisect",
                    "--from",
                    "0.4.1",
                    "--to",
                    "0.4.2",
                    "--repo",
                    "{repo}",
                    "-q",
                    "--allow-code",
                    "--probe",
                    "max_pool2d/functional-no-stride",
                ],
                setup,
                exits=(0, 1, 2, 3),
                bound=900,
                slow=True,
                markers=["ran", "ran.shell"],
                consented=True,
            )
        )
    for name, args in (
        ("not-a-repo", ["--repo", "{folder}"]),
        ("missing", ["--repo", "{folder}/nope"]),
        ("file", ["--repo", "{folder}/file"]),
        ("fifo", ["--repo", "{folder}/fifo"]),
    ):

        def odd_repos(folder: Path) -> dict[str, str]:
            (folder / "file").write_text("x")
            os.mkfifo(folder / "fifo")
            return {}

        for consent in ([], ["--allow-code"]):
            out.append(
                Case(
                    f"git/{name}{'/consent' if consent else ''}",
                    ["bisect", "--from", "0.4.1", "--to", "0.4.2", *args, "-q", *consent],
                    odd_repos,
                )
            )
    return out


def store_cases() -> list[Case]:
    out = []
    targets = {
        "loop": lambda f: (f / "loop").symlink_to("loop") or str(f / "loop"),
        "file": lambda f: (f / "file").write_text("x") and str(f / "file"),
        "in-file": lambda f: (f / "file2").write_text("x") and str(f / "file2" / "s"),
        "proc": lambda f: "/proc/self",
        "dev-null": lambda f: "/dev/null",
        "fifo": lambda f: (os.mkfifo(f / "fifo"), str(f / "fifo"))[1],
        # a dangling link into the case's folder: a store may be made there (exit 0)
        "dangling": lambda f: (f / "dang").symlink_to(f / "made-store") or str(f / "dang"),
    }
    commands = [
        ["envs", "list"],
        ["cache", "prune"],
        ["plan", "--to", "0.4.2", "-q"],
        # reads its step's sweep from the store without converting: refused there all the same
        ["affected", "--fix", "40", "-q"],
        ["scan", "{folder}", "-q"],
    ]
    # a dangling store is made and then used: `plan` and `affected` would build environments
    skip = {("dangling", "plan"), ("dangling", "affected")}
    for var in ("INVENTORY_CACHE", "INVENTORY_STORE"):
        for tname, target in targets.items():
            for cmd in commands:
                if (tname, cmd[0]) in skip:
                    continue

                def setup(
                    folder: Path, target: Callable = target, var: str = var
                ) -> dict[str, str]:
                    return {var: target(folder)}

                out.append(
                    Case(
                        f"store/{var}/{tname}/{cmd[0]}",
                        cmd,
                        setup,
                        exits=(0, 2) if tname == "dangling" else (2,),
                    )
                )
    # a store whose results folder is not its own: a link out of it (prune refuses; it used to
    # empty what it found there), a file, a link to itself
    parts = {
        "outside": lambda f: (f / "store" / "results").symlink_to(f),
        "file": lambda f: (f / "store" / "results").write_text("x"),
        "loop": lambda f: (f / "store" / "results").symlink_to("results"),
    }
    for pname, make in parts.items():
        for cmd in (["cache", "prune"], ["cache", "list"], ["cache", "du"]):

            def made(folder: Path, make: Callable = make) -> dict[str, str]:
                (folder / "store").mkdir()
                make(folder)
                return {"INVENTORY_STORE": str(folder / "store")}

            out.append(Case(f"store/results/{pname}/{'-'.join(cmd)}", cmd, made, exits=(0, 2)))
    for var in ("INVENTORY_TRACE_TIMEOUT", "INVENTORY_WORKER_TIMEOUT", "INVENTORY_RAY_JOB_TIMEOUT"):
        for value in ("abc", "-1", "0", "nan", "inf", "1e999", " "):
            out.append(Case(f"settings/{var}/{value!r}", ["envs", "list"], _env(var, value)))
    return out


def input_cases() -> list[Case]:
    out = []
    kinds = {
        "dev-zero": lambda f: "/dev/zero",
        "fifo": lambda f: (os.mkfifo(f / "in.fifo"), str(f / "in.fifo"))[1],
        "folder": lambda f: str(f),
        "huge": lambda f: (_sparse(f / "huge", 65 * 1024 * 1024), str(f / "huge"))[1],
        "binary": lambda f: ((f / "bin").write_bytes(b"\0\xff" * 100), str(f / "bin"))[1],
        "missing": lambda f: str(f / "missing"),
    }
    flags = {
        "--fixes": ["plan", "--to", "0.4.2", "-q", "--fixes"],
        "--registry": ["plan", "--to", "0.4.2", "-q", "--registry"],
        "--ignore": ["plan", "--to", "0.4.2", "-q", "--ignore"],
        "--baseline": ["plan", "--to", "0.4.2", "-q", "--baseline"],
        "--weights": ["affected", "--fix", "40", "-q", "--weights"],
    }
    for flag, cmd in flags.items():
        for kname, make in kinds.items():

            def setup(folder: Path, make: Callable = make) -> dict[str, str]:
                (folder / "made").write_text(make(folder))
                return {}

            value = "sam3={made}" if flag == "--weights" else "{made}"
            out.append(Case(f"input/{flag}/{kname}", [*cmd, value], setup))
    drafts = {
        "touches-blank": 'touches = [" "]',
        "touches-nonsense": 'touches = ["rm -rf /"]',
        "touches-int": "touches = [3]",
        "ships-in-path": 'ships_in = "../0.4.2"',
        "id-dotdot": 'id = "../../x"',
        "kind-unknown": 'kind = "magic"',
        "constructs-unknown": 'constructs = ["nope"]',
        "upstream-int": "upstream = 5",
    }
    for dname, line in drafts.items():

        def draft(folder: Path, line: str = line) -> dict[str, str]:
            text = FIXES.read_text()
            key = line.split("=")[0].strip()
            import re

            text = (
                re.sub(rf"(?m)^{key}\s*=.*$\n?", "", text, count=1)
                if key in ("ships_in", "id", "kind", "constructs", "upstream")
                else text
            )
            (folder / "draft.toml").write_text(text.replace("[[fix]]\n", f"[[fix]]\n{line}\n", 1))
            return {}

        # a draft the schema accepts (an id is any name: it never becomes a path) is answered:
        # a whole plan, so the case is slow
        accepted = dname == "id-dotdot"
        out.append(
            Case(
                f"draft/{dname}",
                ["plan", "--to", "0.4.2", "-q", "--fixes", "{folder}/draft.toml"],
                draft,
                exits=(0, 1, 2, 3, 5) if accepted else (2,),
                bound=1800 if accepted else 120,
                slow=accepted,
            )
        )

    def misspelt_verify(folder: Path) -> dict[str, str]:
        # a misspelt miniature was ignored, and the full module built in its place
        text = (ROOT / "recipes.toml").read_text()
        table = "[bundles.parakeet.verify.build]"
        (folder / "r.toml").write_text(text.replace(table, table.replace("build", "biuld"), 1))
        return {}

    out.append(
        Case(
            "registry/verify-misspelt-key",
            ["plan", "--to", "0.4.2", "-q", "--registry", "{folder}/r.toml"],
            misspelt_verify,
        )
    )
    out.append(
        Case(
            "sweep/registry-file-alone",
            ["sweep", "--from", "0.4.1", "--to", "0.4.2", "--registry-file", FIXES.name, "-q"],
        )
    )
    return out


def _wheel(folder: Path, version: str, core: str) -> None:
    """A coreai-torch wheel holding only its METADATA (all discovery reads)."""
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / f"coreai_torch-{version}-py3-none-any.whl", "w") as archive:
        archive.writestr(
            f"coreai_torch-{version}.dist-info/METADATA",
            f"Metadata-Version: 2.4\nName: coreai-torch\nVersion: {version}\n"
            f"Requires-Dist: coreai-core{core}\nRequires-Dist: numpy<2.5\n",
        )


def catalog_cases() -> list[Case]:
    """A user's catalog whose values would become paths or installer arguments, a discovered
    record an older tool wrote, and catalogs or package sources too large to walk. Each case has a
    cache of its own (what it records or builds never reaches the round's store)."""
    out = []
    catalogs = {
        "torch-path": '[torch]\nversion = "../../../../victim"\n[converters."0.4.2"]\n'
        'core = "1.0.0b2"\n',
        "core-path": '[converters."0.4.2"]\ncore = "../../x"\n',
        "core-option": '[converters."0.4.2"]\ncore = "1.0.0b2 --pre"\n',
        "extra-not-a-requirement": '[converters."0.4.2"]\ncore = "1.0.0b2"\nextra = ["a<<b c"]\n',
        "extra-path": '[converters."0.4.2"]\ncore = "1.0.0b2"\nextra = ["{folder}/pkg"]\n',
        "extra-url": '[converters."0.4.2"]\ncore = "1.0.0b2"\n'
        'extra = ["pkg @ file://{folder}/pkg"]\n',
        "extra-vcs": '[converters."0.4.2"]\ncore = "1.0.0b2"\n'
        'extra = ["git+file://{folder}/pkg"]\n',
        "extra-option": '[converters."0.4.2"]\ncore = "1.0.0b2"\nextra = ["-e {folder}/pkg"]\n',
    }
    for name, text in catalogs.items():

        def setup(folder: Path, text: str = text) -> dict[str, str]:
            pkg = folder / "pkg"
            pkg.mkdir()
            (pkg / "setup.py").write_text(
                _marker_code(folder / "ran", "setup") + "from setuptools import setup\nsetup()\n"
            )
            (folder / "c.toml").write_text(text.replace("{folder}", str(folder)))
            # matching folders: a torch version of ../../../../victim resolves to the victim
            for present in ("torch-..", ".torch-.."):
                (folder / "cache" / "envs" / present).mkdir(parents=True)
            (folder / "victim").mkdir()
            return {"INVENTORY_CACHE": str(folder / "cache")}

        # an extra that installs code is refused where an environment would be built with it:
        # `plan` in an empty cache first builds the other releases' environments (minutes)
        commands = [["envs", "build", "0.4.2"]]
        if not name.startswith("extra-") or name == "extra-not-a-requirement":
            commands.insert(0, ["plan", "--to", "0.4.2", "-q"])
        for cmd in commands:
            out.append(
                Case(
                    f"catalog/{name}/{cmd[0]}",
                    [*cmd, "--catalog", "{folder}/c.toml"],
                    setup,
                    markers=["ran"],
                )
            )

    def poisoned(folder: Path) -> dict[str, str]:
        record = folder / "cache" / "discovered" / "0.4.9"
        record.mkdir(parents=True)
        (record / "entry.toml").write_text('[converters."0.4.9"]\ncore = "../../x"\nextra = []\n')
        (record / "METADATA").write_text(
            "Metadata-Version: 2.4\nName: coreai-torch\nVersion: 0.4.9\n"
            "Requires-Dist: coreai-core==../../x\n"
        )
        return {"INVENTORY_CACHE": str(folder / "cache")}

    out.append(Case("catalog/discovered-record-path", ["plan", "--to", "0.4.2", "-q"], poisoned))

    def big(folder: Path) -> dict[str, str]:
        (folder / "c.toml").write_text(
            "".join(
                f'[converters."9.{i // 1000}.{i % 1000}"]\ncore = "1.0.{i}"\n'
                for i in range(200_000)
            )
        )
        return {}

    out.append(
        Case(
            "catalog/200000-releases",
            ["plan", "--to", "0.4.2", "-q", "--catalog", "{folder}/c.toml"],
            big,
        )
    )

    def sources(wheels: dict[str, str]) -> Callable[[Path], dict[str, str]]:
        def setup(folder: Path) -> dict[str, str]:
            for version, core in wheels.items():
                _wheel(folder / "links", version, core)
            return {
                "INVENTORY_CACHE": str(folder / "cache"),
                "PIP_NO_INDEX": "1",
                "PIP_FIND_LINKS": str(folder / "links"),
            }

        return setup

    out.append(
        Case(
            "discover/3000-wheels",
            ["envs", "discover", "-q"],
            sources({f"9.{i // 100}.{i % 100}": "==1.0.0b3" for i in range(3000)}),
        )
    )
    for name, core in (("core-path", "==../../x"), ("core-arbitrary", "===../../x")):
        out.append(
            Case(
                f"discover/{name}",
                ["envs", "discover", "-q"],
                sources({"0.4.9": core}),
                exits=(1,),  # listed with the field refused, nothing recorded
            )
        )
    return out


def bundle_cases() -> list[Case]:
    out = []

    def bundle(folder: Path) -> Path:
        b = folder / "bundles" / "x.aimodel"
        b.mkdir(parents=True)
        (b / "metadata.json").write_text('{"producer": "coreai-core 1.0.0b1"}')
        (b / "main.mlirb").write_bytes(b"ML\xefR")
        (b / "main.hash").write_text("0" * 64)
        return b

    mutations = {
        "empty-folder": lambda b: (b / "assets").mkdir(),
        "extra-file": lambda b: (b / "README").write_text("r"),
        "link-out": lambda b: (b / "w").symlink_to("/etc"),
        "loop": lambda b: (b / "l").symlink_to("l"),
        "metadata-fifo": lambda b: ((b / "metadata.json").unlink(), os.mkfifo(b / "metadata.json")),
        "metadata-dev-zero": lambda b: (
            (b / "metadata.json").unlink(),
            (b / "metadata.json").symlink_to("/dev/zero"),
        ),
        "metadata-deep": lambda b: (b / "metadata.json").write_text("[" * 100_000),
        "metadata-corrupt": lambda b: (b / "metadata.json").write_text("{"),
        "program-huge": lambda b: _sparse(b / "main.mlirb", 65 * 1024 * 1024),
    }
    for name, mutate in mutations.items():

        def setup(folder: Path, mutate: Callable = mutate) -> dict[str, str]:
            mutate(bundle(folder))
            return {}

        out.append(
            Case(
                f"repair/{name}",
                ["repair", "{folder}/bundles/x.aimodel", "-o", "{folder}/out.aimodel", "-q"],
                setup,
                exits=(2, 3),
            )
        )
        out.append(
            Case(
                f"scan/{name}",
                ["scan", "{folder}/bundles", "-q", "--json"],
                setup,
                exits=(0, 2, 3),
                json=True,
                slow=name in ("empty-folder", "extra-file"),
            )
        )
    return out


def noise_cases() -> list[Case]:
    out = []
    commands = {
        "affected": ["affected", "--fix", "40", "--registry", "{folder}/empty.toml"],
        "bisect": ["bisect", "--from", "0.4.1", "--to", "0.4.2", "--repo", "{folder}"],
        "plan": ["plan", "--to", "0.4.2", "--registry", "{folder}/empty.toml"],
        "release-notes": [
            "release-notes",
            "--from",
            "0.4.1",
            "--to",
            "0.4.2",
            "--fixes",
            "{folder}/empty.toml",
        ],
        "repair": ["repair", "{folder}", "-o", "{folder}/out"],
        "scan": ["scan", "{folder}"],
        "sweep": ["sweep", "--from", "0.4.1", "--to", "0.4.2", "--fixes", "{folder}/empty.toml"],
        "verify": ["verify", "b", "--to", "0.4.2", "--registry", "{folder}/empty.toml"],
    }
    doubles = str(ROOT / "tests" / "helpers" / "doubles")
    for name, cmd in commands.items():
        for fault in ("noisy", "internal"):

            def setup(folder: Path, fault: str = fault) -> dict[str, str]:
                (folder / "empty.toml").write_text("[bundles]\n")
                return {"INVENTORY_FAULT": fault, "PYTHONPATH": doubles}

            out.append(
                Case(
                    f"json/{fault}/{name}",
                    [*cmd, "--json", "-q"],
                    setup,
                    exits=(2, 4) if fault == "internal" else (0, 1, 2, 3),
                    json=True,
                )
            )
    return out


def trace_cases() -> list[Case]:
    builders = {
        "hang": "def b(**_):\n    import time; time.sleep(3600)\n",
        "fork-raise": "def b(**_):\n    import subprocess; subprocess.Popen(['sleep', '1000'])\n"
        "    raise ValueError('broke')\n",
        "setsid-raise": "def b(**_):\n    import subprocess\n"
        "    subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
        "    raise RuntimeError('x')\n",
        "double-fork": "def b(**_):\n    import os, time\n    if os.fork() == 0:\n"
        "        os.setsid()\n        if os.fork() == 0:\n"
        "            time.sleep(1000)\n        os._exit(0)\n"
        "    raise SystemExit(3)\n",
        "exit-0": "def b(**_):\n    import os; os._exit(0)\n",
        "segfault": "def b(**_):\n    import ctypes; ctypes.string_at(0)\n",
        "print-flood": "def b(**_):\n    import sys\n    for _ in range(200000):\n"
        "        print('x' * 80)\n    raise ValueError('done printing')\n",
        "close-fds": "def b(**_):\n    import os\n    os.close(1); os.close(2)\n"
        "    raise ValueError('no fds')\n",
        "kill-parent": "def b(**_):\n    import os, signal\n"
        "    os.kill(os.getppid(), signal.SIGSTOP)\n    raise ValueError('x')\n",
        "returns-none": "def b(**_):\n    return None\n",
        "huge-message": "def b(**_):\n    raise ValueError('m' * 5_000_000)\n",
    }
    out = []
    for name, code in builders.items():

        def setup(folder: Path, code: str = code) -> dict[str, str]:
            (folder / "hostile_b.py").write_text(code)
            (folder / "r.toml").write_text(
                '[bundles.evil]\nfiles = ["evil.aimodel"]\ndtype = "float32"\n'
                '[bundles.evil.exporter]\nconverter = "0.4.0"\ncore = "1.0.0b1"\n'
                'source = "test"\n[bundles.evil.trace]\ntarget = "hostile_b:b"\n'
            )
            return {"PYTHONPATH": str(folder), "INVENTORY_TRACE_TIMEOUT": "20"}

        out.append(
            Case(
                f"trace/{name}",
                ["trace", "evil", "--registry", "{folder}/r.toml", "--allow-code", "-q"],
                setup,
                exits=(2,),
                bound=120,
                slow=True,
            )
        )
        out.append(
            Case(
                f"trace/{name}/no-consent",
                ["trace", "evil", "--registry", "{folder}/r.toml", "-q"],
                setup,
            )
        )
    return out


def ray_cases() -> list[Case]:
    """`--executor ray` addresses and settings that must be refused before any work (every
    address on this machine, no name to resolve: nothing is sent elsewhere; no `auto`, which
    would join whatever cluster this machine runs). The cluster under faults (a node, an
    agent or the head lost, Ctrl-C) is tests/oracle/executors/test_executor_ray.py."""
    out = []
    addresses = [
        "",
        " ",
        "ray://127.0.0.1:10001",
        "127.0.0.1:1",
        "127.0.0.1:0",
        "127.0.0.1:99999",
        "127.0.0.1",
        ":6379",
        "localhost:notaport",
        "[::1]:1",
        "127.0.0.1:6379:1",
        "127.0.0.1:" + "9" * 5000,
        "127.0.0.1:-1",
    ]
    for address in addresses:
        for how in ("flag", "env"):

            def setup(folder: Path, address: str = address, how: str = how) -> dict[str, str]:
                return {"RAY_ADDRESS": address} if how == "env" else {}

            args = ["sweep", "--from", "0.4.1", "--to", "0.4.2", "-q", "--executor", "ray"]
            if how == "flag":
                args += ["--ray-address", address]
            out.append(Case(f"ray/{how}/{address[:24]!r}", args, setup, bound=60))
    for executor in ("RAY", "ray ", "dask", "../ray", ""):
        out.append(
            Case(
                f"ray/executor/{executor!r}",
                ["sweep", "--from", "0.4.1", "--to", "0.4.2", "-q", "--executor", executor],
            )
        )
    # the address without its executor: once ignored, the run going on locally
    for chosen in ([], ["--executor", "local"]):
        out.append(
            Case(
                f"ray/address-without-ray/{' '.join(chosen) or 'default'}",
                ["sweep", "--from", "0.4.1", "--to", "0.4.2", "-q", *chosen]
                + ["--ray-address", "127.0.0.1:6379"],
            )
        )
    for var in ("INVENTORY_RAY_SETUP_TIMEOUT", "INVENTORY_RAY_JOB_TIMEOUT"):
        for value in ("abc", "0", "-3", "nan"):
            out.append(
                Case(
                    f"ray/{var}/{value}",
                    ["sweep", "--from", "0.4.1", "--to", "0.4.2", "-q", "--executor", "ray"],
                    _env(var, value),
                )
            )
    return out


# values a markdown page would run, hide the rest behind, or link
HOSTILE_TEXT = [
    "<script>alert(1)</script>",
    "<!-- hides the rest",
    "[click](javascript:alert(1))",
    "![pixel](https://evil.example/p.png)",
    "<https://evil.example>",
    "*bold* `code` _em_",
    "# heading",
]


def markdown_cases() -> list[Case]:
    """Names and titles from data in a markdown answer (`affected` of bundles exported with the
    record's own release: no conversion)."""

    def registry(folder: Path, names: list[str], title: str = "") -> None:
        (folder / "recipes.toml").write_text(
            "".join(
                f'[bundles.{json.dumps(n)}]\nfiles = ["a"]\ndtype = "float32"\n'
                f'[bundles.{json.dumps(n)}.exporter]\nconverter = "0.4.2"\nsource = "test"\n'
                for n in names
            )
        )
        text = FIXES.read_text()
        if title:
            text = text.replace(
                'title = "Fix conv transpose lowering"', f"title = {json.dumps(title)}"
            )
        (folder / "fixes.toml").write_text(text)

    args = [
        "affected",
        "--fix",
        "40",
        "-q",
        "-f",
        "markdown",
        "--registry",
        "{folder}/recipes.toml",
    ]
    args += ["--fixes", "{folder}/fixes.toml"]
    title = "Fix " + " ".join(HOSTILE_TEXT[:4])
    return [
        Case(
            "markdown/bundle-names",
            args,
            lambda f: (registry(f, HOSTILE_TEXT), {})[1],
            exits=(0,),
            literal=HOSTILE_TEXT,
        ),
        Case(
            "markdown/record-title",
            args,
            lambda f: (registry(f, ["plain"], title), {})[1],
            exits=(0,),
            literal=[title],
        ),
    ]


def _markup_problems(stdout: str, literal: list[str]) -> list[str]:
    """What a rendering of `stdout` (markdown) shows that it should not: a value not shown as
    its text, a tag or comment of its own, a link off the converter's pull requests."""
    from html.parser import HTMLParser

    import markdown

    class Seen(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.text: list[str] = []
            self.bad: list[str] = []
            self.headings = 0

        def handle_data(self, data: str) -> None:
            self.text.append(data)

        def handle_comment(self, data: str) -> None:
            self.bad.append(f"a comment <!--{data[:20]}")

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            href = dict(attrs).get("href") or ""
            self.headings += tag == "h1"
            # the page's own title is its one heading
            if (
                tag in ("script", "img", "iframe", "em", "code")
                or self.headings > 1
                or (tag == "a" and not href.startswith("https://github.com/"))
            ):
                self.bad.append(f"a <{tag}> {href}".rstrip())

    seen = Seen()
    seen.feed(markdown.markdown(stdout, extensions=["tables"]))
    text = " ".join(" ".join(seen.text).split())
    shown = [f"not shown as text: {v!r}" for v in literal if " ".join(v.split()) not in text]
    return shown + seen.bad


def cli_cases() -> list[Case]:
    """The command line's own inputs and outputs: `-o` onto a file the command reads or onto
    what is no regular file, a single-valued option given twice, a format a command has no
    form in, typos. Each is refused in one line before any work (their bound is short)."""

    def reads(folder: Path) -> dict[str, str]:
        (folder / "in.toml").write_text("# accepted risks: none yet\n")
        (folder / "linked.toml").hardlink_to(folder / "in.toml")
        os.mkfifo(folder / "fifo")
        (folder / "dangling").symlink_to(folder / "made-through-the-link")
        (folder / "drafts").mkdir()
        return {}

    plan = ["plan", "--to", "0.4.2", "-q"]
    outputs = {
        "same-as-ignore": [*plan, "--ignore", "{folder}/in.toml", "-o", "{folder}/in.toml"],
        "hard-link-of-fixes": [*plan, "--fixes", "{folder}/in.toml", "-o", "{folder}/linked.toml"],
        "same-as-registry": [*plan, "--registry", "{folder}/in.toml", "-o", "{folder}/in.toml"],
        "same-as-weights": [
            *["affected", "--fix", "40", "-q", "--weights", "sam3={folder}/in.toml"],
            *["-o", "{folder}/in.toml"],
        ],
        "fifo": [*plan, "-o", "{folder}/fifo"],
        "dev-null": [*plan, "-o", "/dev/null"],
        "long-name": [*plan, "-o", "{folder}/" + "a" * 300],
        "dangling-link": [*plan, "-o", "{folder}/dangling"],
        "draft-folder": [
            *["draft", "--from", "0.4.1", "--to", "0.4.2", "-q"],
            *["-o", "{folder}/drafts"],
        ],
        "repair-report-is-catalog": [
            *["repair", "{folder}", "-o", "{folder}/out", "-q"],
            *["--catalog", "{folder}/in.toml", "--report", "{folder}/in.toml"],
        ],
        "format-twice": [*plan, "-f", "json", "-f", "table"],
        "output-twice": [*plan, "-o", "{folder}/a", "-o", "{folder}/b"],
    }
    out = [Case(f"output/{name}", args, reads, bound=60) for name, args in outputs.items()]
    out.append(
        Case(
            "output/json-dev-stdout",
            [*plan, "--json", "-o", "/dev/stdout"],
            reads,
            bound=60,
            json=True,
        )
    )
    for args in (
        ["sweep", "--from", "0.4.1", "--to", "0.4.2", "-f", "html"],
        ["verify", "mimi", "--to", "0.4.2", "-f", "cyclonedx"],
        ["envs", "list", "-f", "markdown"],
    ):
        out.append(Case(f"format/{args[0]}-{args[-1]}", args, bound=60))
    for typo in (
        ["plna", "--to", "0.4.2"],
        ["plan", "--tto", "0.4.2"],
        ["plan", "--to"],
        ["fixes", "extra"],
        ["envs", "lst"],
        ["sweep", "--from", "0.4.1", "--to", "0.4.2", "--progress", "loud"],
        ["scan", ".", "--jobs", "abc"],
    ):
        out.append(Case(f"usage/{' '.join(typo)}", typo, bound=60))
    return out


def all_cases() -> list[Case]:
    return (
        source_cases()
        + git_cases()
        + store_cases()
        + input_cases()
        + markdown_cases()
        + catalog_cases()
        + bundle_cases()
        + noise_cases()
        + trace_cases()
        + ray_cases()
        + cli_cases()
    )


def _descendants_of_none(before: set[int]) -> list[int]:
    """Processes named `sleep 1000` that were not there before the case (what a builder left)."""
    left = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) not in before:
            try:
                cmd = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmd[:2] == [b"sleep", b"1000"]:
                left.append(int(entry.name))
    return left


def _sleepers() -> set[int]:
    return set(_descendants_of_none(set()))


def run_case(case: Case, folder: Path, store: Path) -> dict[str, object]:
    folder.mkdir(parents=True)
    env = {**os.environ, "INVENTORY_CACHE": str(store), "COLUMNS": "200"}
    env.pop("INVENTORY_STORE", None)
    try:
        env.update(case.setup(folder))
    except Exception as exc:  # noqa: BLE001 - a case that cannot be built is said, not run
        return {"case": case.name, "verdict": "not built", "why": repr(exc)}
    values = {"folder": str(folder), "tree": str(folder / "tree"), "repo": str(folder / "repo")}
    made = folder / "made"
    if made.exists():
        values["made"] = made.read_text()
    args = [a.format(**values) for a in case.args]
    before = _sleepers()
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [PYTHON, "-m", "inventory.cli", *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=case.bound,
            stdin=subprocess.DEVNULL,
        )
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, stdout, stderr = None, str(exc.stdout or ""), str(exc.stderr or "")
    took = time.monotonic() - started
    problems = []
    if code is None:
        problems.append(f"no answer within {case.bound:g} s")
    elif code not in case.exits:
        problems.append(f"exit {code}, expected {case.exits}")
    if "Traceback" in stderr or "Traceback" in stdout:
        problems.append("a traceback")
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if code == 2 and not case.name.startswith(("json/", "scan/")) and len(lines) != 1:
        problems.append(f"{len(lines)} lines on stderr for a refusal")
    longest = max((len(ln) for ln in lines), default=0)
    if longest > _LONGEST_LINE:  # a relayed message is bounded where lines are formatted
        problems.append(f"a line of {longest} characters on stderr")
        lines = [ln[:_LONGEST_LINE] for ln in lines]
    for marker in case.markers:
        path = folder / marker
        if not path.exists():
            continue
        ran = set(path.read_text().split()) - ({"init", "version"} if case.consented else set())
        if ran or marker.endswith(".shell"):
            problems.append(f"foreign code ran: {marker} says {sorted(ran) or 'shell'}")
    if case.literal and code == 0:
        problems += _markup_problems(stdout, case.literal)
    if case.json and code is not None:
        try:
            json.loads(stdout)
        except ValueError:
            problems.append("stdout is not one JSON document")
    left = _descendants_of_none(before)
    if left:
        problems.append(f"{len(left)} process(es) left behind")
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
    return {
        "case": case.name,
        "args": args,
        "exit": code,
        "seconds": round(took, 2),
        "stderr": lines[-3:],
        "verdict": "held" if not problems else "broke",
        "problems": problems,
    }


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve()
    only = argv[argv.index("--only") + 1] if "--only" in argv else ""
    slow, slow_only = "--slow" in argv, "--slow-only" in argv
    cases = [
        c
        for c in all_cases()
        if c.name.startswith(only) and (c.slow if slow_only else slow or not c.slow)
    ]
    out.mkdir(parents=True, exist_ok=True)
    store = out / "store"
    store.mkdir(exist_ok=True)
    envs = Path(os.environ.get("INVENTORY_CACHE", Path.home() / ".cache" / "inventory")) / "envs"
    if envs.is_dir() and not (store / "envs").exists():
        (store / "envs").symlink_to(envs)
    results = []
    log = (out / "results.jsonl").open("w")
    for i, case in enumerate(cases, 1):
        record = run_case(case, out / "cases" / f"{i:04d}", store)
        results.append(record)
        log.write(json.dumps(record) + "\n")
        log.flush()
        mark = "ok " if record["verdict"] == "held" else "BAD"
        print(
            f"{mark} {case.name}: exit {record.get('exit')} {record.get('problems', '')}",
            flush=True,
        )
    (out / "results.json").write_text(json.dumps(results, indent=1))
    held = sum(r["verdict"] == "held" for r in results)
    print(f"{len(results)} cases: {held} held, {len(results) - held} broke or not built")
    return 0 if held == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
