from textstats import word_count


def test_word_count():
    assert word_count("one two  three") == 3


def test_case_and_punctuation():
    assert word_count("Hello, hello! HELLO?") == 3
