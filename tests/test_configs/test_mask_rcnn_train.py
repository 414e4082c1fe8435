"""Every DigitsVOC Mask R-CNN config (cross-entropy, the mix, RS) trains
through MMEngine's Runner on a tiny DigitsVOC with instance masks and is
scored by ``CocoMetric`` (box and mask AP) on val."""
import math
import os.path as osp

import pytest
from mmengine.config import Config

import mmdet_rankloss  # noqa: F401
from helpers import point_at  # tests/ on sys.path

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG_DIR = osp.join(ROOT, 'configs', 'mask_rcnn')
DIGITSVOC = ['mask-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py',
             'mask-rcnn_r18-w32_fpn_rambo-bce_16e_digitsvoc.py',
             'mask-rcnn_r18-w32_fpn_rank-sort_16e_digitsvoc.py']
#: the classification loss each config logs (RaMBO + BCE in the stock bbox
#: head: its total, as loss_cls)
CLS_KEYS = dict(ce='train/loss_cls', bce='train/loss_cls',
                sort='train/loss_rank_sort')

pytestmark = pytest.mark.usefixtures('one_torch_thread')


@pytest.mark.slow
@pytest.mark.parametrize('name', DIGITSVOC)
def test_trains_and_scores_boxes_and_masks(name, digits_masks_root,
                                           tmp_path):
    from mmengine.runner import Runner
    cfg = Config.fromfile(osp.join(CONFIG_DIR, name))
    cfg.work_dir = str(tmp_path / 'work')
    point_at(cfg, digits_masks_root)
    # two iterations (4 images, batch 2), then box and mask AP on val
    cfg.train_cfg.max_epochs = 1
    cfg.default_hooks.logger.interval = 1
    # every box scored: two steps do not make confident detectors, and
    # CocoMetric reports nothing for an empty result
    cfg.model.test_cfg.rcnn.score_thr = 0.0
    runner = Runner.from_cfg(cfg)
    runner.train()
    assert runner.iter == 2
    scalars = runner.message_hub.log_scalars
    cls_key = CLS_KEYS[name.split('_')[3].split('-')[-1]]
    for key in (cls_key, 'train/loss_mask', 'train/loss'):
        assert math.isfinite(scalars[key].current()), key
    for key in ('val/coco/bbox_mAP', 'val/coco/segm_mAP',
                'val/coco/segm_mAP_50'):
        value = scalars[key].current()
        assert 0 <= value <= 1, (key, value)
    if '_rank-sort_' in name:  # the mask loss has the RS value
        assert scalars['train/loss_mask'].current() == pytest.approx(
            scalars['train/loss_rank_sort'].current(), rel=1e-5)
    # the test split through the test loop
    metrics = runner.test()
    assert {'coco/bbox_mAP', 'coco/segm_mAP'} <= set(metrics)
