"""RaMBOFCOSHead / RankSortFCOSHead and the FCOS configs of configs/dense/.

Checked against independent computations: the stock ``FCOSHead`` with the
same weights (its targets, losses and predictions), scikit-learn's
``average_precision_score`` on all points of the batch, mmdet's
``FocalLoss`` level by level, and IoUs computed here by hand from the
points, the strides and the boxes. The configs load, build, train a step,
and the DigitsVOC ones train through MMEngine's ``Runner`` on a tiny
generated DigitsVOC (slow).
"""
import glob
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.config import Config, ConfigDict
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData
from sklearn.metrics import average_precision_score

import mmdet_rankloss  # noqa: F401
from helpers import read_config  # tests/ on sys.path
from mmdet.registry import MODELS
from mmdet_rankloss.models import RaMBOFCOSHead, RankSortFCOSHead

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
FCOS = osp.join(ROOT, 'configs', 'dense', 'fcos')
CONFIGS = sorted(osp.basename(p) for p in glob.glob(osp.join(FCOS, '*.py')))
DIGITSVOC = [c for c in CONFIGS if c.endswith('_digitsvoc.py')]
COCO = [c for c in CONFIGS if c.endswith('_coco.py')]
C = 3  # classes
SIZE = 64
STRIDES = [8, 16, 32]

init_default_scope('mmdet')
pytestmark = pytest.mark.usefixtures('one_torch_thread')

FOCAL = dict(type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25,
             loss_weight=1.0)
RAMBO = dict(type='RaMBOAPLoss', score_space='sigmoid', margin=0.0,
             memory=0)
LOSSES = {
    'focal': ('FCOSHead', FOCAL),
    'rambo': ('RaMBOFCOSHead', RAMBO),
    'mix': ('RaMBOFCOSHead',
            dict(type='MixedRankLoss', rank_loss=dict(RAMBO,
                                                      score_space='logits'),
                 aux_loss=FOCAL, aux_name='loss_focal')),
    'rs': ('RankSortFCOSHead', dict(type='RankSortLoss')),
}


def load(name):
    """The config, parsed once per run (a copy: a test may change it)."""
    return read_config(osp.join(FCOS, name))


def build_head(kind, seed=0, **overrides):
    """The FCOS head of the DigitsVOC configs with ``kind``'s loss, shrunk:
    3 levels, 3 classes, 8 channels, one conv per branch."""
    model = load('fcos_r18-w32_fpn_focal_16e_digitsvoc.py').model
    cfg = model.bbox_head.to_dict()
    head_type, loss = LOSSES[kind]
    cfg.update(type=head_type, num_classes=C, in_channels=8, feat_channels=8,
               stacked_convs=1, strides=STRIDES, loss_cls=loss,
               regress_ranges=((-1, 16), (16, 32), (32, 1e8)),
               norm_cfg=dict(type='GN', num_groups=4, requires_grad=True),
               test_cfg=ConfigDict(model.test_cfg.to_dict(), nms_pre=100,
                                   score_thr=0.0, max_per_img=20))
    cfg.update(overrides)
    torch.manual_seed(seed)
    head = MODELS.build(cfg)
    head.init_weights()
    return head.train()


def twin(head, kind):
    """Another head of ``kind`` with ``head``'s weights."""
    other = build_head(kind)
    other.load_state_dict(head.state_dict())
    return other


