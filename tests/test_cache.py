from halluscope.cache import Cache, content_key


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
