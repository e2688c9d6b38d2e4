"""Hostile or broken inputs get one line naming the file and the problem, and the run goes on.

A JSONL line nested hundreds of thousands of levels deep is a bad line, listed by number; an ``.xlsx`` that
is not a zip, or a zip bomb, is refused before it is unpacked; a cache file overwritten with garbage is
moved aside and a fresh one started; a cache folder that cannot be written leaves the run without a cache.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import subprocess
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from typer.testing import CliRunner

from halluscope.benchmarks.pope import Pope
from halluscope.benchmarks.reefknot import load_reefknot_responses
from halluscope.cache import Cache, CacheWarning
from halluscope.importers import detect_external, xlsx
from halluscope.importers.vlmevalkit import read_table
from halluscope.jsonio import iter_jsonl, loads_json
from halluscope.responses import ResponsesError, load_responses
from halluscope.runs.store import scan_records
from tests.paths import PEER_OUTPUTS_EXCERPT, POPE_EXCERPT

DEEP = '{"id": "x", "response": ' + "[" * 200_000 + "]" * 200_000 + "}"


def invoke(*args: str) -> Any:
    from halluscope.cli.main import app

    return CliRunner().invoke(app, list(args), terminal_width=400)


def said(result: Any) -> str:
    return " ".join(result.output.split())


def pope_ids(count: int) -> list[str]:
    return [s.id for s in Pope(POPE_EXCERPT, sources=["coco"]).samples()][:count]


# -- JSON nested too deeply ------------------------------------------------------------------------------


def test_a_deep_line_of_a_responses_file_is_a_bad_line_and_the_run_goes_on(tmp_path: Path) -> None:
    first, second = pope_ids(2)
    answers = tmp_path / "answers.jsonl"
    rows = [json.dumps({"id": first, "response": "Yes"}), DEEP, json.dumps({"id": second, "response": "No"})]
    answers.write_text("\n".join(rows) + "\n")
    result = invoke(
        "run", "-b", "pope", "--data", str(POPE_EXCERPT), "--responses", str(answers),
        "--only-answered", "--no-cache", "--out", str(tmp_path / "run"), "-q",
    )
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output
    assert "answers.jsonl line 2: nested too deeply (more than 100 levels of lists and objects)" in said(result)
    scored = [json.loads(line)["id"] for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert sorted(scored) == sorted([first, second])


def test_every_jsonl_reader_lists_a_deep_line(tmp_path: Path) -> None:
    good = json.dumps({"id": "a", "response": "yes"})
    path = tmp_path / "answers.jsonl"
    path.write_text(f"{good}\n{DEEP}\n")
    assert [line.ok for line in iter_jsonl(path)] == [True, False]
    loaded = load_responses(path)
    assert set(loaded.responses) == {"a"}
    assert loaded.problems == ["answers.jsonl line 2: nested too deeply (more than 100 levels of lists and "
                               "objects) at column 124"]
    # Reefknot's layout, and a deep first line where the layout of a file is sniffed.
    reef = tmp_path / "reef.jsonl"
    row = {"image_id": "1", "query_prompt": "Is there a cat?", "label": "yes", "type": "Yes/No", "response": "yes"}
    reef.write_text(f"{json.dumps(row)}\n{DEEP}\n")
    assert any(p.startswith("reef.jsonl line 2: nested too deeply") for p in load_reefknot_responses(reef).problems)
    sniffed = tmp_path / "first.jsonl"
    sniffed.write_text(f"{DEEP}\n{good}\n")
    assert detect_external(sniffed) is None
    assert any("line 1: nested too deeply" in p for p in load_responses(sniffed).problems)


def test_a_deep_line_of_a_run_log_is_a_corrupt_line(tmp_path: Path) -> None:
    """pydantic refuses the line ("recursion limit exceeded"); it is then read the long way, to say why."""
    (tmp_path / "samples.jsonl").write_text(DEEP + "\n")
    scan = scan_records(tmp_path)
    assert scan.records == []
    assert [str(c) for c in scan.corrupt] == [
        "samples.jsonl line 1: nested too deeply (more than 100 levels of lists and objects) at column 124"
    ]


def test_a_deep_json_file_is_bad_json_not_a_recursion_error() -> None:
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        loads_json("[" * 200_000 + "]" * 200_000)
    assert loads_json('{"a": [[1]]}', max_depth=3) == {"a": [[1]]}
    with pytest.raises(json.JSONDecodeError, match="more than 2 levels"):
        loads_json('{"a": [[1]]}', max_depth=2)
    assert loads_json('{"a": "[[[[[["}', max_depth=2) == {"a": "[[[[[["}  # brackets in a string do not count


# -- .xlsx sheets ---------------------------------------------------------------------------------------


def _sheet_zip(path: Path, sheet_xml: Iterator[bytes], *, level: int = 6) -> Path:
    """A real workbook (openpyxl's own parts) whose first sheet is written from ``sheet_xml`` chunk by chunk."""
    template = io.BytesIO()
    openpyxl.Workbook().save(template)
    sheet_name = "xl/worksheets/sheet1.xml"
    with zipfile.ZipFile(template) as parts, zipfile.ZipFile(
        path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=level
    ) as archive:
        for part in parts.infolist():
            if part.filename != sheet_name:
                archive.writestr(part.filename, parts.read(part))
        with archive.open(sheet_name, "w", force_zip64=True) as member:
            for chunk in sheet_xml:
                member.write(chunk)
    return path


def _rows(count: int) -> Iterator[bytes]:
    """A sheet of ``count`` rows (a header, then the same answer again and again)."""
    yield (
        b'<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        b'<sheetData><row><c t="inlineStr"><is><t>prediction</t></is></c></row>'
    )
    row = b'<row><c t="inlineStr"><is><t>yes</t></is></c></row>'
    chunk = row * 20_000
    for _ in range(count // 20_000):
        yield chunk
    yield row * (count % 20_000)
    yield b"</sheetData></worksheet>"


def test_an_xlsx_that_is_not_a_zip_is_one_line_naming_the_file(tmp_path: Path) -> None:
    sheet = tmp_path / "vila_POPE.xlsx"
    sheet.write_text("index\tquestion\tprediction\n1\tIs there a cat?\tYes\n")  # a TSV saved as .xlsx
    result = invoke(
        "run", "-b", "pope", "--data", str(POPE_EXCERPT), "--responses", str(sheet), "--no-cache",
        "--out", str(tmp_path / "run"),
    )
    assert result.exit_code == 2
    assert "Traceback" not in result.output and "BadZipFile" not in result.output.split("(")[0]
    assert f"{sheet}: not an .xlsx workbook (not a zip archive" in said(result)
    assert said(result).count("error:") == 1 and said(result).startswith("error:")  # that message, nothing else


def test_a_zip_bomb_is_refused_before_it_is_unpacked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = _sheet_zip(tmp_path / "bomb.xlsx", _rows(6_000))  # 310 KB of rows, packed to a few KB
    assert bomb.stat().st_size < 50_000
    assert len(list(read_table(bomb))) == 6_000  # a real sheet: read in full under the default caps
    monkeypatch.setattr(xlsx, "MAX_UNPACKED_BYTES", 200_000)
    with pytest.raises(ResponsesError, match=r"bomb\.xlsx: refused, its members would unpack to more than 195 KB"):
        list(read_table(bomb))
    monkeypatch.setattr(xlsx, "MAX_UNPACKED_BYTES", 512 << 20)
    monkeypatch.setattr(xlsx, "RATIO_FLOOR_BYTES", 1000)
    with pytest.raises(ResponsesError, match=r"bomb\.xlsx: refused, its member xl/worksheets/sheet1\.xml would "
                       r"unpack to [\d,]+ times its packed size \(the limit is 200 times"):
        list(read_table(bomb))


def test_a_sheet_with_broken_xml_is_one_line_naming_the_file(tmp_path: Path) -> None:
    broken = _sheet_zip(tmp_path / "cut.xlsx", iter([next(_rows(0)), b"<row><c"]))  # a sheet cut short
    with pytest.raises(ResponsesError, match=r"cut\.xlsx: not a readable \.xlsx workbook \(unclosed token"):
        list(read_table(broken))


@pytest.fixture(scope="module")
def big_bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sheet that declares (honestly) 600 MB of rows, in a zip of a few MB: more than the default cap."""
    folder = tmp_path_factory.mktemp("bomb")
    return _sheet_zip(folder / "huge_POPE.xlsx", _rows(12_000_000), level=1)


def test_the_default_cap_refuses_a_600_mb_sheet_at_once(big_bomb: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(big_bomb) as archive:
        assert sum(m.file_size for m in archive.infolist()) > 600_000_000
    assert big_bomb.stat().st_size < 10_000_000
    result = invoke(
        "run", "-b", "pope", "--data", str(POPE_EXCERPT), "--responses", str(big_bomb), "--no-cache",
        "--out", str(tmp_path / "run"),
    )
    assert result.exit_code == 2
    assert f"{big_bomb}: refused, its members would unpack to more than 512 MB" in said(result)
    assert "Traceback" not in result.output


def test_reading_stops_past_the_row_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["index", "question", "prediction"])
    for index in range(50):
        sheet.append([index, "Is there a cat in the image?", "Yes"])
    path = tmp_path / "sheet.xlsx"
    book.save(path)
    assert len(list(read_table(path))) == 50  # an ordinary sheet passes every check
    monkeypatch.setattr(xlsx, "MAX_ROWS", 20)
    with pytest.raises(ResponsesError, match=r"sheet\.xlsx: refused, the first sheet holds more than 20 rows"):
        list(read_table(path))
    monkeypatch.setattr(xlsx, "MAX_ROWS", 1000)
    monkeypatch.setattr(xlsx, "MAX_CELLS", 60)
    with pytest.raises(ResponsesError, match=r"or 60 cells"):
        list(read_table(path))


def test_a_real_vlmevalkit_sheet_saved_as_xlsx_still_reads(tmp_path: Path) -> None:
    tsv = PEER_OUTPUTS_EXCERPT / "vlmevalkit-vila-1.5-8b" / "vila_8b_POPE_auxmatch.tsv"
    rows = [row for _, row in read_table(tsv)]
    book = openpyxl.Workbook()
    sheet = book.active
    header = list(rows[0])
    sheet.append(header)
    for row in rows:
        sheet.append([row[h] for h in header])
    path = tmp_path / "vila_8b_POPE.xlsx"
    book.save(path)
    assert [{k: str(v) for k, v in row.items()} for _, row in read_table(path)] == rows


# -- the cache ------------------------------------------------------------------------------------------


def test_a_cache_overwritten_with_garbage_is_moved_aside_and_a_fresh_one_started(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(os.urandom(64_000))
    with pytest.warns(CacheWarning) as caught:
        cache = Cache(path)
    (message,) = [str(w.message) for w in caught]
    assert message.startswith(f"cache {path} is not a usable SQLite database (file is not a database): moved it to "
                              "cache.sqlite.corrupt-")
    aside = [p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and aside[0] in message
    cache.put("judge", "k", {"label": "supported"})
    cache.close()
    assert Cache(path).get("judge", "k") == {"label": "supported"}  # the fresh cache is a real one


def test_a_run_with_a_garbage_cache_says_so_in_one_line_and_goes_on(tmp_path: Path) -> None:
    (first,) = pope_ids(1)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"id": first, "response": "Yes"}) + "\n")
    cache = tmp_path / "c" / "cache.sqlite"
    cache.parent.mkdir()
    cache.write_text("this is not a database\n" * 100)
    result = invoke(
        "run", "-b", "pope", "--data", str(POPE_EXCERPT), "--responses", str(answers), "--only-answered",
        "--cache", str(cache), "--out", str(tmp_path / "run"), "-q",
    )
    assert result.exit_code == 0, result.output
    assert "DatabaseError" not in result.output
    assert f"cache {cache} is not a usable SQLite database" in said(result)
    assert (tmp_path / "run" / "metrics.json").exists()


@contextlib.contextmanager
def read_only_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A folder nothing can be written in, and how it was made so.

    As root ``chmod`` blocks nothing, so a read-only bind mount is used; where mounting is not allowed
    either, ``sqlite3.connect`` is made to raise the error SQLite gives for such a folder.
    """
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder, "chmod"
        finally:
            folder.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "--bind", "-o", "ro", str(folder), str(folder)], capture_output=True)
    if mounted.returncode == 0:
        try:
            yield folder, "mount"
        finally:
            subprocess.run(["umount", str(folder)], check=True)
        return
    real_connect = sqlite3.connect

    def refuse(target: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if str(target).startswith(str(folder)):
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(target, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", refuse)
    yield folder, "sqlite3.connect made to fail"


def test_a_read_only_cache_folder_means_a_run_without_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with read_only_folder(tmp_path, monkeypatch) as (folder, how):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cache = Cache(folder / "cache.sqlite")
        messages = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
        assert len(messages) == 1, how
        # named as the folder where the folder is refused; as the file where only opening it is made to fail
        assert messages[0].startswith(f"cache folder {folder}: " if how != "sqlite3.connect made to fail"
                                      else f"cache {folder / 'cache.sqlite'}: "), (how, messages)
        assert "cannot be opened or written" in messages[0] and "going on without a cache" in messages[0]
        cache.put("n", "k", 1)
        assert cache.get("n", "k") == 1  # kept in memory for this run
        assert not (folder / "cache.sqlite").exists()
