import pytest

from slugify import slugify


def test_ascii():
    assert slugify("Plain Title 2") == "plain-title-2"


def test_accents_are_transliterated():
    assert slugify("Déjà vu") == "deja-vu"


@pytest.mark.parametrize(
    ("title", "slug"),
    [("Hello, World!", "hello-world"), ("Crème brûlée", "creme-brulee")],
    ids=["hello, world", "crème brûlée"],
)
def test_examples(title, slug):
    assert slugify(title) == slug
