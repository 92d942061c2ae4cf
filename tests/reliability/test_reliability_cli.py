"""Reliability V: the command line's own inputs and outputs (a hostile round's and a new user's).

`-o FILE` is checked before the run (`inventory.output_file`, for every option a command marks as
written): never a file the command reads, a symbolic link, a FIFO, a device, a folder or a name
the file system refuses. A format a command has no form in is refused without importing its
writer. Every usage error (an unknown command or option, a missing or bad value, an extra
argument, a single-valued option given twice) is one line and exit 2. A message relayed from
elsewhere (a builder's exception, an error naming a key from a user's file) is bounded, its
whole text kept in a log the line names.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from cli import ROOT, invoke, one_line

from inventory.errors import ExitCode, UsageError


def refused(tmp_path: Path, *args: str) -> str:
    """The one line of a run refused (exit 2) before anything ran: its store never made."""
    store = tmp_path / "store"
    ran = invoke(*args, INVENTORY_CACHE=str(store), INVENTORY_STORE=str(store))
    assert ran.returncode == ExitCode.USAGE, (ran.returncode, ran.stdout, ran.stderr)
    assert not store.exists(), sorted(store.rglob("*"))
    return one_line(ran)


# ---- a format a command has no form in --------------------------------------------------


@pytest.mark.parametrize(
    "args, fmt",
    [
        (["sweep", "--from", "0.4.1", "--to", "0.4.2"], "html"),
        (["release-notes", "--from", "0.4.1", "--to", "0.4.2"], "cyclonedx"),
        (["verify", "mimi", "--to", "0.4.2"], "cyclonedx"),
        (["scan", "."], "html"),
        (["envs", "list"], "markdown"),
    ],
)
def test_a_format_without_a_form_is_refused_before_any_import_or_store(tmp_path, args, fmt):
    """It was refused after 17-21 s on a loaded machine: deciding whether html had a form
    imported the html writer, and with it the cyclonedx one and its schema validator. In a
    process of its own, so what the refusal imported is seen."""
    store = tmp_path / "store"
    probe = (
        "import sys\n"
        "from inventory.cli import app\n"
        "try:\n"
        "    app(args=sys.argv[1:], prog_name='inventory')\n"
        "except SystemExit as e:\n"
        "    code = e.code\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('cyclonedx', 'jsonschema',"
        " 'jinja2') or m.endswith(('.html_report', '.cyclonedx_report')))\n"
        "print('EXIT', code, 'HEAVY', ','.join(heavy), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, *args, "-f", fmt],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "INVENTORY_CACHE": str(store), "INVENTORY_STORE": str(store)},
    )
    *said, last = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    command = " ".join(args[:2]) if args[0] == "envs" else args[0]
    assert len(said) == 1, proc.stderr
    assert said[0].startswith(
        f"error: --format {fmt}: {command} has no {fmt} form (its forms: table, json"
    )
    assert last == f"EXIT {ExitCode.USAGE} HEAVY ", last
    assert not store.exists()


def test_each_writer_has_the_forms_the_commands_state():
    """Each command states the formats it has a form in (its `FORMS`), so a refusal imports no
    writer: each writer's builders are exactly the commands that state its format, and each
    command stating a markdown form renders one."""
    import importlib

    from inventory.cli import TABLE
    from inventory.output import OutputFormat
    from inventory.report import cyclonedx_report, html_report
    from inventory.report.formats import BASIC

    stated: dict[OutputFormat, set[str]] = {f: set() for f in OutputFormat}
    for group, name, target in TABLE:
        module = importlib.import_module(f"inventory.commands.{target.split(':')[0]}")
        for fmt in getattr(module, "FORMS", BASIC):
            stated[fmt].add(f"{group} {name}".strip())
    assert set(html_report.BUILDERS) == stated[OutputFormat.HTML]
    assert set(cyclonedx_report.BUILDERS) == stated[OutputFormat.CYCLONEDX]
    with_markdown = {
        f.stem
        for f in (ROOT / "inventory" / "commands").glob("*.py")
        if "markdown" in f.read_text() and "Renderer(" in f.read_text()
    }
    assert {c.replace("-", "_") for c in stated[OutputFormat.MARKDOWN]} == with_markdown
    # --format's help names the commands with each form: the same ones
    from inventory.options import Format

    said = typing.get_args(Format)[1].help
    for fmt, where in ((OutputFormat.HTML, "report"), (OutputFormat.CYCLONEDX, "VEX")):
        found = re.search(rf"{fmt.value} \([^)]*{where}: ([^)]*)\)", said)
        assert found is not None, said
        assert set(found[1].split(", ")) == stated[fmt], said


# ---- -o naming a file the command reads ---------------------------------------------------


def _read_file(tmp_path: Path) -> Path:
    f = tmp_path / "input.toml"
    f.write_text("# accepted risks: none yet\n")
    return f


# (the command with the option that reads the file, the flag the refusal names)
READERS = {
    "plan --ignore": (["plan", "--to", "0.4.2", "--ignore", "{f}"], "--ignore"),
    "plan --fixes": (["plan", "--to", "0.4.2", "--fixes", "{f}"], "--fixes"),
    "plan --registry": (["plan", "--to", "0.4.2", "--registry", "{f}"], "--registry"),
    "plan --baseline": (["plan", "--to", "0.4.2", "--baseline", "{f}"], "--baseline"),
    "plan --catalog": (["plan", "--to", "0.4.2", "--catalog", "{f}"], "--catalog"),
    "affected --weights": (["affected", "--fix", "40", "--weights", "sam3={f}"], "--weights"),
    "release-notes --fixes": (
        ["release-notes", "--from", "0.4.1", "--to", "0.4.2", "--fixes", "{f}"],
        "--fixes",
    ),
    "sweep --registry-file": (
        ["sweep", "--from", "0.4.1", "--to", "0.4.2", "--registry", "--registry-file", "{f}"],
        "--registry-file",
    ),
    "verify --fixes": (["verify", "mimi", "--to", "0.4.2", "--fixes", "{f}"], "--fixes"),
    "draft --against": (
        ["draft", "--from", "0.4.1", "--to", "0.4.2", "--against", "{f}"],
        "--against",
    ),
    "bisect --fixes": (
        ["bisect", "--from", "0.4.1", "--to", "0.4.2", "--repo", "{d}", "--fixes", "{f}"],
        "--fixes",
    ),
}


@pytest.mark.parametrize("name", READERS)
def test_an_output_naming_a_file_the_command_reads_is_refused_before_the_run(tmp_path, name):
    """`plan --ignore F -o F` overwrote F, exit 0: the answer replaced the accepted risks."""
    f = _read_file(tmp_path)
    args, flag = READERS[name]
    given = [a.format(f=f, d=tmp_path) for a in args]
    line = refused(tmp_path, *given, "-q", "-o", str(f))
    assert line.startswith(f"error: --output {f}: the same file as {flag} "), line
    assert f.read_text() == "# accepted risks: none yet\n"


@pytest.mark.parametrize("spelling", ["other-path", "hard-link", "symlinked-folder"])
def test_the_same_file_by_another_name_is_the_same_file(tmp_path, spelling):
    f = _read_file(tmp_path)
    if spelling == "other-path":
        out = tmp_path / "sub" / ".." / f.name
        (tmp_path / "sub").mkdir()
    elif spelling == "hard-link":
        out = tmp_path / "linked.toml"
        os.link(f, out)
    else:
        (tmp_path / "via").symlink_to(tmp_path)
        out = tmp_path / "via" / f.name
    line = refused(tmp_path, "plan", "--to", "0.4.2", "--ignore", str(f), "-o", str(out), "-q")
    assert "the same file as --ignore" in line
    assert f.read_text() == "# accepted risks: none yet\n"


def test_repair_report_naming_a_file_of_its_catalog_is_refused(tmp_path):
    f = _read_file(tmp_path)
    line = refused(
        tmp_path,
        "repair",
        str(tmp_path),
        "-o",
        str(tmp_path / "out"),
        "--catalog",
        str(f),
        "--report",
        str(f),
    )
    assert line.startswith(f"error: --report {f}: the same file as --catalog ")


# ---- -o that is not a regular file or a new name -----------------------------------------


def test_an_output_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    line = refused(tmp_path, "plan", "--to", "0.4.2", "-o", str(fifo), "-q")
    assert line.startswith(f"error: --output {fifo}: not a regular file (a FIFO);")


def test_an_output_name_longer_than_the_file_system_allows_is_one_line_not_exit_4(tmp_path):
    long = tmp_path / ("a" * 300)
    line = refused(tmp_path, "plan", "--to", "0.4.2", "-o", str(long), "-q")
    assert line.endswith(": cannot be written (File name too long)")


def test_draft_onto_an_existing_folder_is_refused_before_the_run(tmp_path):
    """It failed only once the whole draft had been measured."""
    folder = tmp_path / "drafts"
    folder.mkdir()
    line = refused(tmp_path, "draft", "--from", "0.4.1", "--to", "0.4.2", "-o", str(folder), "-q")
    assert line == f"error: --output {folder}: a folder, not a file"


def test_an_output_through_a_dangling_symlink_is_refused_and_nothing_is_created(tmp_path):
    link, target = tmp_path / "out.json", tmp_path / "elsewhere.json"
    link.symlink_to(target)
    line = refused(tmp_path, "plan", "--to", "0.4.2", "-f", "json", "-o", str(link), "-q")
    assert line.startswith(f"error: --output {link}: a symbolic link (to {target});")
    assert not target.exists()


def test_json_to_dev_stdout_is_refused_in_one_line_and_the_envelope(tmp_path, json_schema):
    """`--json -o /dev/stdout` wrote the document to stderr: while `--json` runs, descriptor 1
    is stderr (so that what libraries print never reaches the document), and /dev/stdout is a
    link to it. A link or a device is refused: without -o the document is on stdout."""
    store = tmp_path / "store"
    ran = invoke(
        "plan", "--to", "0.4.2", "--json", "-o", "/dev/stdout", "-q", INVENTORY_CACHE=str(store)
    )
    assert ran.returncode == ExitCode.USAGE
    assert one_line(ran).startswith("error: --output /dev/stdout: a symbolic link (to ")
    document = json.loads(ran.stdout)
    json_schema(document)
    assert document["error"].startswith("--output /dev/stdout: a symbolic link")
    assert not store.exists()


def test_a_device_is_refused(tmp_path):
    line = refused(tmp_path, "plan", "--to", "0.4.2", "-o", "/dev/null", "-q")
    assert line.startswith("error: --output /dev/null: not a regular file (a character device);")


def test_the_write_itself_never_follows_a_link_or_waits_on_a_fifo(tmp_path):
    """What `-o` names may change between the check and the end of the run: the write opens
    without following a link and without blocking, and writes only to a regular file."""
    from inventory.output_file import write_file

    fifo, link, target = tmp_path / "fifo", tmp_path / "link", tmp_path / "target"
    os.mkfifo(fifo)
    link.symlink_to(target)
    with pytest.raises(UsageError, match="not a regular file \\(a FIFO\\)"):
        write_file(fifo, "x")
    with pytest.raises(UsageError, match="a symbolic link"):
        write_file(link, "x")
    assert not target.exists()
    plain = tmp_path / "plain"
    plain.write_text("a much longer old content\n")
    write_file(plain, "new")
    assert plain.read_text() == "new\n"


# ---- a single-valued option given twice ----------------------------------------------


@pytest.mark.parametrize(
    "args, flag",
    [
        (["-f", "json", "-f", "table"], "'--format' / '-f'"),
        (["--format", "json", "-fmarkdown"], "'--format' / '-f'"),
        (["-o", "a.json", "--output", "b.json"], "'--output' / '-o'"),
        (["--ignore", "a.toml", "--ignore", "b.toml"], "'--ignore'"),
        (["--tolerance", "0.1", "--tolerance", "0.2"], "'--tolerance'"),
    ],
)
def test_a_single_valued_option_given_twice_is_refused(tmp_path, args, flag):
    """The last one used to win silently (`-f json -f table` printed a table)."""
    line = refused(tmp_path, "plan", "--to", "0.4.2", *args, "-q")
    assert line == (
        f"error: Invalid value for {flag}: given twice: give it once "
        "(the last one would win silently)"
    )


def test_a_repeatable_option_and_a_repeated_flag_are_still_taken(tmp_path):
    # --bundle is repeatable; a repeated flag means the same thing: the bundle is the error
    line = refused(tmp_path, "plan", "--to", "0.4.2", "-b", "nope", "-b", "nope2", "-q", "-q")
    assert "nope" in line and "given twice" not in line


# ---- usage errors: one line ---------------------------------------------------------------

USAGE = [
    (["plna", "--to", "0.4.2"], "error: No such command 'plna'. Did you mean 'plan'?"),
    (["envs", "lst"], "error: No such command 'lst'. Did you mean 'list'?"),
    (["plan", "--tto", "0.4.2"], "error: No such option: --tto (Possible options: --store, --to)"),
    (["cache", "du", "--jsn"], "error: No such option: --jsn (Possible options: --json)"),
    (["--bogus"], "error: No such option: --bogus"),
    (
        ["sweep", "--from", "0.4.1", "--to", "0.4.2", "--progress", "loud"],
        "error: Invalid value for '--progress': 'loud': one of auto, on, off",
    ),
    (["plan", "--to"], "error: Option '--to' requires an argument."),
    (["affected", "-b", "sam3"], "error: Missing option '--fix'."),
    (["verify", "--to", "0.4.2"], "error: Missing argument 'BUNDLE'."),
    (["fixes", "extra"], "error: Got unexpected extra argument(s) (extra)"),
    (["scan", ".", "--jobs", "abc"], None),
]


@pytest.mark.parametrize("args, line", USAGE, ids=[" ".join(a) for a, _ in USAGE])
def test_every_usage_error_is_one_line_and_exit_2(args, line):
    """The hostile round found 33 typos answered with typer's five-line usage box."""
    ran = invoke(*args)
    assert ran.returncode == ExitCode.USAGE
    assert ran.stdout == ""
    said = one_line(ran)
    if line is None:
        assert said.startswith("error: Invalid value for '--jobs'") and "'abc'" in said, said
    else:
        assert said == line


