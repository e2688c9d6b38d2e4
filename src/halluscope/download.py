"""Fetching a benchmark's official files: declared once, streamed, resumed, verified, never half-written.

Why one module: every benchmark that downloads its data when ``--data`` is omitted, ``halluscope data pull``
and ``halluscope eval --download`` need the same care, and a copy of the loop in each loader would drift.

- A benchmark module declares its files as a :class:`DataSet`: each :class:`RemoteFile` has its path in the
  data folder, its URL(s) (pinned to a commit where one is known) and, where the official bytes are known,
  its size and sha256. What cannot be fetched (photos, files behind a login) is a :class:`ByHand` step.
- :func:`fetch_file` streams into ``<target>.part`` in chunks. A ``.part`` left by an interrupted transfer
  is resumed with ``Range: bytes=N-`` (a ``206`` answer appends; a ``200`` answer starts over). The size and
  sha256 are checked before the part file is renamed; a mismatch removes the part file.
- A timeout bounds the connection, each silent read, and a trickle: fewer than :data:`STALL_BYTES` in a
  window of that many seconds is a stall, so a dead or crawling server cannot hang a command.
- Every failure is one line (:class:`FetchError`) naming the file and the URL; no traceback reaches a user.
- ``$HALLUSCOPE_DATA_MIRROR`` (say ``http://127.0.0.1:8000/``) replaces ``https://raw.githubusercontent.com/``
  in every URL, and other hosts' URLs become ``<mirror>/<host>/<path>``; with a mirror only the mirror is
  asked. ``$HALLUSCOPE_DOWNLOAD_TIMEOUT`` sets the timeout in seconds (default 30).

This module imports nothing of halluscope (the bottom layer): progress is reported through the small
:class:`TransferProgress` protocol, the caller's display.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from typing import IO, Any, BinaryIO

__all__ = [
    "DEFAULT_TIMEOUT",
    "MIRROR_ENV",
    "STALL_BYTES",
    "TIMEOUT_ENV",
    "ByHand",
    "DataSet",
    "FetchError",
    "FileOutcome",
    "PullReport",
    "RemoteFile",
    "TransferProgress",
    "default_timeout",
    "effective_urls",
    "fetch_file",
    "file_matches",
    "file_sha256",
    "github_files",
    "pull",
]

MIRROR_ENV = "HALLUSCOPE_DATA_MIRROR"
TIMEOUT_ENV = "HALLUSCOPE_DOWNLOAD_TIMEOUT"
DEFAULT_TIMEOUT = 30.0
#: Fewer bytes than this within one timeout window is a stalled transfer.
STALL_BYTES = 1024
GITHUB_RAW = "https://raw.githubusercontent.com/"
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class RemoteFile:
    """One official file: where it goes in the data folder, the URLs tried in order, and (when the official
    bytes are known) its size and sha256, checked before the file is kept."""

    path: str
    urls: tuple[str, ...]
    size: int | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class ByHand:
    """What cannot be fetched for the user (too large, behind a login, another tool's job): what it is, where
    to get it, the folder (relative to the data folder) to put it in, and the option that points at it."""

    what: str
    source: str
    into: str = ""
    option: str = ""


@dataclass(frozen=True)
class DataSet:
    """A benchmark's official data: ``name`` is its folder under the data root (the user cache's ``data/`` by
    default, the same folder names ``--data-root`` looks for); ``required`` is False for data only an option
    reads (RePOPE's labels for POPE)."""

    name: str
    title: str
    files: tuple[RemoteFile, ...] = ()
    by_hand: tuple[ByHand, ...] = ()
    required: bool = True

    def folder(self, root: Path) -> Path:
        return Path(root) / self.name


def github_files(
    repo: str, refs: Sequence[str], folder: str, files: Mapping[str, tuple[int | None, str | None]]
) -> tuple[RemoteFile, ...]:
    """Files of a GitHub repository as raw URLs: ``{path under folder: (size, sha256)}``, each URL tried at
    each ref in turn (a commit where known; else the branch names)."""
    return tuple(
        RemoteFile(
            path=path,
            urls=tuple(f"{GITHUB_RAW}{repo}/{ref}/{folder}{path}" for ref in refs),
            size=size,
            sha256=sha256,
        )
        for path, (size, sha256) in files.items()
    )


class TransferProgress(Protocol):
    """The display a transfer reports to: one file at a time, in bytes (``total`` None when unknown)."""

    def begin(self, label: str, total: int | None, done: int) -> None: ...
    def advance(self, n: int) -> None: ...
    def end(self, ok: bool) -> None: ...


class FetchError(Exception):
    """A file could not be fetched; ``str()`` is one line naming the file, the URL and why. ``offline`` is True
    when no server could be reached at all (no route, refused, unknown host)."""

    def __init__(self, message: str, *, offline: bool = False) -> None:
        super().__init__(message)
        self.offline = offline


def default_timeout() -> float:
    """``$HALLUSCOPE_DOWNLOAD_TIMEOUT`` seconds, else :data:`DEFAULT_TIMEOUT`."""
    value = os.environ.get(TIMEOUT_ENV, "").strip()
    try:
        return float(value) if value else DEFAULT_TIMEOUT
    except ValueError:
        return DEFAULT_TIMEOUT


def effective_urls(urls: Sequence[str]) -> list[str]:
    """The URLs asked: the declared ones, or, with ``$HALLUSCOPE_DATA_MIRROR`` set, their mirror copies only."""
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if not mirror:
        return list(urls)
    base = mirror if mirror.endswith("/") else mirror + "/"
    mirrored = []
    for url in urls:
        if url.startswith(GITHUB_RAW):
            mirrored.append(base + url[len(GITHUB_RAW) :])
        else:
            mirrored.append(base + url.split("://", 1)[-1])
    return list(dict.fromkeys(mirrored))


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read in blocks (a data file may be large), as hex."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_matches(path: Path, file: RemoteFile) -> bool:
    """The file at ``path`` is there with the declared size and sha256 (what is not declared is not checked)."""
    if not path.is_file():
        return False
    if file.size is not None and path.stat().st_size != file.size:
        return False
    return file.sha256 is None or file_sha256(path) == file.sha256


def fetch_file(
    file: RemoteFile, target: Path, *, timeout: float | None = None, progress: TransferProgress | None = None
) -> None:
    """Fetch ``file`` to ``target`` from the first URL that gives the right bytes; :class:`FetchError` if none.

    A ``<target>.part`` left by an earlier try is resumed. The file appears at ``target`` only once whole and
    verified.
    """
    urls = effective_urls(file.urls)
    if not urls:
        raise FetchError(f"{file.path}: no URL to fetch it from")
    seconds = timeout if timeout is not None else default_timeout()
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    failures: list[FetchError] = []
    for url in urls:
        try:
            _fetch_from(url, file, part, seconds, progress)
        except FetchError as error:
            failures.append(error)
            continue
        part.replace(target)
        return
    offline = all(f.offline for f in failures)
    raise FetchError("; ".join(str(f) for f in failures), offline=offline)


def _fetch_from(
    url: str, file: RemoteFile, part: Path, timeout: float, progress: TransferProgress | None
) -> None:
    """One URL: resume or start the part file, stream the rest, verify. Leaves a verified ``part``."""
    have = part.stat().st_size if part.is_file() else 0
    if have and file.size is not None and have >= file.size:
        if have == file.size and _verified(part, file, url):
            return
        part.unlink()
        have = 0
    for _attempt in range(2):  # a server that will not resume properly gets one fresh start
        restart = _stream(url, file, part, have, timeout, progress)
        if not restart:
            break
        part.unlink(missing_ok=True)
        have = 0
    else:
        raise FetchError(f"{file.path}: the server at {url} answered a resume request wrongly twice")
    _check(part, file, url)


def _verified(part: Path, file: RemoteFile, url: str) -> bool:
    try:
        _check(part, file, url)
    except FetchError:
        return False
    return True


def _check(part: Path, file: RemoteFile, url: str) -> None:
    """The size and sha256 as declared, else the part file goes and a one-line error says what differed."""
    size = part.stat().st_size
    if file.size is not None and size != file.size:
        part.unlink(missing_ok=True)
        raise FetchError(f"{file.path}: size mismatch from {url}: expected {file.size} bytes, got {size}")
    if file.sha256 is not None:
        got = file_sha256(part)
        if got != file.sha256:
            part.unlink(missing_ok=True)
            raise FetchError(
                f"{file.path}: checksum mismatch from {url}: expected sha256 {file.sha256}, got {got}"
            )


def _stream(
    url: str, file: RemoteFile, part: Path, have: int, timeout: float, progress: TransferProgress | None
) -> bool:
    """Append the body to ``part`` (from byte ``have``); True when the caller must start over without it."""
    import urllib.error  # here: http.client's import is ~50 ms every CLI command would pay
    import urllib.request

    request = urllib.request.Request(url, headers={"User-Agent": "halluscope"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        answer = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        if error.code == 416 and have:
            return True
        raise FetchError(f"{file.path}: HTTP {error.code} {error.reason} from {url}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise _connection_error(file, url, error, timeout) from None
    with answer:
        status = getattr(answer, "status", None) or 200
        if have and status == 206:
            if not _range_starts_at(answer.headers.get("Content-Range", ""), have):
                return True
            mode = "ab"
        else:
            if have and status != 200:
                return True
            have, mode = 0, "wb"  # a 200 to a Range request: the whole file again, from the start
        length = answer.headers.get("Content-Length")
        expected = have + int(length) if length and length.isdigit() else None
        total = expected if expected is not None else file.size
        if progress is not None:
            progress.begin(file.path, total, have)
        written = -1
        try:
            with part.open(mode) as out:
                written = _copy(answer, out, file, url, have, timeout, progress)
        finally:
            if progress is not None:
                progress.end(written >= 0 and (expected is None or written >= expected))
    if expected is not None and written < expected:
        raise FetchError(
            f"{file.path}: connection closed after {written} of {expected} bytes from {url}; run again to resume"
        )
    return False


def _range_starts_at(content_range: str, start: int) -> bool:
    """``Content-Range: bytes N-M/T`` answers a request from ``start``."""
    unit, _, spec = content_range.strip().partition(" ")
    first = spec.split("-", 1)[0]
    return unit == "bytes" and first.isdigit() and int(first) == start


class _Trickle(TimeoutError):
    """Data arrives, but too slowly to ever finish: a stall as much as silence is."""


def _chunks(answer: BinaryIO, timeout: float) -> Iterator[bytes]:
    """The body as it arrives, chunk by chunk; a trickle (under :data:`STALL_BYTES` in ``timeout`` seconds)
    ends it with :class:`TimeoutError`, as a silent socket does by itself."""
    import time

    read = getattr(answer, "read1", answer.read)
    window_start, window_bytes = time.monotonic(), 0
    while True:
        chunk = read(_CHUNK)
        if not chunk:
            return
        yield chunk
        window_bytes += len(chunk)
        now = time.monotonic()
        if now - window_start >= timeout:
            if window_bytes < STALL_BYTES:
                raise _Trickle(f"under {STALL_BYTES} bytes in {timeout:g} s")
            window_start, window_bytes = now, 0


def _copy(
    answer: BinaryIO,
    out: IO[Any],
    file: RemoteFile,
    url: str,
    have: int,
    timeout: float,
    progress: TransferProgress | None,
) -> int:
    """Copy the body into the part file and return its size; a stall or a dropped connection is a one-line
    error, and the part file is kept for the next try to resume."""
    written = have
    try:
        for chunk in _chunks(answer, timeout):
            out.write(chunk)
            written += len(chunk)
            if progress is not None:
                progress.advance(len(chunk))
            if file.size is not None and written > file.size:
                break
        return written
    except TimeoutError as error:
        why = str(error) if isinstance(error, _Trickle) else f"no data for {timeout:g} s"
        raise FetchError(
            f"{file.path}: timed out after {written} bytes from {url} ({why}); run again to resume"
        ) from None
    except (OSError, ValueError) as error:  # http.client.IncompleteRead is an HTTPException, below
        raise FetchError(
            f"{file.path}: connection lost after {written} bytes from {url} ({error}); run again to resume"
        ) from None
    except Exception as error:  # http.client.HTTPException and its kin: the body ended early
        if type(error).__module__ != "http.client":
            raise
        raise FetchError(
            f"{file.path}: transfer cut after {written} bytes from {url} ({type(error).__name__}); "
            "run again to resume"
        ) from None


def _connection_error(file: RemoteFile, url: str, error: BaseException, timeout: float) -> FetchError:
    """One line for a request that got no answer; ``offline`` when no server could be reached."""
    import socket

    reason = getattr(error, "reason", error)
    if isinstance(reason, TimeoutError | socket.timeout):
        return FetchError(f"{file.path}: timed out connecting to {url} (no answer in {timeout:g} s)")
    offline = isinstance(reason, ConnectionRefusedError | socket.gaierror) or (
        isinstance(reason, OSError) and reason.errno in _NO_ROUTE
    )
    return FetchError(f"{file.path}: cannot reach {url} ({reason})", offline=offline)


def _no_route_errnos() -> frozenset[int]:
    import errno

    names = ("ENETUNREACH", "EHOSTUNREACH", "ENETDOWN", "EHOSTDOWN", "ECONNREFUSED")
    return frozenset(getattr(errno, n) for n in names if hasattr(errno, n))


_NO_ROUTE = _no_route_errnos()


@dataclass(frozen=True)
class FileOutcome:
    """What became of one file: already there and verified, fetched now, or failed (with the one line)."""

    file: RemoteFile
    target: Path
    status: Literal["present", "fetched", "failed"]
    message: str = ""
    offline: bool = False


@dataclass
class PullReport:
    """One data set's pull: each file's outcome and the folder they went to."""

    data_set: DataSet
    folder: Path
    outcomes: list[FileOutcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(o.status != "failed" for o in self.outcomes)

    @property
    def failed(self) -> list[FileOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def offline(self) -> bool:
        """Every failure was a server out of reach: the machine is offline (or the mirror is down)."""
        return bool(self.failed) and all(o.offline for o in self.failed)

    def offline_line(self) -> str:
        """What to fetch by hand and where to put it, in one line."""
        urls = " ".join(effective_urls(o.file.urls)[0] for o in self.failed)
        return (
            f"{self.data_set.title}: no server could be reached; fetch {urls} into {self.folder} (keeping each "
            f"file's path under it), then pass --data {self.folder}"
        )


def pull(
    data_set: DataSet,
    folder: Path,
    *,
    timeout: float | None = None,
    progress: TransferProgress | None = None,
    verify_present: bool = True,
) -> PullReport:
    """Fetch every missing file of ``data_set`` into ``folder``; files already there and verified (or, without
    ``verify_present``, merely there) are kept. Never raises for a file: each outcome is in the report."""
    report = PullReport(data_set, Path(folder))
    unreachable: FetchError | None = None
    for file in data_set.files:
        target = report.folder / file.path
        there = file_matches(target, file) if verify_present else target.is_file()
        if there:
            report.outcomes.append(FileOutcome(file, target, "present"))
            continue
        if unreachable is not None:  # offline: asking again for each file would only wait longer
            report.outcomes.append(FileOutcome(file, target, "failed", str(unreachable), offline=True))
            continue
        try:
            fetch_file(file, target, timeout=timeout, progress=progress)
        except FetchError as error:
            report.outcomes.append(FileOutcome(file, target, "failed", str(error), error.offline))
            unreachable = error if error.offline else None
            continue
        report.outcomes.append(FileOutcome(file, target, "fetched"))
    return report
