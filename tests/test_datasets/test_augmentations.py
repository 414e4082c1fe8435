"""The AUC recipe's augmentations and the batch-aware class views."""
import numpy as np
import pytest
import torch
from mmengine.dataset import pseudo_collate
from mmengine.registry import init_default_scope
from torch.utils.data import DataLoader

from mmdet.registry import TRANSFORMS
from mmdet_rankloss.datasets import (AugmentLaterViews, RandomMotionBlur,
                                     RandomZoom)
from mmdet_rankloss.datasets.augmentations import motion_blur_kernel
from mmdet_rankloss.samplers import PKSampler
from rankloss_lab.datasets import DigitInstancesDataset

init_default_scope('mmdet')


def image(shape=(24, 32, 3), seed=0):
    return np.random.default_rng(seed).integers(0, 256, shape, np.uint8)


def run(transform, img, seed):
    np.random.seed(seed)
    return transform(dict(img=img.copy()))['img']


@pytest.mark.parametrize('shape', [(24, 32, 3), (24, 32), (24, 32, 1)])
@pytest.mark.parametrize('cfg', [
    dict(type='RandomZoom', scale_range=(0.7, 1.4), prob=1.0),
    dict(type='RandomMotionBlur', kernel_size=(3, 7), prob=1.0)
])
def test_shape_dtype_seed_and_not_identity(cfg, shape):
    transform = TRANSFORMS.build(cfg)
    img = image(shape)
    out = run(transform, img, 3)
    assert out.shape == img.shape and out.dtype == img.dtype
    np.testing.assert_array_equal(out, run(transform, img, 3))
    assert not np.array_equal(out, img)
    outs = [run(transform, img, seed) for seed in range(4)]
    assert any(not np.array_equal(outs[0], o) for o in outs[1:])
    float_img = img.astype(np.float32)
    assert run(transform, float_img, 3).dtype == np.float32
    never = TRANSFORMS.build(dict(cfg, prob=0.0))
    np.testing.assert_array_equal(run(never, img, 3), img)


def test_zoom_in_and_out():
    img = np.full((20, 40, 3), 200, np.uint8)
    zoom_in = RandomZoom(scale_range=(1.5, 1.5), prob=1.0)
    np.testing.assert_array_equal(run(zoom_in, img, 0), img)  # flat stays
    # zoom in on a ramp: a crop of the stretched ramp, steps shrink
    ramp = np.tile(np.arange(40, dtype=np.float32) * 4, (20, 1))
    out = run(zoom_in, ramp, 0)
    assert np.median(np.diff(out[10])) == pytest.approx(4 / 1.5, rel=0.05)
    zoom_out = RandomZoom(scale_range=(0.5, 0.5), prob=1.0,
                          pad_val=(1, 2, 3))
    out = run(zoom_out, img, 0)
    inside = (out == 200).all(axis=2)
    assert inside.sum() == 10 * 20  # a (10, 20) image on the canvas
    rows, cols = np.nonzero(inside)
    assert np.ptp(rows) == 9 and np.ptp(cols) == 19
    np.testing.assert_array_equal(out[~inside], [[1, 2, 3]] * (800 - 200))
    with pytest.raises(ValueError, match='pad_val has 2'):
        run(RandomZoom((0.5, 0.5), 1.0, pad_val=(1, 2)), img, 0)


def test_motion_blur_kernel_direction():
    k = motion_blur_kernel(5, 0)
    expected = np.zeros((5, 5), np.float32)
    expected[2] = 0.2
    np.testing.assert_allclose(k, expected)
    np.testing.assert_allclose(motion_blur_kernel(5, 90), expected.T)
    # 45 degrees, length 7: the anti-diagonal pixels within radius 3
    diag = motion_blur_kernel(7, 45)
    expected = np.flipud(np.eye(7))
    expected[[0, 6], [6, 0]] = 0
    np.testing.assert_allclose(diag, expected / 5, atol=1e-7)
    for size, angle in ((3, 10.0), (9, 123.0)):
        assert motion_blur_kernel(size, angle).sum() == pytest.approx(1)
    # horizontal motion leaves horizontal stripes, smears vertical ones
    stripes = np.zeros((16, 16), np.float32)
    stripes[::2] = 1
    np.random.seed(0)
    blur = RandomMotionBlur(kernel_size=5, prob=1.0)
    blur._random_params = lambda: (True, 5, 0.0)
    np.testing.assert_allclose(blur(dict(img=stripes))['img'], stripes)
    smeared = blur(dict(img=stripes.T.copy()))['img']
    assert np.abs(smeared - stripes.T).max() > 0.3


