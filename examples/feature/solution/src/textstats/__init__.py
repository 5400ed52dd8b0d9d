from textstats.words import top_words, word_count, words

__all__ = ["top_words", "word_count", "words"]