def inputs(empty=False):
    """FPN features of two 64 px images, their boxes (none if ``empty``)
    and metas."""
    gen = torch.Generator().manual_seed(3)
    feats = [torch.randn(2, 8, SIZE // s, SIZE // s, generator=gen)
             for s in STRIDES]
    boxes = [[[6., 4., 34., 36.], [22., 20., 62., 60.], [40., 2., 58., 18.]],
             [[8., 12., 52., 48.], [1., 33., 21., 63.]]]
    labels = [[0, 2, 1], [1, 2]]
    keep = 0 if empty else None
    gts = [InstanceData(bboxes=torch.tensor(b)[:keep].reshape(-1, 4),
                        labels=torch.tensor(y)[:keep])
           for b, y in zip(boxes, labels)]
    metas = [dict(img_shape=(SIZE, SIZE), pad_shape=(SIZE, SIZE),
                  ori_shape=(SIZE, SIZE), scale_factor=(1.0, 1.0))] * 2
    return tuple(feats), gts, metas


def forward(head, feats):
    """The head's outputs, with leaf classification scores."""
    scores, boxes, centerness = head(feats)
    return [s.detach().requires_grad_() for s in scores], boxes, centerness


def points_and_targets(head, outs, gts):
    """Per point (level, image, y, x order, as the scores are flattened):
    its (x, y), its level's stride, the stock label and the stock box
    target (l, t, r, b) in pixels."""
    sizes = [s.shape[-2:] for s in outs[0]]
    points = head.prior_generator.grid_priors(sizes, device='cpu')
    labels, targets = head.get_targets(points, gts)  # targets / stride
    n_img = outs[0][0].shape[0]
    xy = torch.cat([p.repeat(n_img, 1) for p in points])
    stride = torch.cat([torch.full((len(p) * n_img, ), float(s))
                        for p, s in zip(points, STRIDES)])
    return (xy, stride, torch.cat(labels),
            torch.cat(targets) * stride[:, None])


def flat(tensors, channels=C):
    """(N, channels, H, W) per level -> (points, channels), levels
    concatenated (the order of the stock ``loss_by_feat``)."""
    return torch.cat([
        t.permute(0, 2, 3, 1).reshape(-1, channels) for t in tensors])


def rank_terms(losses):
    return losses['loss_rambo_map'] + losses['loss_rambo_apc']


# ------------------------------------------------------------ RaMBO head
def test_rambo_ranks_every_point_of_the_batch_at_once():
    """1 - mean AP over the points of all levels and both images
    (scikit-learn), exactly RaMBOAPLoss on the concatenation (gradient
    included); each level ranked alone gives another value."""
    head = build_head('rambo', loss_cls=dict(RAMBO, log_diagnostics=True))
    feats, gts, metas = inputs()
    outs = forward(head, feats)
    losses = head.loss_by_feat(*outs, gts, metas)
    _, _, labels, _ = points_and_targets(head, outs, gts)
    scores = flat(outs[0]).detach()
    aps = [average_precision_score((labels == c).numpy(),
                                   scores[:, c].numpy()) for c in range(C)]
    assert losses['rambo_ap'].item() == pytest.approx(np.mean(aps), abs=1e-6)
    loss = MODELS.build(dict(RAMBO, log_diagnostics=True)).train()
    leaf = scores.clone().requires_grad_()
    ref = loss(leaf, labels, torch.ones(len(labels)))
    for key in ('loss_rambo_map', 'loss_rambo_apc', 'rambo_grad_density'):
        assert torch.allclose(losses[key], ref[key]), key
    rank_terms(losses).backward()
    rank_terms(ref).backward()
    assert torch.equal(flat([s.grad for s in outs[0]]), leaf.grad)
    per_level, start = [], 0
    for s in outs[0]:
        part = slice(start, start + s.numel() // C)
        start = part.stop
        if bool((labels[part] < C).any()):
            per_level.append(loss(scores[part], labels[part],
                                  torch.ones(part.stop - part.start))
                             ['loss_rambo_map'].item())
    assert len(per_level) > 1
    assert not np.isclose(np.mean(per_level),
                          losses['loss_rambo_map'].item())


def test_mix_focal_is_the_stock_loss_summed_over_levels():
    """The focal term of the mix is the stock FCOS focal loss (value and
    gradient) and the sum of mmdet's FocalLoss level by level with the
    stock normaliser (the number of positives); box and centerness losses
    are bitwise the stock head's."""
    head = build_head('mix')
    stock = twin(head, 'focal')
    feats, gts, metas = inputs()
    outs = forward(head, feats)
    ours = head.loss_by_feat(*outs, gts, metas)
    theirs = stock.loss_by_feat(*outs, gts, metas)
    assert ours['loss_focal'].item() == pytest.approx(
        theirs['loss_cls'].item(), rel=1e-6)
    for key in ('loss_bbox', 'loss_centerness'):
        assert torch.equal(ours[key], theirs[key]), key
    _, _, labels, _ = points_and_targets(head, outs, gts)
    focal = MODELS.build(FOCAL)
    num_pos = float((labels < C).sum())
    by_level, start = [], 0
    for s in outs[0]:
        scores = flat([s])
        part = labels[start:start + len(scores)]
        start += len(scores)
        by_level.append(focal(scores, part, avg_factor=num_pos))
    assert ours['loss_focal'].item() == pytest.approx(
        sum(by_level).item(), rel=1e-5)
    mine = torch.autograd.grad(ours['loss_focal'], outs[0])
    ref = torch.autograd.grad(theirs['loss_cls'], outs[0])
    for a, b in zip(mine, ref):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-8)


def test_rambo_predicts_as_the_stock_head_with_centerness():
    """Same weights: the stock predictions, bitwise (sigmoid scores times
    the predicted centerness); a changed centerness branch changes them."""
    head = build_head('mix').eval()
    stock = twin(head, 'focal').eval()
    feats, _, metas = inputs()
    with torch.no_grad():
        head.conv_cls.weight.normal_(0, 1)
        stock.load_state_dict(head.state_dict())
        ours = head.predict_by_feat(*head(feats), batch_img_metas=metas)
        theirs = stock.predict_by_feat(*stock(feats), batch_img_metas=metas)
        head.conv_centerness.bias.fill_(-3.0)
        lowered = head.predict_by_feat(*head(feats), batch_img_metas=metas)
    for a, b, low in zip(ours, theirs, lowered):
        assert len(a) > 0
        for key in ('bboxes', 'scores', 'labels'):
            assert torch.equal(a[key], b[key]), key
        assert low.scores.max() < a.scores.max()


# --------------------------------------------------------------- RS head
def _loss_cls_inputs(head, feats, gts, metas):
    """``loss_by_feat``'s losses and what the head handed its loss."""
    seen = {}
    forward_cls = head.loss_cls.terms

    def spy(cls_score, labels, *args, **kwargs):
        seen.update(cls_score=cls_score, labels=labels, **kwargs)
        return forward_cls(cls_score, labels, *args, **kwargs)

    head.loss_cls.terms = spy
    outs = forward(head, feats)
    return outs, head.loss_by_feat(*outs, gts, metas), seen


def hand_iou(a, b):
    """IoU of aligned (x1, y1, x2, y2) boxes, float64, by hand."""
    a, b = a.double(), b.double()
    w = (torch.minimum(a[:, 2], b[:, 2]) -
         torch.maximum(a[:, 0], b[:, 0])).clamp(min=0)
    h = (torch.minimum(a[:, 3], b[:, 3]) -
         torch.maximum(a[:, 1], b[:, 1])).clamp(min=0)
    area = (a[:, 2:] - a[:, :2]).prod(1) + (b[:, 2:] - b[:, :2]).prod(1)
    return w * h / (area - w * h)


def distances_to_boxes(xy, ltrb):
    return torch.cat([xy - ltrb[:, :2], xy + ltrb[:, 2:]], 1)


def test_rs_labels_are_the_pixel_ious_of_the_predicted_boxes():
    """RS ranks all points of the batch with, at each positive, the IoU of
    its predicted box (in pixels: the normalised distances times the
    stride) with its ground truth; 0 elsewhere. Positives and targets are
    the stock head's."""
    head = build_head('rs')
    feats, gts, metas = inputs()
    outs, _, seen = _loss_cls_inputs(head, feats, gts, metas)
    xy, stride, labels, target = points_and_targets(head, outs, gts)
    assert torch.equal(seen['labels'], labels)
    pos = labels < C
    assert int(pos.sum()) > 5
    pred = flat(outs[1], 4).detach() * stride[:, None]
    expected = hand_iou(distances_to_boxes(xy[pos], pred[pos]),
                        distances_to_boxes(xy[pos], target[pos]))
    quality = seen['quality']
    assert not quality.requires_grad and not quality[~pos].any()
    torch.testing.assert_close(quality[pos].double(), expected, rtol=1e-5,
                               atol=1e-6)


def test_rs_box_loss_is_score_weighted_and_has_the_rs_value():
    """The box term: GIoU of each positive weighted by its detached top
    class probability (not by its centerness target), rescaled to the RS
    value; its gradient is that of ``L_RS * sum w L / sum w`` with the
    scale detached (computed here with mmdet's GIoULoss). No centerness
    loss: a zero whose gradient reaches the branch as zeros."""
    head = build_head('rs')
    feats, gts, metas = inputs()
    outs, losses, seen = _loss_cls_inputs(head, feats, gts, metas)
    assert losses['loss_bbox'].item() == pytest.approx(
        losses['loss_rank_sort'].item(), rel=1e-5)
    assert losses['loss_centerness'].item() == 0
    xy, stride, labels, target = points_and_targets(head, outs, gts)
    pos = labels < C
    pred = flat(outs[1], 4)  # normalised distances, with their graph
    giou = MODELS.build(dict(type='GIoULoss'))(
        distances_to_boxes(xy[pos], pred[pos] * stride[pos, None]),
        distances_to_boxes(xy[pos], target[pos]), reduction_override='none')
    weights = seen['cls_score'].detach()[pos, :C].sigmoid().amax(1)
    box = (weights * giou).sum() / weights.sum()
    rs = losses['loss_rank_sort'].detach()
    expected = torch.autograd.grad(rs / box.detach() * box, outs[1],
                                   retain_graph=True)
    got = torch.autograd.grad(losses['loss_bbox'] + losses['loss_centerness'],
                              outs[1] + outs[2], allow_unused=True)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-7)
    assert all(g is None or not g.any() for g in got[len(outs[1]):])


