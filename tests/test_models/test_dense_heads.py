"""RaMBORetinaHead / RaMBOATSSHead: the rank loss over all anchors at once.

Checked against independent computations: the stock heads' own targets and
losses, ``sklearn.metrics.average_precision_score`` on the concatenated
anchors, and the stock ``predict_by_feat``. The configs of
``configs/dense/`` load, build, train one step, and the DigitsVOC ones train
through MMEngine's ``Runner`` on a tiny generated DigitsVOC.
"""
import copy
import functools
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
from helpers import point_at, read_config  # tests/ on sys.path
from mmdet.models.dense_heads import ATSSHead
from mmdet.registry import MODELS
from mmdet_rankloss.models import RaMBOATSSHead, RaMBORetinaHead

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DENSE = osp.join(ROOT, 'configs', 'dense')
# RetinaNet and ATSS (FCOS: tests/test_models/test_fcos_heads.py)
CONFIGS = sorted(
    osp.relpath(p, DENSE) for p in glob.glob(osp.join(DENSE, '*', '*.py'))
    if not p.startswith((osp.join(DENSE, '_base_'),
                         osp.join(DENSE, 'fcos'))))
RECIPE = osp.join(DENSE, '_base_', 'rambo-ap.py')
NUM_CLASSES = 3
IMG = 64
STRIDES = [8, 16, 32]

init_default_scope('mmdet')


# one intra-op thread: tiny inputs on a small, shared CPU (tests/conftest.py)
pytestmark = pytest.mark.usefixtures('one_torch_thread')


def rank_loss(**kwargs):
    """The loss of the dense RaMBO configs (docs/dense.md)."""
    cfg = dict(type='RaMBOAPLoss', score_space='sigmoid', margin=0.0,
               memory=0)
    cfg.update(kwargs)
    return cfg


@functools.lru_cache(maxsize=None)
def digitsvoc_model(kind):
    """The model of the DigitsVOC focal config of ``kind``."""
    arch = 'retinanet' if kind == 'retina' else 'atss'
    return Config.fromfile(
        osp.join(DENSE, arch,
                 f'{arch}_r18-w32_fpn_focal_16e_digitsvoc.py')).model


def head_cfg(kind, loss_cls):
    """The RetinaHead / ATSSHead of the DigitsVOC configs, shrunk: 3 levels,
    3 classes, 8 channels, one conv per branch, 20 boxes per image."""
    model = digitsvoc_model(kind)
    cfg = copy.deepcopy(model.bbox_head.to_dict())
    cfg.update(num_classes=NUM_CLASSES, in_channels=8, feat_channels=8,
               stacked_convs=1, loss_cls=loss_cls)
    cfg['anchor_generator']['strides'] = STRIDES
    if kind == 'atss':  # GroupNorm's default 32 groups need 32 channels
        cfg['norm_cfg'] = dict(type='GN', num_groups=4, requires_grad=True)
    cfg['train_cfg'] = model.train_cfg.to_dict()
    cfg['test_cfg'] = ConfigDict(
        model.test_cfg.to_dict(), nms_pre=100, score_thr=0.0, max_per_img=20)
    return cfg


FOCAL = dict(type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25,
             loss_weight=1.0)


def build_pair(kind, **loss_kwargs):
    """The RaMBO head (its loss with the diagnostics) and the stock
    (focal) head with the same weights."""
    cfg = head_cfg(kind, rank_loss(**dict(dict(log_diagnostics=True),
                                          **loss_kwargs)))
    stock_type = cfg['type']
    cfg['type'] = 'RaMBORetinaHead' if kind == 'retina' else 'RaMBOATSSHead'
    torch.manual_seed(0)
    head = MODELS.build(cfg)
    head.init_weights()
    stock_cfg = head_cfg(kind, FOCAL)
    stock_cfg['type'] = stock_type
    stock = MODELS.build(stock_cfg)
    stock.load_state_dict(head.state_dict())
    return head.train(), stock.train()


