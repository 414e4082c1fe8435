"""The glyph classification set that stands in for ImageNet: deterministic,
balanced over classes and faces, every class drawn with ink inside the
image, and disjoint from DigitsVOC's handwritten digits by construction."""
import numpy as np
import pytest

from rankloss_lab.datasets import glyphs as G


def test_classes_are_digits_then_letters():
    assert len(G.GLYPH_CLASSES) == 62
    assert G.GLYPH_CLASSES[:10] == '0123456789'  # label k is digit k
    assert len(set(G.GLYPH_CLASSES)) == 62


def test_every_face_draws_62_different_glyphs():
    from rankloss_lab.datasets.canvas import resize_patch
    fonts = G.glyph_fonts()
    assert len(fonts) == 21
    for font in fonts:
        shapes = {resize_patch(G._glyph_mask(font, c, 32, 0.0), 12,
                               12).round(1).tobytes()
                  for c in G.GLYPH_CLASSES}
        assert len(shapes) == 62, font


def test_same_seed_same_images_other_seed_other_images():
    a, la = G.make_glyph_set(70, seed=3, size=32)
    b, lb = G.make_glyph_set(70, seed=3, size=32)
    c, _ = G.make_glyph_set(70, seed=4, size=32)
    assert a.shape == (70, 32, 32, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b) and np.array_equal(la, lb)
    assert not np.array_equal(a, c)


def test_classes_are_balanced():
    _, labels = G.make_glyph_set(124, seed=0, size=24)
    assert labels.dtype == np.int64
    assert np.bincount(labels, minlength=62).tolist() == [2] * 62


def test_the_glyph_stands_out_from_its_background():
    # the same draws with the glyph painted and without it differ by at
    # least the promised contrast where the ink is
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    font = G.glyph_fonts()[0]
    img = G.render_glyph(rng_a, font, 'A', size=64).astype(float)
    bg = G.textured_background(rng_b, 64)
    G._strokes(rng_b, bg)
    diff = np.abs(img - bg).mean(axis=2)
    assert (diff > 40).sum() > 30  # dozens of ink pixels
    # and the ink lies inside the image: the border is background
    assert diff[0].max() < 40 or diff[-1].max() < 40


@pytest.mark.parametrize('kwargs, word', [
    (dict(count=0, seed=0), 'count'),
    (dict(count=2.5, seed=0), 'count'),
    (dict(count=4, seed=0, size=8), 'size'),
])
def test_bad_arguments_name_the_field(kwargs, word):
    with pytest.raises(ValueError, match=word):
        G.make_glyph_set(**kwargs)


def test_a_face_without_a_glyph_is_named(tmp_path):
    font = [f for f in G.glyph_fonts()][0]
    with pytest.raises(ValueError, match=r"draws no ink for ' '"):
        G._glyph_mask(font, ' ', 20, 0.0)
