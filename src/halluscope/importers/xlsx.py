"""Reading an ``.xlsx`` sheet without trusting it: checked as a zip before openpyxl opens it, read with caps.

Why: an ``.xlsx`` is a zip of XML files, and a few megabytes of zip can unpack to gigabytes of XML (a "zip
bomb"); openpyxl would then parse for many minutes with growing memory and no output. A file that is not a
zip at all would surface as a ``BadZipFile`` traceback. So, before openpyxl sees the file:

- it must be a zip archive;
- the sizes its members declare, unpacked, must sum to at most :data:`MAX_UNPACKED_BYTES`, and no large
  member may unpack to more than :data:`MAX_RATIO` times its packed size (real sheets pack about 5–30
  times). Python's ``zipfile``, which openpyxl reads through, never hands out more than a member's declared
  size, so these declared sizes bound what can be unpacked;

and while reading, rows and cells are counted and reading stops past :data:`MAX_ROWS` / :data:`MAX_CELLS`
(a small sheet can also declare a row a million rows down, which openpyxl fills with empty rows).
Every refusal is a :class:`~halluscope.responses.ResponsesError` naming the file and the limit.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from halluscope.responses import ResponsesError

__all__ = ["MAX_CELLS", "MAX_RATIO", "MAX_ROWS", "MAX_UNPACKED_BYTES", "check_xlsx", "iter_xlsx_rows"]

#: Most bytes all members of a workbook may unpack to (VLMEvalKit's largest sheets unpack to a few MB).
MAX_UNPACKED_BYTES = 512 << 20
#: Most a member may grow when unpacked (unpacked / packed size), checked for members past
#: :data:`RATIO_FLOOR_BYTES`; ordinary sheet XML stays well below it.
MAX_RATIO = 200
#: Members smaller than this unpacked are not held to :data:`MAX_RATIO` (tiny members compress oddly).
RATIO_FLOOR_BYTES = 1 << 20
#: Most rows read from the first sheet, empty ones included (Excel's own limit is 1,048,576).
MAX_ROWS = 1_048_576
#: Most cells read from the first sheet, empty ones included.
MAX_CELLS = 20_000_000

_WHAT_TO_DO = "export the sheet as .tsv or .csv, or pass the answers as JSONL"


def _size(size: int) -> str:
    return f"{size >> 20:,} MB" if size >= 1 << 20 else f"{size >> 10:,} KB"


def check_xlsx(path: Path) -> None:
    """Raise :class:`ResponsesError` naming ``path`` when it is not a zip or would unpack too large."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except zipfile.BadZipFile as error:
        raise ResponsesError(
            f"{path}: not an .xlsx workbook (not a zip archive: {error}); {_WHAT_TO_DO}"
        ) from error
    total = 0
    for member in members:
        total += member.file_size
        if total > MAX_UNPACKED_BYTES:
            raise ResponsesError(
                f"{path}: refused, its members would unpack to more than {_size(MAX_UNPACKED_BYTES)} (the limit "
                f"for an .xlsx; a zip bomb?); {_WHAT_TO_DO}"
            )
        ratio = member.file_size / max(member.compress_size, 1)
        if member.file_size > RATIO_FLOOR_BYTES and ratio > MAX_RATIO:
            raise ResponsesError(
                f"{path}: refused, its member {member.filename} would unpack to {ratio:,.0f} times its packed "
                f"size (the limit is {MAX_RATIO} times; a zip bomb?); {_WHAT_TO_DO}"
            )


def iter_xlsx_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The first sheet's non-empty rows by header, with their 1-based row numbers (the header is row 1)."""
    try:
        import openpyxl
    except ImportError as error:  # pragma: no cover - openpyxl is in the "import" extra
        raise ResponsesError('reading .xlsx needs openpyxl: pip install "halluscope[import]"') from error
    check_xlsx(path)
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, SyntaxError) as error:  # XML errors are SyntaxErrors
        raise ResponsesError(f"{path}: not a readable .xlsx workbook ({error}); {_WHAT_TO_DO}") from error
    try:
        if not book.worksheets:
            raise ResponsesError(f"{path}: the workbook holds no sheet")
        rows = book.worksheets[0].iter_rows(values_only=True)
        header = [str(h) if h is not None else "" for h in next(rows, ())]
        cells = len(header)
        for number, values in enumerate(rows, start=2):
            cells += len(values or ())
            if number > MAX_ROWS or cells > MAX_CELLS:
                raise ResponsesError(
                    f"{path}: refused, the first sheet holds more than {MAX_ROWS:,} rows or {MAX_CELLS:,} cells "
                    f"(the limits for an .xlsx); {_WHAT_TO_DO}"
                )
            if values is None or all(v is None for v in values):
                continue
            yield number, {h: v for h, v in zip(header, values, strict=False) if h}
    except (zipfile.BadZipFile, SyntaxError) as error:  # a member failing its checksum, or broken sheet XML
        raise ResponsesError(f"{path}: not a readable .xlsx workbook ({error}); {_WHAT_TO_DO}") from error
    finally:
        book.close()
