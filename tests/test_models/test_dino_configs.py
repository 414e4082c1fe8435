"""Every DINO config of ``configs/dino/`` trains one step and predicts.

The model is the config's (head, losses, matching, transformer) with the
backbone's pretrained weights left out; the R50 COCO configs get the small
R18-w32 backbone of the DigitsVOC configs (the neck's input channels
follow) and 100 queries instead of 900 (two 128 px images offer 340
encoder tokens). A step of each takes about 10 CPU seconds: the Rank &
Sort DigitsVOC config is in the fast set, the others are marked slow (the
heads' own tests, fast, cover the RaMBO head's losses through its whole
``loss_by_feat``).
"""
import os.path as osp

import pytest
import torch

from mmdet_rankloss.utils.config import config_files

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIGS = config_files(osp.join(ROOT, 'configs', 'dino'), exts=('.py', ),
                       skip_bases=True)
FAST = ('dino-4scale_r18-w32-glyphs_rank-sort_12e_digitsvoc.py', )
#: a ``_36e_`` config is its 12-epoch twin's model on a longer schedule
#: (tests/test_configs/test_configs_follow_the_evidence.py): its model is
#: trained here through its twin
TWINS = [c for c in CONFIGS if '_36e_' not in c]
#: a config's loss family -> what its head logs per call
HEADS = {'focal': 'DINOHead', 'quality-focal': 'DINOHead',
         'rank-sort': 'RankSortDINOHead', 'rambo-focal': 'RaMBODINOHead',
         'alrp': 'ALRPDINOHead'}
#: the heads whose loss dict has no ``loss_bbox`` (L1) terms
NO_L1 = ('ALRPDINOHead', )


def test_every_loss_has_a_coco_and_a_digitsvoc_config():
    for loss in HEADS:
        for data in ('coco', 'digitsvoc'):
            assert sum(f'_{loss}_' in c and c.endswith(f'_{data}.py')
                       for c in TWINS) == 1, (loss, data)


def _model(name):
    from mmengine.config import Config
    from mmengine.registry import init_default_scope

    from mmdet.registry import MODELS
    cfg = Config.fromfile(osp.join(ROOT, 'configs', 'dino', name))
    cfg.model.backbone.init_cfg = None
    if name.endswith('_coco.py'):
        cfg.model.backbone = dict(
            type='ResNet', depth=18, base_channels=32, out_indices=(1, 2, 3),
            frozen_stages=1, norm_eval=True, style='pytorch')
        cfg.model.neck.in_channels = [64, 128, 256]
        cfg.model.num_queries = 100
    init_default_scope('mmdet')
    torch.manual_seed(0)
    return MODELS.build(cfg.model), cfg


@pytest.mark.parametrize('name', FAST)
def test_the_config_trains_one_step_and_predicts(name, detection_batch):
    one_step_and_predict(name, detection_batch)


@pytest.mark.slow
@pytest.mark.parametrize('name', [c for c in TWINS if c not in FAST])
def test_every_other_config_trains_one_step_and_predicts(name,
                                                         detection_batch):
    one_step_and_predict(name, detection_batch)


def one_step_and_predict(name, detection_batch):
    from mmengine.optim import build_optim_wrapper
    model, cfg = _model(name)
    loss = next(k for k in HEADS if f'_{k}_' in name)
    assert type(model.bbox_head).__name__ == HEADS[loss]
    # the whole model's init: DINO's level embedding is allocated
    # uninitialised (``torch.Tensor``) and only set here
    model.init_weights()
    model.train()
    optim_wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    size = 128
    num_classes = cfg.model.bbox_head.num_classes
    before = model.bbox_head.cls_branches[-1].weight.detach().clone()
    log_vars = model.train_step(detection_batch(num_classes, size),
                                optim_wrapper)
    layers = cfg.model.decoder.num_layers
    # the stock keys: 3 terms per decoder layer, encoder, denoising layer
    # (aLRP: 2, its localisation component in place of L1 and GIoU)
    terms = [k for k in log_vars if k.endswith(('loss_cls', 'loss_bbox',
                                                'loss_iou'))]
    per_call = 2 if HEADS[loss] in NO_L1 else 3
    assert len(terms) == per_call * (2 * layers + 1), sorted(log_vars)
    assert all(torch.isfinite(log_vars[k]).item() for k in log_vars)
    assert not torch.equal(before,
                           model.bbox_head.cls_branches[-1].weight.detach())
    if any(h['type'] == 'ALRPSelfBalanceHook'
           for h in cfg.get('custom_hooks', [])):
        # the step gave the self-balance its sums: a weight is set from them
        weight = model.bbox_head.loss_cls.update_self_balance()
        assert weight is not None and weight > 1, weight
    model.eval()
    with torch.no_grad():
        batch = model.data_preprocessor(
            detection_batch(num_classes, size), False)
        results = model.predict(batch['inputs'], batch['data_samples'])
    scores = results[0].pred_instances.scores
    assert len(scores) == cfg.model.test_cfg.max_per_img
    assert bool(((scores >= 0) & (scores <= 1)).all())
