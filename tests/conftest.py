"""Fixtures shared by the tests of the package.

* ``batch``: a factory of retrieval batches, ``batch(b, c, d=6,
  dtype=torch.float64, seed=0, device='cpu')`` -> (L2-normalised
  embeddings (b, d), integer labels (b,) in 0..c-1).
* ``rpn_batch``: a factory of detection-head batches, ``rpn_batch(
  num_rois=96, num_classes=5, fg=0.3, space='logits', seed=0,
  device='cpu', scale=1.0)`` -> (cls_score (N, C or C + 1) requiring grad,
  labels (N,) in 0..C, C = background).
* ``one_torch_thread``: one intra-op thread for a module's tests (tiny
  inputs on a small, shared CPU: with 2 threads on 2 busy cores a step took
  several times longer); a module asks for it with ``pytestmark =
  pytest.mark.usefixtures('one_torch_thread')``.
* ``detection_batch``: a factory of detector inputs, ``detection_batch(
  num_classes, size=64)`` -> ``dict(inputs, data_samples)`` as a detector's
  ``train_step`` / ``data_preprocessor`` takes them: two uint8 images, each
  with two boxes of labels 1 and ``num_classes - 1`` and no ignored boxes
  (seeded: the same images every call).
* ``roi_head_inputs``: a factory of a bbox head's ``loss`` inputs,
  ``roi_head_inputs(head, num_classes, n=40, num_pos=12, seed=1)`` ->
  (cls_score (n, C + 1), bbox_pred (n, 4C), rois, labels, label weights,
  box targets (encoded by ``head.bbox_coder`` unless
  ``head.reg_decoded_bbox``), box weights): ``num_pos`` positive RoIs
  first, boxes near the RoIs.
* ``digits_root``: a tiny DigitsVOC (4 train, 2 val, 2 test images), written
  once per test run; its ``VOCdevkit/`` path, with a trailing slash.
* ``digits_masks_root``: the same tiny DigitsVOC with instance masks (the
  segmentation PNGs and the COCO twin ``annotations/instances_<split>.json``).
* ``load_tool``: ``load_tool('tools/study.py')`` -> a tool script as a
  module, loaded from its file.

Plain functions that test modules share (a config parsed once per run,
MMEngine's scaled lr, a config pointed at a written DigitsVOC, a folder's
files) are in ``tests/helpers.py``, imported as ``helpers``.

The ``slow`` marker (``pytest.ini``) is set one way only: a
``@pytest.mark.slow`` decorator on each slow test function or class,
never a module's ``pytestmark`` nor a list of node ids here, so that the
marker moves with its test when the test is renamed or moved
(``tests/test_packaging/test_lint.py`` checks this).

Factories rather than fixed tensors: the tests vary sizes and seeds, and
the same seed gives the same batch everywhere.
"""
import importlib.util
import os.path as osp

import pytest
import torch
import torch.nn.functional as F


def make_embedding_batch(b, c, d=6, dtype=torch.float64, seed=0,
                         device='cpu'):
    """L2-normalised random embeddings (b, d) and labels (b,) in 0..c-1."""
    g = torch.Generator().manual_seed(seed)
    x = F.normalize(torch.randn(b, d, generator=g, dtype=dtype), dim=1)
    y = torch.randint(0, c, (b, ), generator=g)
    return x.to(device), y.to(device)


def make_rpn_batch(num_rois=96, num_classes=5, fg=0.3, space='logits',
                   seed=0, device='cpu', scale=1.0):
    """Random RoI scores (N, C or C + 1) and labels (N,) in 0..C."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.full((num_rois, ), num_classes, dtype=torch.long)
    is_fg = torch.rand(num_rois, generator=gen) < fg
    labels[is_fg] = torch.randint(
        0, num_classes, (int(is_fg.sum()), ), generator=gen)
    channels = num_classes + (space != 'sigmoid')
    cls_score = torch.randn(num_rois, channels, generator=gen) * scale
    return cls_score.to(device).requires_grad_(True), labels.to(device)


@pytest.fixture
def batch():
    """Factory of retrieval batches (see the module docstring)."""
    return make_embedding_batch


@pytest.fixture(scope='module')
def one_torch_thread():
    """One intra-op thread while a module's tests run (see above)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope='module')
