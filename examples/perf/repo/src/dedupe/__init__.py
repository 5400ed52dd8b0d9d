from dedupe.core import unique

__all__ = ["unique"]
