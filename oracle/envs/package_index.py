"""The coreai-torch releases the machine's package sources offer, and a release's wheel metadata.

The sources are pip's configuration (`oracle/envs/installer.py`: the indexes and find-links every
environment is built from), never a list of this machine's: each index is read through the
simple API (JSON where the index offers it, else its HTML page), each find-links entry as a
folder or a page of links. A release is listed by its wheels; its metadata is the `METADATA` file
of one of them, downloaded whole (checked against the index's sha256 when it gives one) and read
from the archive without installing or running anything.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import ssl
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from oracle.envs.pip_config import Sources
from oracle.errors import OracleUserError

PROJECT = "coreai-torch"
# A wheel is a few hundred kB; a page of links a few kB. Anything far larger is not what it says.
MAX_WHEEL = 64 * 1024 * 1024
MAX_PAGE = 16 * 1024 * 1024
_WHEEL = re.compile(
    r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+"
    r"\.whl$"
)
_JSON = "application/vnd.pypi.simple.v1+json"


class SourceError(OracleUserError):
    """A package source cannot be read: one line naming it."""


class _Absent(Exception):
    """The page or file is not there (HTTP 404, no such file): the project is not listed."""


@dataclass(frozen=True)
class WheelFile:
    version: str
    filename: str
    url: str  # where it is downloaded from (a file:// URL for a folder)
    sha256: str  # as the source lists it ("" when it gives none)
    where: str  # the index or find-links entry that lists it

    @property
    def universal(self) -> bool:
        return self.filename.endswith("-none-any.whl")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_version(filename: str, project: str = PROJECT) -> str | None:
    """The version of one of `project`'s wheels, from its file name; None for another file."""
    found = _WHEEL.match(Path(urllib.parse.unquote(filename)).name)
    if not found or _normal(found.group("name")) != _normal(project):
        return None
    return found.group("version")


