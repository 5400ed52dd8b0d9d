from textstats.words import word_count, words

__all__ = ["word_count", "words"]
