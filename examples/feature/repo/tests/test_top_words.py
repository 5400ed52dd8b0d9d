import textstats


def test_most_frequent_first():
    assert textstats.top_words("b a b c b a", 3) == [("b", 3), ("a", 2), ("c", 1)]


def test_n_limits_the_result():
    assert textstats.top_words("x y z x", 1) == [("x", 2)]