def test_help_is_still_help():
    assert invoke("plan", "--help").returncode == 0
    ran = invoke("envs")  # a group called with nothing shows its commands
    assert "build" in ran.stdout + ran.stderr and "list" in ran.stdout + ran.stderr


# ---- foreign messages, bounded -----------------------------------------------------------


def test_a_megabyte_key_from_a_users_file_is_a_bounded_line_and_kept_whole_in_a_log(
    tmp_path, json_schema
):
    """An error relays a user's key (an ignore entry's misspelt key): a 1 MB key was a 1 MB
    line. The line keeps its start and end (the known keys) and names the log with it whole."""
    key = "k" * 1_000_000
    ignore = tmp_path / "ignore.toml"
    ignore.write_text(
        f'[[ignore]]\nfix = "40"\nbundle = "x"\nreason = "r"\nexpires = "2030-01-01"\n{key} = 1\n'
    )
    store = tmp_path / "store"
    for as_json in ([], ["--json"]):
        ran = invoke(
            "plan",
            "--to",
            "0.4.2",
            "--ignore",
            str(ignore),
            "-q",
            *as_json,
            INVENTORY_CACHE=str(store),
            INVENTORY_STORE=str(store),
        )
        assert ran.returncode == ExitCode.USAGE
        line = one_line(ran)
        assert len(line) < 1000, len(line)
        assert line.startswith(f"error: {ignore}: ignore entry 1 has an unknown key 'kkk")
        assert line.endswith("kkk' (known: fix, bundle, reason, expires)")
        cut, log = line.split(" ... (", 1)[1].split(") ... ", 1)[0].split("; full text in ")
        assert int(cut.split()[0]) > 999_000
        assert key in Path(log).read_text() and Path(log).is_relative_to(store)
        if as_json:
            json_schema(json.loads(ran.stdout))
            assert json.loads(ran.stdout)["error"] == line.removeprefix("error: ")


def test_a_short_message_is_left_as_it_is():
    from inventory.user_text import bounded

    assert bounded("x" * 600) == "x" * 600
    assert len(bounded("x" * 601)) < 800
