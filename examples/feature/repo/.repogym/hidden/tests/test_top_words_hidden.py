import textstats


def test_ties_break_alphabetically():
    assert textstats.top_words("pear apple pear apple fig", 3) == [
        ("apple", 2),
        ("pear", 2),
        ("fig", 1),
    ]