def mmengine_patches():
    """The patches ``tools/train.py`` applies (checkpoint loading under
    torch >= 2.6, the head-fit check at build time) while a module's tests
    run; afterwards MMEngine is as ``import mmdet_rankloss`` leaves it."""
    from mmdet_rankloss import patches
    names = [n for n in ('checkpoint_loader', 'head_fit_check')
             if not patches.enabled(n)]
    for name in names:
        patches.enable(name)
    yield
    for name in names:
        patches.disable(name)


@pytest.fixture(scope='session')
def digits_root(tmp_path_factory):
    """A tiny DigitsVOC (see the module docstring)."""
    from rankloss_lab.datasets.digits_voc import make_digits_voc
    root = str(tmp_path_factory.mktemp('digitsvoc') / 'VOCdevkit') + '/'
    make_digits_voc(root, splits=(('train', 4), ('val', 2), ('test', 2)))
    return root


@pytest.fixture(scope='session')
def digits_masks_root(tmp_path_factory):
    """``digits_root`` with instance masks (see the module docstring)."""
    from rankloss_lab.datasets.digits_voc import make_digits_voc
    root = str(tmp_path_factory.mktemp('digitsmasks') / 'VOCdevkit') + '/'
    make_digits_voc(root, splits=(('train', 4), ('val', 2), ('test', 2)),
                    masks=True)
    return root


def make_detection_batch(num_classes, size=64):
    """Two images with two boxes each, as a detector takes them."""
    from mmdet.structures import DetDataSample
    from mmengine.structures import InstanceData
    gen = torch.Generator().manual_seed(0)
    inputs, samples = [], []
    for _ in range(2):
        inputs.append(torch.randint(0, 256, (3, size, size),
                                    dtype=torch.uint8, generator=gen))
        sample = DetDataSample(metainfo=dict(
            img_shape=(size, size), ori_shape=(size, size),
            pad_shape=(size, size), scale_factor=(1.0, 1.0),
            batch_input_shape=(size, size)))
        scale = size / 64
        sample.gt_instances = InstanceData(
            bboxes=torch.tensor([[4., 6., 40., 30.], [20., 24., 60., 62.]]) *
            scale,
            labels=torch.tensor([1, num_classes - 1]))
        sample.ignored_instances = InstanceData(
            bboxes=torch.zeros(0, 4), labels=torch.zeros(0, dtype=torch.long))
        samples.append(sample)
    return dict(inputs=inputs, data_samples=samples)


def make_roi_head_inputs(head, num_classes, n=40, num_pos=12, seed=1):
    """A bbox head's ``loss`` inputs (see the module docstring)."""
    gen = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=gen) * 40
    rois = torch.cat([torch.zeros(n, 1), xy, xy + 10 + torch.rand(
        n, 2, generator=gen) * 20], 1)
    labels = torch.full((n, ), num_classes)
    labels[:num_pos] = torch.randint(0, num_classes, (num_pos, ),
                                     generator=gen)
    gt = rois[:, 1:] + torch.randn(n, 4, generator=gen)
    targets = gt if head.reg_decoded_bbox else head.bbox_coder.encode(
        rois[:, 1:], gt)
    targets[num_pos:] = 0
    weights = torch.zeros(n, 4)
    weights[:num_pos] = 1
    cls_score = torch.randn(n, num_classes + 1, generator=gen)
    bbox_pred = torch.randn(n, 4 * num_classes, generator=gen) * 0.1
    return (cls_score, bbox_pred, rois, labels, torch.ones(n), targets,
            weights)


@pytest.fixture
def roi_head_inputs():
    """Factory of a bbox head's loss inputs (see the module docstring)."""
    return make_roi_head_inputs


@pytest.fixture
def detection_batch():
    """Factory of detector inputs (see the module docstring)."""
    return make_detection_batch


@pytest.fixture(name='rpn_batch')
def rpn_batch_fixture():
    """Factory of detection-head batches (see the module docstring)."""
    return make_rpn_batch


REPO_ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))

def _load_tool(relpath: str):
    """A tool script as a module, loaded from its file (the tools are
    scripts, not modules of the package)."""
    name = osp.splitext(osp.basename(relpath))[0]
    spec = importlib.util.spec_from_file_location(
        f'tool_{name}', osp.join(REPO_ROOT, relpath))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='session')
def load_tool():
    """``load_tool('tools/study.py')`` -> the script as a module."""
    return _load_tool
