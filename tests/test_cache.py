import sqlite3

import pytest

from halluscope.cache import Cache, CacheWarning, content_key


def test_values_persist_across_processes_and_namespaces_stay_apart(tmp_path):
    path = tmp_path / "cache.sqlite"
    first = Cache(path)
    key = content_key({"judge": "similarity", "threshold": 0.6}, "lamp is on")
    first.put_many("judge", {key: [{"label": "supported"}]})
    first.put_blobs("embed", {key: b"\x00\x01"})
    first.close()

    second = Cache(path)
    assert second.get("judge", key) == [{"label": "supported"}]
    assert second.get_blobs("embed", [key, "missing"]) == {key: b"\x00\x01"}
    assert second.get("extract", key) is None
    assert second.get_many("judge", ["missing"]) == {}
    assert second.count("judge") == 1


def test_content_keys_change_with_any_input():
    base = content_key({"model": "m", "t": 0.6}, "text")
    assert base == content_key({"t": 0.6, "model": "m"}, "text")  # key order does not matter
    assert base != content_key({"model": "m", "t": 0.7}, "text")
    assert base != content_key({"model": "m", "t": 0.6}, "text ")


def test_many_keys_are_looked_up_in_chunks():
    cache = Cache(None)
    items = {str(i): i for i in range(1234)}
    cache.put_many("n", items)
    assert cache.get_many("n", list(items)) == items


def test_a_cache_file_failing_mid_run_is_dropped_with_one_warning(tmp_path):
    """A file that fails once opened (damaged pages, a disk gone read-only) leaves the run going on in memory."""
    path = tmp_path / "cache.sqlite"
    cache = Cache(path)
    cache.put("judge", "k", 1)

    class Damaged:
        def execute(self, *args, **kwargs):
            raise sqlite3.DatabaseError("database disk image is malformed")

        def close(self):
            pass

    cache._conn = Damaged()  # what SQLite raises when it meets a damaged page
    with pytest.warns(CacheWarning, match=rf"cache {path}: failed while in use \(database disk image is malformed\); "
                      "going on without a cache"):
        assert cache.get("judge", "k") is None
    cache.put("judge", "k", 2)
    assert cache.get("judge", "k") == 2 and cache.count() == 1