def test_rs_update_is_balanced_through_the_head():
    """The identity update of RS, over all points and classes of the batch:
    the positives' updates sum to minus the negatives' (the RS paper's
    balance property), read off the gradient of the head's scores."""
    head = build_head('rs')
    feats, gts, metas = inputs()
    outs, losses, _ = _loss_cls_inputs(head, feats, gts, metas)
    losses['loss_rank_sort'].backward()
    grad = flat([s.grad for s in outs[0]]).double()
    _, _, labels, _ = points_and_targets(head, outs, gts)
    is_pos = torch.zeros_like(grad, dtype=torch.bool)
    rows = torch.nonzero(labels < C).flatten()
    is_pos[rows, labels[rows]] = True
    up_pos, up_neg = grad[is_pos].sum(), grad[~is_pos].sum()
    assert up_pos < 0 < up_neg
    assert abs(up_pos + up_neg) < 1e-5 * up_neg
    assert (grad[~is_pos] >= 0).all()


def test_rs_prediction_ignores_centerness():
    head = build_head('rs').eval()
    feats, _, metas = inputs()
    with torch.no_grad():
        before = head.predict_by_feat(*head(feats), batch_img_metas=metas)
        head.conv_centerness.weight.normal_()
        head.conv_centerness.bias.fill_(-3.0)
        after = head.predict_by_feat(*head(feats), batch_img_metas=metas)
    for a, b in zip(before, after):
        assert len(a) > 0
        torch.testing.assert_close(a.scores, b.scores)


