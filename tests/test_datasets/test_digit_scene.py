"""Digits on random scenes: fixed test scenes, size, position and
contrast."""
import numpy as np
import pytest
from mmengine.registry import init_default_scope
from sklearn.datasets import load_digits

from mmdet.registry import TRANSFORMS
from rankloss_lab.datasets import (DigitInstancesDataset, RandomDigitScene,
                                   render_digit_scene)

init_default_scope('mmdet')


DIGITS = np.round(load_digits().images * (255 / 16)).astype(np.uint8)


def digit(i=0):
    return DIGITS[i]


def grey(colours):
    return np.asarray(colours, dtype=np.float64).mean(-1)


def test_test_scenes_are_fixed_per_sample_in_any_order():
    dataset = DigitInstancesDataset(split='test', pipeline=[])
    infos = [dataset.get_data_info(i) for i in range(6)]
    first = TRANSFORMS.build(dict(type='RandomDigitScene', seed=0))
    scenes = [first(dict(info))['img'] for info in infos]
    assert scenes[0].shape == (48, 48, 3) and scenes[0].dtype == np.uint8
    # a fresh transform, the global generator moved, reverse order
    np.random.seed(123)
    again = RandomDigitScene(seed=0)
    for info, scene in zip(infos[::-1], scenes[::-1]):
        np.testing.assert_array_equal(again(dict(info))['img'], scene)
    # another seed, or another sample, gives another scene
    other = RandomDigitScene(seed=1)(dict(infos[0]))['img']
    assert np.abs(other.astype(int) - scenes[0]).mean() > 10
    assert np.abs(scenes[1].astype(int) - scenes[0]).mean() > 10
    with pytest.raises(ValueError, match='sample_idx'):
        RandomDigitScene(seed=0)(dict(img=digit()))


def test_training_scenes_change_on_every_call_and_follow_numpy_seed():
    transform = RandomDigitScene(canvas_size=32, scale_range=(12, 28))

    def draw(seed):
        np.random.seed(seed)
        return transform(dict(img=digit()))['img']

    assert draw(0).shape == (32, 32, 3)
    np.testing.assert_array_equal(draw(0), draw(0))
    assert np.abs(draw(0).astype(int) - draw(1)).mean() > 10


def test_stroke_keeps_the_minimum_contrast_in_both_polarities():
    signs, centres = [], []
    for seed in range(40):
        img, mask, colour, local = render_digit_scene(
            digit(seed), np.random.default_rng(seed), min_contrast=80)
        # the colour drawn, and the pixels that show it
        assert abs(grey(colour) - grey(local)) >= 80 - 1e-9
        ink = mask > 0.97
        assert ink.any()
        shown = grey(img[ink]).mean()
        assert abs(shown - grey(local)) >= 80 - 4
        signs.append(np.sign(grey(colour) - grey(local)))
        ys, xs = np.nonzero(mask > 0.5)
        centres.append((xs.mean(), ys.mean()))
        # the whole digit is on the canvas: its 8 x 8 patch may at most
        # reach the edge (half of an edge pixel inked)
        border = np.concatenate(
            [mask[0], mask[-1], mask[:, 0], mask[:, -1]])
        assert border.max() < 0.8
    # dark on light and light on dark, and positions all over the canvas
    assert 10 <= signs.count(1) <= 30
    assert np.std(np.array(centres), axis=0).min() > 4


@pytest.mark.parametrize('kwargs', [
    dict(canvas_size=4),
    dict(scale_range=(20, 60)),
    dict(scale_range=(30, 20)),
    dict(max_rotation=-1),
    dict(min_contrast=200),
    dict(seed=-1),
    dict(seed=1.5),
    dict(texture=1.5),
    dict(texture=True),
    dict(polarity='dark'),
])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        RandomDigitScene(**kwargs)


def test_bad_input():
    with pytest.raises(ValueError, match='2-D grayscale'):
        RandomDigitScene()(dict(img=np.zeros((8, 8, 3), np.uint8)))
    with pytest.raises(ValueError, match='some ink'):
        render_digit_scene(np.zeros((8, 8)), np.random.default_rng(0))


def test_texture_and_polarity_reach_the_renderer():
    """A flat background (texture 0) with a lighter stroke: the canvas holds
    only the background colour and lighter ink."""
    transform = RandomDigitScene(canvas_size=32, scale_range=(16, 24),
                                 texture=0.0, polarity='light', seed=3)
    img = transform(dict(img=digit(5), sample_idx=0))['img'].astype(float)
    corner = img[0, 0]
    background = np.all(np.abs(img - corner) < 1, axis=-1)
    assert background.mean() > 0.5  # flat: most pixels equal the corner
    assert bool((grey(img[~background]) > grey(corner)).all())
    assert 'texture=0.0' in repr(transform)