def batch(seed=0):
    """Two 64 px images: features per level, boxes, metas."""
    g = torch.Generator().manual_seed(seed)
    feats = tuple(
        torch.randn(2, 8, IMG // s, IMG // s, generator=g) for s in STRIDES)
    gts = [
        InstanceData(
            bboxes=torch.tensor([[4., 6., 40., 30.], [20., 24., 60., 62.],
                                 [30., 2., 50., 20.]]),
            labels=torch.tensor([0, 2, 1])),
        InstanceData(
            bboxes=torch.tensor([[10., 10., 50., 50.], [2., 30., 24., 60.]]),
            labels=torch.tensor([1, 1]))
    ]
    metas = [
        dict(img_shape=(IMG, IMG), pad_shape=(IMG, IMG), ori_shape=(IMG, IMG),
             scale_factor=(1.0, 1.0)) for _ in range(2)
    ]
    return feats, gts, metas


def head_outputs(head, feats):
    """The head's forward, with leaf classification scores."""
    outs = head(feats)
    scores = [s.detach().requires_grad_() for s in outs[0]]
    return (scores, ) + tuple(outs[1:])


def stock_targets(stock, outs, gts, metas):
    """Labels and label weights per anchor from the stock head's own
    ``get_targets``, flattened level by level in the layout of the scores
    (image, y, x, anchor)."""
    sizes = [s.shape[-2:] for s in outs[0]]
    anchors, valid = stock.get_anchors(sizes, metas, device='cpu')
    targets = stock.get_targets(anchors, valid, gts, metas)
    if isinstance(stock, ATSSHead):  # it returns the anchors first
        labels, weights = targets[1], targets[2]
    else:
        labels, weights = targets[0], targets[1]
    return ([lv.reshape(-1) for lv in labels],
            [w.reshape(-1) for w in weights])


def flat(scores):
    """(N, A * C, H, W) per level -> (anchors, C), levels concatenated."""
    return torch.cat([
        s.permute(0, 2, 3, 1).reshape(-1, NUM_CLASSES) for s in scores])


def rank_terms(losses):
    return losses['loss_rambo_map'] + losses['loss_rambo_apc']


@pytest.mark.parametrize('kind', ['retina', 'atss'])
def test_loss_over_levels_is_the_loss_on_all_anchors(kind):
    head, stock = build_pair(kind)
    feats, gts, metas = batch()
    outs = head_outputs(head, feats)
    losses = head.loss_by_feat(*outs, gts, metas)
    labels, weights = stock_targets(stock, outs, gts, metas)
    labels, weights = torch.cat(labels), torch.cat(weights)
    scores = flat(outs[0]).detach()
    keep = weights > 0
    # the value: 1 - mean AP over the classes present (sklearn), all levels
    # and both images ranked together (margin 0, sigmoid: ranks of logits)
    aps = [
        average_precision_score((labels[keep] == c).numpy(),
                                scores[keep, c].numpy())
        for c in range(NUM_CLASSES) if bool((labels[keep] == c).any())
    ]
    assert len(aps) == NUM_CLASSES
    assert losses['rambo_ap'].item() == pytest.approx(np.mean(aps), abs=1e-6)
    assert losses['loss_rambo_map'].item() == pytest.approx(
        2 / 3 * (1 - np.mean(aps)), abs=1e-6)
    # ... and exactly RaMBOAPLoss on the concatenation, gradient included
    loss = MODELS.build(rank_loss(log_diagnostics=True)).train()
    leaf = scores.clone().requires_grad_()
    ref = loss(leaf, labels, weights)
    for key in ('loss_rambo_map', 'loss_rambo_apc', 'rambo_grad_density'):
        assert torch.allclose(losses[key], ref[key]), key
    rank_terms(losses).backward()
    rank_terms(ref).backward()
    assert torch.equal(flat([s.grad for s in outs[0]]), leaf.grad)
    # ranking each level alone (what loss_cls per level would do) differs
    per_level = []
    start = 0
    for s in outs[0]:
        n = s.numel() // NUM_CLASSES
        part = slice(start, start + n)
        start += n
        if bool(((labels[part] < NUM_CLASSES) & keep[part]).any()):
            per_level.append(
                loss(scores[part], labels[part],
                     weights[part])['loss_rambo_map'].item())
    assert not np.isclose(np.mean(per_level), losses['loss_rambo_map'].item())


def _level_masks(outs, flat_mask):
    """A per-anchor mask (flattened as :func:`flat`) back to the (N, A * C,
    H, W) layout of each level's scores."""
    masks, start = [], 0
    for s in outs[0]:
        n_img, channels, h, w = s.shape
        a = channels // NUM_CLASSES
        count = n_img * h * w * a
        m = flat_mask[start:start + count].reshape(n_img, h, w, a, 1)
        m = m.expand(n_img, h, w, a, NUM_CLASSES).reshape(n_img, h, w, -1)
        masks.append(m.permute(0, 3, 1, 2))
        start += count
    return masks


def test_ignored_anchors_change_nothing_and_get_no_gradient():
    head, stock = build_pair('retina')
    feats, gts, metas = batch()
    outs = head_outputs(head, feats)
    _, weights = stock_targets(stock, outs, gts, metas)
    ignored = torch.cat(weights) == 0
    assert 0 < int(ignored.sum()) < ignored.numel()  # IoU in [0.4, 0.5)
    masks = _level_masks(outs, ignored)
    losses = head.loss_by_feat(*outs, gts, metas)
    rank_terms(losses).backward()
    for s, m in zip(outs[0], masks):
        assert bool((s.grad[m] == 0).all())
    assert any(bool((s.grad[~m] != 0).any()) for s, m in zip(outs[0], masks))
    # any scores at the ignored anchors: the same loss and gradient
    moved = [
        torch.where(m, torch.randn_like(s) * 10, s.detach()).requires_grad_()
        for s, m in zip(outs[0], masks)
    ]
    again = head.loss_by_feat(moved, *outs[1:], gts, metas)
    for key in ('loss_rambo_map', 'loss_rambo_apc', 'rambo_ap'):
        assert torch.equal(again[key], losses[key]), key
    rank_terms(again).backward()
    for a, b in zip(moved, outs[0]):
        assert torch.equal(a.grad, b.grad)


@pytest.mark.parametrize('kind', ['retina', 'atss'])
def test_gradient_reaches_every_level_and_the_stock_losses_are_unchanged(
        kind):
    head, stock = build_pair(kind)
    feats, gts, metas = batch()
    feats = tuple(f.requires_grad_() for f in feats)
    losses = head.loss_by_feat(*head(feats), gts, metas)
    stock_losses = stock.loss_by_feat(*stock(feats), gts, metas)
    assert 'loss_cls' not in losses
    assert {'rambo_pos_grad_frac', 'rambo_grad_density'} <= set(losses)
    box_keys = ['loss_bbox'] + (['loss_centerness'] if kind == 'atss' else [])
    assert set(losses) - set(stock_losses) >= {'loss_rambo_map',
                                               'loss_rambo_apc'}
    for key in box_keys:
        for ours, theirs in zip(losses[key], stock_losses[key]):
            assert torch.equal(ours, theirs), key
    grads = torch.autograd.grad(rank_terms(losses), feats)
    for level, g in enumerate(grads):
        assert bool((g != 0).any()), f'no gradient at level {level}'
    cls_conv = head.retina_cls if kind == 'retina' else head.atss_cls
    cls_grad = torch.autograd.grad(
        rank_terms(head.loss_by_feat(*head(feats), gts, metas)),
        cls_conv.weight)[0]
    assert bool((cls_grad != 0).any())


def mixed_loss(**rank_kwargs):
    """RaMBO plus the stock focal loss (``MixedRankLoss``)."""
    return dict(type='MixedRankLoss', rank_loss=rank_loss(**rank_kwargs),
                aux_loss=FOCAL, aux_name='loss_focal')


@pytest.mark.parametrize('kind', ['retina', 'atss'])
def test_focal_in_a_mix_is_the_stock_focal_loss(kind):
    """The focal term of RaMBO + focal over the concatenated anchors, with
    the stock head's avg_factor, is the stock head's focal loss summed over
    its levels; the rank terms are RaMBO's alone."""
    head, stock = build_pair(kind)
    mix_cfg = head_cfg(kind, mixed_loss())
    mix_cfg['type'] = type(head).__name__
    mix = MODELS.build(mix_cfg).train()
    mix.load_state_dict(head.state_dict())
    feats, gts, metas = batch()
    outs = head_outputs(mix, feats)
    losses = mix.loss_by_feat(*outs, gts, metas)
    stock_losses = stock.loss_by_feat(*outs, gts, metas)
    rambo_only = head.loss_by_feat(*outs, gts, metas)
    expected = sum(stock_losses['loss_cls'])
    assert losses['loss_focal'].item() == pytest.approx(
        expected.item(), rel=1e-5)
    for key in ('loss_rambo_map', 'loss_rambo_apc'):
        assert torch.allclose(losses[key], rambo_only[key]), key
    # the gradient of the focal term is the stock one
    mine = torch.autograd.grad(losses['loss_focal'], outs[0])
    theirs = torch.autograd.grad(expected, outs[0])
    for a, b in zip(mine, theirs):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-7)


def predictions(kind, **loss_kwargs):
    """The RaMBO head's and the stock head's predictions with the same,
    trained-looking weights (the classifier's logits spread)."""
    head, stock = build_pair(kind, **loss_kwargs)
    head.eval()
    stock.eval()
    feats, _, metas = batch()
    with torch.no_grad():
        cls_conv = head.retina_cls if kind == 'retina' else head.atss_cls
        cls_conv.weight.normal_(0, 1)
        stock.load_state_dict(head.state_dict())
        ours = head.predict_by_feat(*head(feats), batch_img_metas=metas,
                                    rescale=False)
        theirs = stock.predict_by_feat(*stock(feats), batch_img_metas=metas,
                                       rescale=False)
    assert head.cls_out_channels == stock.cls_out_channels == NUM_CLASSES
    assert all(len(a) > 0 for a in ours)
    return ours, theirs


@pytest.mark.parametrize('kind', ['retina', 'atss'])
def test_predict_is_the_stock_heads(kind):
    for a, b in zip(*predictions(kind)):
        for key in ('bboxes', 'scores', 'labels'):
            assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize('kind', ['retina', 'atss'])
def test_calibration_maps_the_stock_scores(kind):
    """With ``calibration=(a, b)`` the RaMBO-only head predicts the same
    boxes as the stock head, each score ``sigmoid(a * logit + b)`` of the
    stock score (RetinaNet; ATSS multiplies the centerness in after)."""
    for a, b in zip(*predictions(kind, calibration=(0.5, -2.0))):
        if kind == 'retina':
            # NMS keeps the same boxes: the map is monotone
            assert torch.equal(a.labels, b.labels)
            assert torch.allclose(a.bboxes, b.bboxes)
            expected = torch.sigmoid(0.5 * torch.logit(b.scores.double()) - 2)
            assert torch.allclose(a.scores.double(), expected, atol=1e-5)
        else:
            assert bool((a.scores < b.scores.max()).all())


def test_the_rank_loss_holds_no_anchors_by_positives_matrix():
    """Saved tensors of the loss's graph stay O(anchors x classes); the
    sigmoid ranker, which compares every positive with every anchor, is
    caught by the same measure."""

    def largest_saved(head, outs, gts, metas):
        sizes = []

        def pack(t):
            sizes.append(t.numel())
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            head.loss_by_feat(*outs, gts, metas)
        return max(sizes)

    feats, gts, metas = batch()
    # many positives: lower the IoU needed to be one
    head, stock = build_pair('retina')
    for h in (head, stock):
        h.assigner.pos_iou_thr = h.assigner.neg_iou_thr = 0.2
    outs = head_outputs(head, feats)
    labels, _ = stock_targets(stock, outs, gts, metas)
    labels = torch.cat(labels)
    anchors, positives = labels.numel(), int((labels < NUM_CLASSES).sum())
    assert positives > 8 * NUM_CLASSES
    bound = 2 * anchors * (NUM_CLASSES + 1)
    assert largest_saved(head, outs, gts, metas) <= bound
    sig, _ = build_pair('retina', ranker=dict(type='SigmoidRanker'))
    sig.assigner.pos_iou_thr = sig.assigner.neg_iou_thr = 0.2
    assert largest_saved(sig, outs, gts, metas) >= anchors * positives / 2


@pytest.mark.parametrize('loss_cls, match', [
    (FOCAL, 'needs a rank loss'),
    (dict(type='RaMBOAPLoss', score_space='softmax'), 'softmax'),
])
def test_bad_loss_configs_are_refused(loss_cls, match):
    cfg = head_cfg('retina', loss_cls)
    cfg['type'] = 'RaMBORetinaHead'
    with pytest.raises(ValueError, match=match):
        MODELS.build(cfg)


def test_logits_space_gets_a_dummy_background_column():
    """'logits' wants C + 1 columns (background last, unused): the head
    stays a C-channel head and the loss ranks the same C columns."""
    head, _ = build_pair('retina')
    logits_head, _ = build_pair('retina', score_space='logits')
    assert logits_head.cls_out_channels == NUM_CLASSES
    feats, gts, metas = batch()
    outs = head_outputs(head, feats)
    logits_outs = head_outputs(logits_head, feats)
    a = head.loss_by_feat(*outs, gts, metas)
    b = logits_head.loss_by_feat(*logits_outs, gts, metas)
    # margin 0: sigmoid and logits rank alike, so AP and loss are the same
    for key in ('rambo_ap', 'loss_rambo_map', 'loss_rambo_apc'):
        assert torch.allclose(a[key], b[key]), key
    rank_terms(b).backward()
    assert any(bool((s.grad != 0).any()) for s in logits_outs[0])


# ------------------------------------------------------------- configs
def load(name):
    """The config, parsed once per run (a copy: a test may change it)."""
    return read_config(osp.join(DENSE, name))


def test_expected_configs_exist():
    expected = {
        f'{arch}/{arch}_r50_fpn_{loss}_1x_{data}.py'
        for arch in ('retinanet', 'atss') for loss in ('focal', 'rambo')
        for data in ('voc0712', 'coco')
    } | {
        f'{arch}/{arch}_r18-w32_fpn_{loss}_16e_digitsvoc.py'
        for arch in ('retinanet', 'atss') for loss in ('focal', 'rambo')
    } | {
        f'{arch}/{arch}_r18-w32_fpn_rambo-focal_16e_digitsvoc.py'
        for arch in ('retinanet', 'atss')
    } | {
        f'{arch}/{arch}_r50_fpn_rambo-focal_1x_{data}.py'
        for arch in ('retinanet', 'atss') for data in ('voc0712', 'coco')
    } | {  # the longer budget, as confirm_dense_long ran it
        'retinanet/retinanet_r18-w32_fpn_focal_56e_digitsvoc.py',
        'atss/atss_r18-w32_fpn_focal_56e_digitsvoc.py',
        'atss/atss_r18-w32_fpn_rambo-focal_56e_digitsvoc.py'
    }
    assert expected <= set(CONFIGS)
    # the rest: the Rank & Sort and aLRP twins
    assert all('_rank-sort' in c or '_alrp' in c
               for c in set(CONFIGS) - expected), set(CONFIGS) - expected


@pytest.mark.parametrize('focal', [c for c in CONFIGS if '_focal_' in c
                                   and '_56e_' not in c])  # no RaMBO-alone 56e
def test_rambo_twin_changes_only_head_loss_lr_and_threshold(focal):
    ours = load(focal.replace('_focal_', '_rambo_')).to_dict()
    twin = load(focal).to_dict()
    head = ours['model']['bbox_head']
    assert head.pop('type') == ('RaMBORetinaHead' if 'retinanet' in focal
                                else 'RaMBOATSSHead')
    assert head.pop('loss_cls') == rank_loss()
    # the recipe the loss comes from, kept as a variable by MMEngine
    assert ours.pop('rambo_dense_loss') == dict(rank_loss(), _delete_=True)
    ours.pop('rambo_focal_dense_loss')
    ours.pop('rambo_sigmoid_focal_dense_loss')
    assert ours['model']['test_cfg'].pop('score_thr') == 0.0
    ours['optim_wrapper']['optimizer'].pop('lr')
    for key in ('type', 'loss_cls'):
        twin['model']['bbox_head'].pop(key)
    twin['model']['test_cfg'].pop('score_thr')
    twin['optim_wrapper']['optimizer'].pop('lr')
    assert ours == twin


def test_every_rambo_config_takes_its_loss_from_the_recipe():
    """One place states the dense RaMBO loss: each `_rambo_` config lists
    the recipe among its bases and writes no loss settings of its own."""
    rambo = [c for c in CONFIGS if '_rambo_' in c]
    assert len(rambo) == 6
    for name in rambo:
        with open(osp.join(DENSE, name), encoding='utf-8') as f:
            text = f.read()
        assert "'../_base_/rambo-ap.py'" in text, name
        assert 'loss_cls=_base_.rambo_dense_loss' in text, name
        assert 'RaMBOAPLoss' not in text and 'margin' not in text, name
    assert Config.fromfile(RECIPE).rambo_dense_loss.type == 'RaMBOAPLoss'


@pytest.mark.parametrize('name',
                         [c for c in CONFIGS if '_rambo-focal_' in c])
def test_the_mix_twin_changes_only_the_head_and_its_loss(name):
    """RaMBO + focal: the focal twin's config (score threshold included)
    with the RaMBO head and the recipe's mix as loss_cls; the RetinaNet mix
    and the ATSS mix have their own lrs, selected on val."""
    ours = load(name).to_dict()
    twin = load(name.replace('_rambo-focal_', '_focal_')).to_dict()
    head = ours['model']['bbox_head']
    assert head.pop('type') == ('RaMBORetinaHead' if 'retinanet' in name
                                else 'RaMBOATSSHead')
    # RaMBO ranks the logits (selected on val on ATSS; the RetinaNet
    # DigitsVOC mix as its pre-registered test ran it)
    assert head.pop('loss_cls') == mixed_loss(score_space='logits')
    assert ours.pop('rambo_focal_dense_loss') == dict(
        mixed_loss(score_space='logits'), _delete_=True)
    assert ours.pop('rambo_sigmoid_focal_dense_loss') == dict(
        mixed_loss(), _delete_=True)
    ours.pop('rambo_dense_loss')
    if '_r18-w32_' in name:  # each selected on val in its own grid
        assert ours['optim_wrapper']['optimizer'].pop('lr') == (
            0.04 if '_56e_' in name else
            0.08 if 'retinanet' in name else 0.01)
        twin['optim_wrapper']['optimizer'].pop('lr')
    for key in ('type', 'loss_cls'):
        twin['model']['bbox_head'].pop(key)
    assert ours == twin


def mmdet_config(rel):
    import mmdet
    return Config.fromfile(
        osp.join(osp.dirname(mmdet.__file__), '.mim', 'configs', rel))


#: the authors' recipes, whose models are theirs, not MMDetection's
#: (tests/test_configs/test_authors_recipes.py)
AUTHORS_RECIPES = ('atss/atss_r50_fpn_rank-sort_1x_coco.py',
                   'atss/atss_r50_fpn_alrp_100e_coco-512.py',
                   'retinanet/retinanet_r50_fpn_alrp_100e_coco-512.py')


@pytest.mark.parametrize(
    'name', [c for c in CONFIGS if '_r50_' in c and c not in AUTHORS_RECIPES])
def test_paper_scale_configs_are_mmdetections(name):
    """VOC07+12: VOCMetric AP50 (11 points) and MMDetection's VOC schedule;
    COCO: CocoMetric; the models are MMDetection's (ATSS on VOC: the COCO
    ATSS model with 20 classes)."""
    cfg = load(name)
    assert cfg.custom_imports.imports == ['mmdet_rankloss']
    arch = name.split('/')[0]
    if name.endswith('_voc0712.py'):
        assert (cfg.val_evaluator.type, cfg.val_evaluator.eval_mode) == (
            'VOCMetric', '11points')
        assert cfg.train_dataloader.dataset.times * cfg.train_cfg.max_epochs \
            == 12
        expected = mmdet_config(f'{arch}/{arch}_r50_fpn_1x_coco.py').model
        expected.bbox_head.num_classes = 20
    else:
        assert cfg.val_evaluator.type == 'CocoMetric'
        expected = mmdet_config(f'{arch}/{arch}_r50_fpn_1x_coco.py').model
    expected = expected.to_dict()
    model = cfg.model.to_dict()
    model.pop('_scope_', None)  # set by MMEngine on mmdet:: bases
    if '_rambo' in name:  # the _rambo_ and _rambo-focal_ twins
        for m in (model, expected):
            for key in ('type', 'loss_cls'):
                m['bbox_head'].pop(key)
            if '_rambo_' in name:
                m['test_cfg'].pop('score_thr')
    if '_rank-sort_' in name or '_alrp_' in name:  # configs/dense/_base_/
        # rank-sort.py: head, losses, no thr, the authors' box-coder stds
        # (asserted in tests/test_configs/test_rank_sort_configs.py)
        for m in (model, expected):
            for key in ('type', 'loss_cls', 'loss_bbox', 'reg_decoded_bbox',
                        'bbox_coder'):
                m['bbox_head'].pop(key, None)
            m['test_cfg'].pop('score_thr')
    assert model == expected


# The R50 configs are MMDetection's models (checked above) with the loss of
# an R18-w32 twin, which trains a step: one R50 config per detector trains a
# step (RaMBO on all anchors at VOC's 20 classes), the others are built.
PAPER_SCALE = [c for c in CONFIGS if '_r50_' in c]
TRAINED_PAPER_SCALE = ['retinanet/retinanet_r50_fpn_rambo_1x_voc0712.py',
                       'atss/atss_r50_fpn_rambo_1x_voc0712.py']
TRAINED = [c for c in CONFIGS if '_r18-' in c] + TRAINED_PAPER_SCALE


def build(name):
    """The config's model, without pretrained weights, and its config."""
    cfg = load(name)
    cfg.model.backbone.init_cfg = None  # no download
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    assert type(model.bbox_head.loss_cls).__name__ == \
        cfg.model.bbox_head.loss_cls['type']
    return model, cfg


def test_every_detector_trains_one_paper_scale_config():
    assert set(TRAINED_PAPER_SCALE) <= set(PAPER_SCALE)
    assert set(AUTHORS_RECIPES) <= set(PAPER_SCALE)
    assert set(CONFIGS) == set(PAPER_SCALE) | {
        c for c in CONFIGS if '_r18-' in c}
    assert {c.split('/')[0] for c in TRAINED_PAPER_SCALE} == {
        c.split('/')[0] for c in PAPER_SCALE}


@pytest.mark.parametrize(
    'name', [c for c in PAPER_SCALE if c not in TRAINED_PAPER_SCALE])
def test_model_builds(name):
    build(name)


@pytest.mark.parametrize('name', TRAINED)
def test_model_builds_and_trains_one_step(name, detection_batch):
    from mmengine.optim import build_optim_wrapper
    model, cfg = build(name)
    model.init_weights()
    model.train()
    head = model.bbox_head
    cls_conv = head.retina_cls if 'retinanet' in name else head.atss_cls
    before = cls_conv.weight.detach().clone()
    optim_wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    log_vars = model.train_step(detection_batch(head.num_classes, IMG),
                                optim_wrapper)
    rank = '_rambo' in name  # the _rambo_ and _rambo-focal_ configs
    cls_keys = (['loss_rambo_map', 'loss_rambo_apc'] if rank
                else ['loss_cls'])
    if '_rambo-focal_' in name:
        cls_keys.append('loss_focal')
    box_keys = ['loss_bbox']
    if '_rank-sort_' in name:
        cls_keys = ['loss_rank_sort']
    elif '_alrp_' in name:  # the box branch trains through loss_alrp_loc
        cls_keys, box_keys = ['loss_alrp_cls', 'loss_alrp_loc'], []
    for key in cls_keys + ['loss'] + box_keys:
        assert torch.isfinite(log_vars[key]).item(), key
    if rank:  # the diagnostics where the config asks for them
        assert ('rambo_grad_density' in log_vars) == \
            head.loss_cls.log_diagnostics
    assert not torch.equal(before, cls_conv.weight.detach())
    model.eval()
    with torch.no_grad():
        data = model.data_preprocessor(
            detection_batch(head.num_classes, IMG), False)
        results = model.predict(data['inputs'], data['data_samples'])
    scores = results[0].pred_instances.scores
    assert bool(((scores >= 0) & (scores <= 1)).all())
    if '_rambo_' in name:  # no threshold: the best boxes are kept
        assert scores.numel() > 0


@pytest.mark.slow
@pytest.mark.parametrize('arch', ['retinanet', 'atss'])
def test_digitsvoc_config_trains_through_the_runner(arch, digits_root,
                                                    tmp_path):
    from mmengine.runner import Runner
    cfg = load(f'{arch}/{arch}_r18-w32_fpn_rambo_16e_digitsvoc.py')
    cfg.work_dir = str(tmp_path / 'work')
    point_at(cfg, digits_root)
    # two iterations (4 images, batch 2), then AP50 on val
    cfg.train_cfg.max_epochs = 1
    cfg.default_hooks.logger.interval = 1
    # the diagnostics on request reach the log beside the terms
    cfg.model.bbox_head.loss_cls.log_diagnostics = True
    runner = Runner.from_cfg(cfg)
    runner.train()
    assert runner.iter == 2
    assert osp.isfile(osp.join(cfg.work_dir, 'epoch_1.pth'))
    keys = set(runner.message_hub.log_scalars)
    assert {'train/loss_rambo_map', 'train/rambo_grad_density',
            'train/loss_bbox', 'val/pascal_voc/AP50'} <= keys
    assert type(runner.model.bbox_head).__name__ == (
        'RaMBORetinaHead' if arch == 'retinanet' else 'RaMBOATSSHead')


def test_heads_are_exported():
    assert issubclass(RaMBORetinaHead, MODELS.get('RetinaHead'))
    assert issubclass(RaMBOATSSHead, MODELS.get('ATSSHead'))
    assert MODELS.get('RaMBORetinaHead') is RaMBORetinaHead
    assert MODELS.get('RaMBOATSSHead') is RaMBOATSSHead