# ------------------------------------------------------------ both heads
@pytest.mark.parametrize('kind', ['rambo', 'mix', 'rs'])
def test_a_batch_without_positives(kind):
    """No box in any image: every loss is finite, the rank terms are 0,
    and the backward reaches the classifier (a graph for DDP)."""
    head = build_head(kind)
    feats, gts, metas = inputs(empty=True)
    losses = head.loss_by_feat(*head(feats), gts, metas)
    total = sum(v for k, v in losses.items() if k.startswith('loss'))
    assert all(torch.isfinite(v) for v in losses.values())
    for key in ('loss_rambo_map', 'loss_rambo_apc', 'loss_rank_sort',
                'loss_bbox'):
        if key in losses:
            assert losses[key].item() == 0, key
    total.backward()
    assert head.conv_cls.weight.grad is not None
    if kind == 'mix':  # the focal term still pushes every score down
        assert head.conv_cls.weight.grad.any()


@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float16])
@pytest.mark.parametrize('kind', ['mix', 'rs'])
def test_a_step_under_autocast(kind, dtype):
    """CPU autocast (what ``--amp`` does with float16 on a GPU): finite
    losses and gradients, close to the float32 step's."""
    feats, gts, metas = inputs()
    values = []
    for enabled in (False, True):
        head = build_head(kind)
        with torch.autocast('cpu', dtype=dtype, enabled=enabled):
            outs = head(feats)
            losses = head.loss_by_feat(*outs, gts, metas)
            total = sum(v for k, v in losses.items() if k.startswith('loss'))
        assert outs[0][0].dtype == (dtype if enabled else torch.float32)
        total.backward()
        assert torch.isfinite(total)
        assert torch.isfinite(head.conv_cls.weight.grad).all()
        assert head.conv_cls.weight.grad.any()
        values.append(total.item())
    assert values[1] == pytest.approx(values[0], rel=0.05)


