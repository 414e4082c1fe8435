"""An anchor head with ATSS assignment (``LevelCountsAssignerMixin``,
used by ``ALRPRetinaHead``): its targets are those of MMDetection's own
``ATSSHead`` on the same anchors, ground truths and image; with another
assigner it is the stock ``RetinaHead``; it trains a step."""
import pytest
import torch
from mmengine.config import ConfigDict
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData

import mmdet_rankloss  # noqa: F401
from mmdet.registry import MODELS, TASK_UTILS
from mmdet_rankloss.models.level_assignment import needs_level_counts

init_default_scope('mmdet')
pytestmark = pytest.mark.usefixtures('one_torch_thread')

NUM_CLASSES = 3
STRIDES = [8, 16, 32]
# the aLRP authors' "ATSS" anchors: ratio 1, 2 scales an octave
ANCHORS = dict(type='AnchorGenerator', octave_base_scale=4,
               scales_per_octave=2, ratios=[1.0], strides=STRIDES)
CODER = dict(type='DeltaXYWHBBoxCoder', target_means=[0.] * 4,
             target_stds=[0.1, 0.1, 0.2, 0.2])
ATSS_TRAIN = dict(assigner=dict(type='ATSSAssigner', topk=9),
                  allowed_border=-1, pos_weight=-1, debug=False)
RETINA_TRAIN = dict(
    assigner=dict(type='MaxIoUAssigner', pos_iou_thr=0.5, neg_iou_thr=0.4,
                  min_pos_iou=0, ignore_iof_thr=-1),
    sampler=dict(type='PseudoSampler'), allowed_border=-1, pos_weight=-1,
    debug=False)


def head(kind, train_cfg, allowed_border=-1):
    cfg = dict(
        type=kind, num_classes=NUM_CLASSES, in_channels=8, feat_channels=8,
        stacked_convs=1, anchor_generator=ANCHORS, bbox_coder=CODER,
        reg_decoded_bbox=True, loss_bbox=dict(type='GIoULoss'),
        train_cfg=ConfigDict(train_cfg, allowed_border=allowed_border),
        test_cfg=ConfigDict(nms_pre=100, min_bbox_size=0, score_thr=0.0,
                            nms=dict(type='nms', iou_threshold=0.5),
                            max_per_img=20))
    if kind == 'ALRPRetinaHead':
        cfg['loss_cls'] = dict(type='ALRPLoss')
    elif kind == 'ATSSHead':
        cfg['norm_cfg'] = None
    else:  # RetinaHead
        cfg['loss_cls'] = dict(type='FocalLoss', use_sigmoid=True)
    torch.manual_seed(0)
    return MODELS.build(cfg)


def targets_case(size=(64, 80)):
    """Anchors of a (h, w) image and three ground truths, one near the
    border (so that ``allowed_border=0`` drops anchors)."""
    h, w = size
    featmaps = [(h // s, w // s) for s in STRIDES]
    gts = [InstanceData(
        bboxes=torch.tensor([[4., 6., 40., 30.], [20., 24., 60., 62.],
                             [50., 2., 79., 20.]]),
        labels=torch.tensor([0, 2, 1]))]
    metas = [dict(img_shape=(h, w), pad_shape=(h, w))]
    return featmaps, gts, metas


def anchors_of(h, featmaps, metas):
    anchors, valid = h.get_anchors(featmaps, metas, device='cpu')
    return anchors, valid


@pytest.mark.parametrize('allowed_border', [-1, 0])
def test_atss_targets_are_atss_heads(allowed_border):
    featmaps, gts, metas = targets_case()
    ours = head('ALRPRetinaHead', ATSS_TRAIN, allowed_border)
    stock = head('ATSSHead', ATSS_TRAIN, allowed_border)
    got = ours.get_targets(*anchors_of(ours, featmaps, metas), gts, metas)
    want = stock.get_targets(*anchors_of(stock, featmaps, metas), gts,
                             metas)
    labels, label_weights, box_targets, box_weights, avg_factor = got
    _, w_labels, w_label_weights, w_box_targets, w_box_weights, w_avg = want
    for a, b in [(labels, w_labels), (label_weights, w_label_weights),
                 (box_targets, w_box_targets), (box_weights, w_box_weights)]:
        assert len(a) == len(b) == len(STRIDES)
        for level_a, level_b in zip(a, b):
            torch.testing.assert_close(level_a, level_b, rtol=0, atol=0)
    assert avg_factor == w_avg
    fg = torch.cat(labels, 1) < NUM_CLASSES
    assert fg.any() and not fg.all()
    # the level sizes are dropped after the call
    assert ours._level_sizes is None


def test_maxiou_assignment_is_the_stock_retina_heads():
    featmaps, gts, metas = targets_case()
    ours = head('ALRPRetinaHead', RETINA_TRAIN)
    stock = head('RetinaHead', RETINA_TRAIN)
    assert not needs_level_counts(ours.assigner)
    got = ours.get_targets(*anchors_of(ours, featmaps, metas), gts, metas)
    want = stock.get_targets(*anchors_of(stock, featmaps, metas), gts,
                             metas)
    for a, b in zip(got[:4], want[:4]):
        for level_a, level_b in zip(a, b):
            torch.testing.assert_close(level_a, level_b, rtol=0, atol=0)
    assert got[4] == want[4]


def test_needs_level_counts():
    assert needs_level_counts(TASK_UTILS.build(ATSS_TRAIN['assigner']))
    assert not needs_level_counts(TASK_UTILS.build(RETINA_TRAIN['assigner']))
    assert not needs_level_counts(object())


def test_the_head_keeps_retinanets_network():
    """RetinaNet's towers (no GroupNorm, no per-level scale, no centerness
    branch), 2 anchors a location."""
    ours = head('ALRPRetinaHead', ATSS_TRAIN)
    assert ours.num_base_priors == 2
    assert not hasattr(ours, 'scales') and not hasattr(
        ours, 'atss_centerness')
    assert not any(isinstance(m, torch.nn.GroupNorm) for m in ours.modules())


def test_trains_a_step_with_atss_assignment():
    ours = head('ALRPRetinaHead', ATSS_TRAIN).train()
    ours.init_weights()
    featmaps, gts, metas = targets_case()
    g = torch.Generator().manual_seed(0)
    feats = tuple(torch.randn(1, 8, *hw, generator=g) for hw in featmaps)
    losses = ours.loss_by_feat(*ours(feats), gts, metas)
    total = losses['loss_alrp_cls'] + losses['loss_alrp_loc']
    assert torch.isfinite(total) and losses['loss_alrp_loc'] > 0
    total.backward()
    assert ours.retina_cls.weight.grad.abs().sum() > 0
    assert ours.retina_reg.weight.grad.abs().sum() > 0