class _Links(HTMLParser):
    """Anchors of a simple-API page or a find-links page: (href, yanked)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            found = dict(attrs)
            if found.get("href"):
                self.links.append((str(found["href"]), "data-yanked" in found))


class Reader:
    """Reads pages and files of the configured sources, with their certificate bundle, proxy
    and timeout."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        handlers: list[urllib.request.BaseHandler] = [
            urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=sources.cert))
        ]
        if sources.proxy:
            handlers.append(
                urllib.request.ProxyHandler({"http": sources.proxy, "https": sources.proxy})
            )
        self.opener = urllib.request.build_opener(*handlers)

    def get(self, url: str, limit: int, accept: str = "") -> tuple[bytes, str, str]:
        """The body of `url`, its content type and its final URL (after redirects)."""
        if url.startswith("file:"):
            path = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
            if path.is_dir():
                path = path / "index.html"
            try:
                with open(path, "rb") as handle:
                    return handle.read(limit + 1)[:limit], "text/html", path.as_uri()
            except FileNotFoundError:
                raise _Absent(url) from None
            except OSError as exc:
                raise SourceError(f"{url}: {exc.strerror or exc}") from None
        request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
        try:
            with self.opener.open(request, timeout=self.sources.timeout) as response:
                body = response.read(limit + 1)
                if len(body) > limit:
                    raise SourceError(f"{url}: more than {limit // (1024 * 1024)} MiB")
                return body, response.headers.get("Content-Type", ""), response.geturl()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise _Absent(url) from None
            raise SourceError(f"{url}: HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise SourceError(f"{url}: {reason}") from None


def _from_index(reader: Reader, index: str, project: str) -> list[WheelFile]:
    url = f"{index.rstrip('/')}/{_normal(project)}/"
    try:
        body, kind, final = reader.get(url, MAX_PAGE, f"{_JSON}, text/html;q=0.1")
    except _Absent:
        return []  # the project is not on this index
    out = []
    if _JSON in kind:
        try:
            files = json.loads(body).get("files", [])
        except (ValueError, AttributeError):
            raise SourceError(f"{url}: not a simple-API JSON page") from None
        for f in files:
            if not isinstance(f, dict) or f.get("yanked"):
                continue
            version = wheel_version(str(f.get("filename", "")), project)
            if version is not None:
                out.append(
                    WheelFile(
                        version,
                        f["filename"],
                        urllib.parse.urljoin(final, str(f.get("url", ""))),
                        str((f.get("hashes") or {}).get("sha256", "")),
                        index,
                    )
                )
        return out
    return _linked(body, final, index, project)


def _linked(body: bytes, base: str, where: str, project: str) -> list[WheelFile]:
    parser = _Links()
    parser.feed(body.decode("utf-8", errors="replace"))
    out = []
    for href, yanked in parser.links:
        url = urllib.parse.urljoin(base, href)
        path, _, fragment = url.partition("#")
        name = Path(urllib.parse.unquote(urllib.parse.urlparse(path).path)).name
        version = wheel_version(name, project)
        if version is None or yanked:
            continue
        sha = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else ""
        out.append(WheelFile(version, name, path, sha, where))
    return out


def _from_links(reader: Reader, entry: str, project: str) -> list[WheelFile]:
    local = (
        Path(urllib.request.url2pathname(urllib.parse.urlparse(entry).path))
        if entry.startswith("file:")
        else (Path(entry).expanduser() if "://" not in entry else None)
    )
    if local is not None:
        if not local.is_dir():
            return []  # pip ignores a find-links entry that is not there, and so does this
        return [
            WheelFile(v, p.name, p.resolve().as_uri(), "", entry)
            for p in sorted(local.iterdir())
            if p.is_file() and (v := wheel_version(p.name, project)) is not None
        ]
    try:
        body, _, final = reader.get(entry, MAX_PAGE)
    except _Absent:
        return []
    return _linked(body, final, entry, project)


def listed(
    sources: Sources, project: str = PROJECT
) -> tuple[dict[str, list[WheelFile]], list[str]]:
    """version -> the wheels the sources list for it (universal ones first), and one line per
    source that could not be read."""
    reader = Reader(sources)
    found: dict[str, list[WheelFile]] = {}
    problems: list[str] = []
    readers = [(i, _from_index) for i in sources.indexes] + [
        (f, _from_links) for f in sources.find_links
    ]
    for where, read in readers:
        try:
            files = read(reader, where, project)
        except SourceError as exc:
            problems.append(str(exc))
            continue
        for f in files:
            found.setdefault(f.version, []).append(f)
    for files in found.values():
        files.sort(key=lambda f: not f.universal)
    return found, problems


def metadata(wheel: WheelFile, sources: Sources, reader: Reader | None = None) -> tuple[str, str]:
    """The wheel's METADATA text and the wheel's sha256, checked against the one its source
    lists (SourceError when it differs or the archive holds no metadata). `reader`: one for
    every wheel of a discovery (making one loads the certificate bundle: 85 ms, which made
    3,000 wheels minutes)."""
    body, _, _ = (reader or Reader(sources)).get(wheel.url, MAX_WHEEL)
    digest = hashlib.sha256(body).hexdigest()
    if wheel.sha256 and digest != wheel.sha256:
        raise SourceError(
            f"{wheel.filename}: sha256 {digest[:12]}... is not the "
            f"{wheel.sha256[:12]}... {wheel.where} lists"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            names = [n for n in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
            if len(names) != 1:
                raise SourceError(
                    f"{wheel.filename}: {len(names)} dist-info METADATA files, not one"
                )
            info = archive.getinfo(names[0])
            if info.file_size > MAX_PAGE:
                raise SourceError(f"{wheel.filename}: a METADATA of {info.file_size} bytes")
            text = archive.read(names[0]).decode("utf-8", errors="replace")
    except zipfile.BadZipFile:
        raise SourceError(f"{wheel.filename}: not a wheel (no zip archive)") from None
    return text, digest