def test_bad_arguments():
    for bad in [dict(scale_range=(0, 1)), dict(scale_range=(2, 1)),
                dict(scale_range=1.2), dict(prob=1.5), dict(pad_val='x')]:
        with pytest.raises(ValueError, match=next(iter(bad))):
            RandomZoom(**bad)
    for bad in [dict(kernel_size=4), dict(kernel_size=1),
                dict(kernel_size=(9, 3)), dict(prob=-0.1)]:
        with pytest.raises(ValueError, match=next(iter(bad))):
            RandomMotionBlur(**bad)
    with pytest.raises(ValueError, match='odd'):
        motion_blur_kernel(4, 0)
    with pytest.raises(ValueError, match='img'):
        RandomZoom(prob=1.0)(dict(img=np.zeros((0, 3))))
    with pytest.raises(ValueError, match='transforms'):
        AugmentLaterViews([])


def test_augment_later_views():
    wrapper = AugmentLaterViews(
        [dict(type='RandomFlip', prob=1.0, direction='horizontal')])
    img = image()
    first = wrapper(dict(img=img.copy(), class_view=0))
    np.testing.assert_array_equal(first['img'], img)
    second = wrapper(dict(img=img.copy(), class_view=1))
    np.testing.assert_array_equal(second['img'], img[:, ::-1])
    with pytest.raises(ValueError, match='class_view'):
        wrapper(dict(img=img))
    with pytest.raises(ValueError, match='class_view must be'):
        wrapper(dict(img=img, class_view=-1))


def digits(augment):
    pipeline = [dict(type='Resize', scale=(16, 16), keep_ratio=False)]
    if augment:
        pipeline.append(
            dict(type='AugmentLaterViews',
                 transforms=[dict(type='RandomMotionBlur', kernel_size=3,
                                  prob=1.0)]))
    pipeline.append(dict(type='PackRetrievalInputs'))
    return DigitInstancesDataset(split='train', pipeline=pipeline)


def test_dataset_marks_the_first_image_of_each_class_in_a_batch():
    plain, dataset = digits(False), digits(True)
    labels = dataset.get_labels()
    # two batches of P = 3 classes x K = 2 images through a real DataLoader
    sampler = PKSampler(dataset, batch_size=6, num_per_class=2,
                        num_batches=2, seed=0)
    loader = DataLoader(dataset, batch_size=6, sampler=sampler,
                        collate_fn=pseudo_collate)
    batches = list(loader)
    assert len(batches) == 2
    for indices, batch in zip(sampler.batches(), batches):
        assert [int(s.gt_label) for s in batch['data_samples']] == \
            labels[indices].tolist()
        seen = set()
        for idx, inputs in zip(indices, batch['inputs']):
            reference = plain[idx]['inputs']
            if labels[idx] in seen:  # the second image: blurred
                assert not torch.equal(inputs, reference)
            else:  # the first: only resized
                torch.testing.assert_close(inputs, reference)
                seen.add(labels[idx])
        assert len(seen) == 3
    # K = 3 in one class: all but the first augmented, order by position
    idx = np.flatnonzero(labels == labels[0])[:3].tolist()
    other = int(np.flatnonzero(labels != labels[0])[0])
    out = dataset.__getitems__([idx[0], other, idx[1], idx[2]])
    same = [torch.equal(o['inputs'], plain[i]['inputs'])
            for o, i in zip(out, [idx[0], other, idx[1], idx[2]])]
    assert same == [True, True, False, False]
    with pytest.raises(ValueError, match='fetched alone'):
        dataset[0]