def test_the_fp32_hook_finds_the_fcos_classifier():
    """``RankLogitsFp32Hook`` (RaMBO's logits in fp32 under autocast) finds
    the FCOS classifier of the mix config."""
    from types import SimpleNamespace
    from mmdet_rankloss.engine import RankLogitsFp32Hook
    model, _ = build('fcos_r18-w32_fpn_rambo-focal_16e_digitsvoc.py')
    hook = RankLogitsFp32Hook()
    hook.before_run(SimpleNamespace(model=model))
    assert hook.layers == ['bbox_head.conv_cls']
    x = torch.randn(1, 64, 4, 4)
    with torch.autocast('cpu', dtype=torch.bfloat16):
        assert model.bbox_head.conv_cls(x).dtype == torch.float32
        assert model.bbox_head.conv_reg(x).dtype == torch.bfloat16


def test_bad_losses_are_refused():
    with pytest.raises(ValueError, match='needs a rank loss'):
        build_head('focal', type='RaMBOFCOSHead')
    with pytest.raises(ValueError, match='needs loss_cls of type '
                       'RankSortLoss'):
        build_head('rambo', type='RankSortFCOSHead')
    with pytest.raises(ValueError, match='box_weighting must be one of'):
        build_head('rs', box_weighting='centerness')


def test_heads_are_registered():
    assert issubclass(RaMBOFCOSHead, MODELS.get('FCOSHead'))
    assert issubclass(RankSortFCOSHead, MODELS.get('FCOSHead'))
    assert MODELS.get('RaMBOFCOSHead') is RaMBOFCOSHead
    assert MODELS.get('RankSortFCOSHead') is RankSortFCOSHead


# --------------------------------------------------------------- configs
def test_the_configs_are_found():
    assert {c.split('_')[-3] for c in DIGITSVOC} == {
        'focal', 'rambo-focal', 'rank-sort'}
    assert {c.split('_')[-3] for c in COCO} == {
        'focal', 'rambo-focal', 'rank-sort'}
    assert len(CONFIGS) == 6


TWIN_CHANGES = {
    # head type, and whether the test threshold is 0; on DigitsVOC each
    # config has its own lr, the one its study froze (checked, as every
    # studied config's, by test_configs/test_configs_follow_the_evidence.py)
    'rambo-focal': ('RaMBOFCOSHead', False),
    'rank-sort': ('RankSortFCOSHead', True),
}


@pytest.mark.parametrize('name', [c for c in CONFIGS if '_focal_' not in c])
def test_a_twin_changes_only_the_head_its_loss_threshold_and_lr(name):
    loss = name.split('_')[-3]
    head_type, no_threshold = TWIN_CHANGES[loss]
    ours = load(name).to_dict()
    focal = load(name.replace(f'_{loss}_', '_focal_')).to_dict()
    head = ours['model']['bbox_head']
    assert head.pop('type') == head_type
    recipe = 'rank_sort_loss' if loss == 'rank-sort' else \
        'rambo_focal_dense_loss'
    # the recipe of configs/dense/_base_/, a variable kept in the config
    assert dict(head.pop('loss_cls'), _delete_=True) == ours[recipe]
    for key in [k for k in ours if k not in focal]:  # the recipe variables
        ours.pop(key)
    if no_threshold:
        assert ours['model']['test_cfg'].pop('score_thr') == 0.0
        focal['model']['test_cfg'].pop('score_thr')
    if name.endswith('_digitsvoc.py'):
        ours['optim_wrapper']['optimizer'].pop('lr')
        focal['optim_wrapper']['optimizer'].pop('lr')
    for key in ('type', 'loss_cls'):
        focal['model']['bbox_head'].pop(key)
    assert ours == focal


