from dedupe import unique


def test_keeps_first_seen_order():
    assert unique([3, 1, 3, 2, 1]) == [3, 1, 2]


def test_empty():
    assert unique([]) == []


def test_unhashable_items_are_not_required():
    assert unique(["a", "b", "a"]) == ["a", "b"]