def test_the_coco_focal_config_is_mmdetections():
    import mmdet
    (focal, ) = [c for c in COCO if '_focal_' in c]
    ours = load(focal)
    theirs = Config.fromfile(osp.join(
        osp.dirname(mmdet.__file__), '.mim', 'configs', 'fcos',
        'fcos_r50-caffe_fpn_gn-head-center-normbbox-centeronreg-giou_'
        '1x_coco.py'))
    model = ours.model.to_dict()
    model.pop('_scope_', None)
    assert model == theirs.model.to_dict()
    assert ours.val_evaluator.type == 'CocoMetric'
    assert ours.custom_imports.imports == ['mmdet_rankloss']
    assert (ours.optim_wrapper.optimizer.lr, ours.auto_scale_lr.to_dict(),
            ours.train_dataloader.batch_size) == (
                0.01, dict(enable=True, base_batch_size=16), 2)


def build(name):
    cfg = load(name)
    cfg.model.backbone.init_cfg = None  # no download
    torch.manual_seed(0)
    return MODELS.build(cfg.model), cfg


@pytest.mark.parametrize('name', COCO)
def test_coco_model_builds(name):
    model, cfg = build(name)
    assert type(model.bbox_head).__name__ == cfg.model.bbox_head.type


@pytest.mark.parametrize('name', DIGITSVOC)
def test_digitsvoc_model_trains_one_step(name, detection_batch):
    from mmengine.optim import build_optim_wrapper
    model, cfg = build(name)
    model.init_weights()
    model.train()
    head = model.bbox_head
    before = head.conv_cls.weight.detach().clone()
    optim_wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    log_vars = model.train_step(detection_batch(head.num_classes, SIZE),
                                optim_wrapper)
    keys = {'_focal_': ['loss_cls', 'loss_centerness'],
            '_rambo-focal_': ['loss_rambo_map', 'loss_rambo_apc',
                              'loss_focal', 'loss_centerness'],
            '_rank-sort_': ['loss_rank_sort']}
    (cls_keys, ) = [v for k, v in keys.items() if k in name]
    for key in cls_keys + ['loss', 'loss_bbox']:
        assert torch.isfinite(log_vars[key]).item(), key
    assert not torch.equal(before, head.conv_cls.weight.detach())
    model.eval()
    with torch.no_grad():
        data = model.data_preprocessor(
            detection_batch(head.num_classes, SIZE), False)
        scores = model.predict(data['inputs'],
                               data['data_samples'])[0].pred_instances.scores
    assert bool(((scores >= 0) & (scores <= 1)).all())


@pytest.mark.slow
@pytest.mark.parametrize('name', DIGITSVOC)
def test_digitsvoc_config_trains_through_the_runner(name, digits_root,
                                                    tmp_path):
    """Two iterations (4 images, batch 2) through MMEngine's Runner, a
    checkpoint, then VOCMetric's AP50 on val."""
    from mmengine.runner import Runner
    cfg = load(name)
    loader = dict(batch_size=2, num_workers=0, persistent_workers=False)
    loader['dataset.data_root'] = digits_root
    cfg.merge_from_dict({
        f'{split}_dataloader.{key}': value
        for split in ('train', 'val', 'test') for key, value in loader.items()
    })
    cfg.merge_from_dict({'work_dir': str(tmp_path), 'train_cfg.max_epochs': 1,
                         'default_hooks.logger.interval': 1})
    runner = Runner.from_cfg(cfg)
    runner.train()
    assert runner.iter == 2
    assert osp.isfile(osp.join(str(tmp_path), 'epoch_1.pth'))
    logged = set(runner.message_hub.log_scalars)
    assert {'train/loss_bbox', 'val/pascal_voc/AP50'} <= logged
    assert type(runner.model.bbox_head).__name__ == cfg.model.bbox_head.type
