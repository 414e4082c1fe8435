"""The COCO R50 configs named after the Rank & Sort and aLRP authors' models
are the authors' recipes.

Each row of :data:`ROWS` is a value read in the authors' repositories
(kemaloksuz/RankSortLoss and kemaloksuz/aLRPLoss, MMDetection 2.x forks)
with the file it comes from; the test reads the same setting from our
config (``Config.fromfile``). Settings their configs inherit are read in
the bases their repositories ship (``configs/_base_/...``). Then each model
is built (no pretrained weights) and trains one step on tiny images, and
the 512 px training pipeline of the aLRP recipe runs on a synthetic image.
"""
import math
import os.path as osp

import numpy as np
import pytest
import torch

import mmdet_rankloss  # noqa: F401
from helpers import read_config  # tests/ on sys.path

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG_DIR = osp.join(ROOT, 'configs')
pytestmark = pytest.mark.usefixtures('one_torch_thread')

RS_ATSS = 'dense/atss/atss_r50_fpn_rank-sort_1x_coco.py'
RS_RCNN = 'rambo/faster-rcnn_r50_fpn_rank-sort_1x_coco.py'
ALRP_RETINA = 'dense/retinanet/retinanet_r50_fpn_alrp_100e_coco-512.py'
ALRP_ATSS = 'dense/atss/atss_r50_fpn_alrp_100e_coco-512.py'
RS_CASCADE = 'rank_sort/cascade-rcnn_r50_fpn_rank-sort_1x_coco.py'
RS_PAA = 'rank_sort/paa_r50_fpn_rank-sort_1x_coco.py'
RECIPES = [RS_ATSS, RS_RCNN, ALRP_RETINA, ALRP_ATSS, RS_CASCADE, RS_PAA]
ALRP = [ALRP_RETINA, ALRP_ATSS]

# the authors' files the values come from
_RS, _ALRP = 'kemaloksuz/RankSortLoss: ', 'kemaloksuz/aLRPLoss: '
RS_ATSS_SRC = _RS + 'configs/ranksort_loss/ranksort_atss_r50_fpn_1x_coco.py'
RS_RCNN_SRC = (_RS +
               'configs/ranksort_loss/ranksort_faster_rcnn_r50_fpn_1x_coco.py')
RS_ATSS_HEAD = _RS + 'mmdet/models/dense_heads/rank_based_atss_head.py'
RS_CASCADE_SRC = (
    _RS + 'configs/ranksort_loss/ranksort_cascade_rcnn_r50_fpn_1x_coco.py')
RS_CASCADE_HEAD = _RS + 'mmdet/models/roi_heads/rankbased_cascade_roi_head.py'
RS_RCNN_HEAD = _RS + 'mmdet/models/roi_heads/bbox_heads/convfc_bbox_head.py'
RS_PAA_SRC = _RS + 'configs/ranksort_loss/ranksort_paa_r50_fpn_1x_coco.py'
RS_PAA_HEAD = _RS + 'mmdet/models/dense_heads/rank_based_paa_head.py'
RS_SCHEDULE = _RS + 'configs/_base_/schedules/schedule_1x.py'
RS_DATA = _RS + 'configs/_base_/datasets/coco_detection.py'
RS_FRCNN = _RS + 'configs/_base_/models/faster_rcnn_r50_fpn.py'
RS_README = _RS + 'README.md ("on 4 GPUs as we did")'
ALRP_RETINA_SRC = (
    _ALRP + 'configs/alrp_loss/alrp_loss_retinanet_r50_fpn_100e_coco500.py')
ALRP_ATSS_SRC = (_ALRP + 'configs/alrp_loss/'
                 'alrp_loss_retinanet_r50_fpn_ATSS_100e_coco500.py')
ALRP_DATA = _ALRP + 'configs/_base_/datasets/coco500_detection_augm.py'
ALRP_SCHEDULE = _ALRP + 'configs/_base_/schedules/schedule_1x.py'
ALRP_MODEL = _ALRP + 'configs/_base_/models/retinanet_r50_fpn.py'
ALRP_HEAD = _ALRP + 'mmdet/models/dense_heads/alrp_loss_retina_head.py'
ALRP_README = _ALRP + 'README.md ("on 4 GPUs as we did")'

STDS = [0.1, 0.1, 0.2, 0.2]
STRIDES = [8, 16, 32, 64, 128]
HEAD = 'model.bbox_head'
RCNN = 'model.roi_head.bbox_head'
TRAIN = 'train_dataloader.dataset.pipeline'
TEST = 'test_dataloader.dataset.pipeline'

#: (config, setting, the authors' value, where it is written)
ROWS = [
    # --- RS-ATSS
    (RS_ATSS, f'{HEAD}.type', 'RankSortATSSHead', RS_ATSS_SRC),
    (RS_ATSS, f'{HEAD}.anchor_generator.ratios', [1.0], RS_ATSS_SRC),
    (RS_ATSS, f'{HEAD}.anchor_generator.octave_base_scale', 4, RS_ATSS_SRC),
    (RS_ATSS, f'{HEAD}.anchor_generator.scales_per_octave', 3, RS_ATSS_SRC),
    (RS_ATSS, f'{HEAD}.anchor_generator.strides', STRIDES, RS_ATSS_SRC),
    (RS_ATSS, f'{HEAD}.bbox_coder.target_stds', STDS, RS_ATSS_SRC),
    (RS_ATSS, f'{HEAD}.loss_bbox.type', 'GIoULoss', RS_ATSS_SRC),
    (RS_ATSS, f'{HEAD}.loss_cls.delta', 0.5, RS_ATSS_HEAD),
    (RS_ATSS, 'model.neck.add_extra_convs', 'on_output', RS_ATSS_SRC),
    (RS_ATSS, 'model.train_cfg.assigner',
     dict(type='ATSSAssigner', topk=9), RS_ATSS_SRC),
    (RS_ATSS, 'model.test_cfg',
     dict(nms_pre=1000, min_bbox_size=0, score_thr=0.05,
          nms=dict(type='nms', iou_threshold=0.6), max_per_img=100),
     RS_ATSS_SRC),
    (RS_ATSS, 'train_dataloader.batch_size', 4, RS_ATSS_SRC),
    (RS_ATSS, 'optim_wrapper.optimizer.lr', 0.008, RS_ATSS_SRC),
    # --- RS-R-CNN
    (RS_RCNN, 'model.rpn_head.bbox_coder.target_stds', STDS, RS_RCNN_SRC),
    (RS_RCNN, 'model.rpn_head.loss_bbox.type', 'GIoULoss', RS_RCNN_SRC),
    (RS_RCNN, 'model.rpn_head.loss_cls.loss_weight', 0.2, RS_RCNN_SRC),
    (RS_RCNN, 'model.train_cfg.rpn.sampler.type', 'PseudoSampler',
     RS_RCNN_SRC),
    (RS_RCNN, f'{RCNN}.type', 'RankSortBBoxHead', RS_RCNN_SRC),
    (RS_RCNN, f'{RCNN}.reg_decoded_bbox', True, RS_RCNN_SRC),
    (RS_RCNN, f'{RCNN}.loss_bbox.type', 'GIoULoss', RS_RCNN_SRC),
    (RS_RCNN, f'{RCNN}.bbox_coder.target_stds', STDS, RS_RCNN_SRC),
    (RS_RCNN, 'model.test_cfg.rcnn.score_thr', 0.4, RS_RCNN_SRC),
    (RS_RCNN, 'model.test_cfg.rcnn.nms.iou_threshold', 0.5, RS_FRCNN),
    (RS_RCNN, 'model.train_cfg.rpn_proposal.nms_pre', 2000, RS_FRCNN),
    (RS_RCNN, 'model.train_cfg.rpn_proposal.max_per_img', 1000, RS_FRCNN),
    (RS_RCNN, 'train_dataloader.batch_size', 4, RS_RCNN_SRC),
    (RS_RCNN, 'optim_wrapper.optimizer.lr', 0.012, RS_RCNN_SRC),
    # --- aLRP RetinaNet
    (ALRP_RETINA, 'model.type', 'RetinaNet', ALRP_MODEL),
    (ALRP_RETINA, f'{HEAD}.type', 'ALRPRetinaHead', ALRP_RETINA_SRC),
    (ALRP_RETINA, f'{HEAD}.anchor_generator.ratios', [0.5, 1.0, 2.0],
     ALRP_MODEL),
    (ALRP_RETINA, f'{HEAD}.anchor_generator.octave_base_scale', 4,
     ALRP_MODEL),
    (ALRP_RETINA, f'{HEAD}.anchor_generator.scales_per_octave', 2,
     ALRP_RETINA_SRC),
    (ALRP_RETINA, 'model.train_cfg.assigner',
     dict(type='MaxIoUAssigner', pos_iou_thr=0.5, neg_iou_thr=0.4,
          min_pos_iou=0, ignore_iof_thr=-1), ALRP_MODEL),
    (ALRP_RETINA, 'param_scheduler.[MultiStepLR].milestones', [60, 80],
     ALRP_RETINA_SRC),
    # --- aLRP "ATSS": RetinaNet's head with ATSS assignment
    (ALRP_ATSS, 'model.type', 'RetinaNet', ALRP_ATSS_SRC),
    (ALRP_ATSS, f'{HEAD}.type', 'ALRPRetinaHead', ALRP_ATSS_SRC),
    (ALRP_ATSS, f'{HEAD}.anchor_generator.ratios', [1.0], ALRP_ATSS_SRC),
    (ALRP_ATSS, f'{HEAD}.anchor_generator.octave_base_scale', 4,
     ALRP_ATSS_SRC),
    (ALRP_ATSS, f'{HEAD}.anchor_generator.scales_per_octave', 2,
     ALRP_ATSS_SRC),
    (ALRP_ATSS, 'model.train_cfg',
     dict(assigner=dict(type='ATSSAssigner', topk=9), allowed_border=-1,
          pos_weight=-1, debug=False), ALRP_ATSS_SRC),
    (ALRP_ATSS, 'param_scheduler.[MultiStepLR].milestones', [75, 95],
     ALRP_ATSS_SRC),
]
# --- RS-Cascade R-CNN. Their `RankBasedCascadeRoIHead` differs from
# MMDetection's `CascadeRoIHead` only on the mask path (it hands the box
# weights and the RS value to the mask head); their stages'
# `RankBasedShared2FCBBoxHead` is our `RankSortBBoxHead`.
_RPN_HEAD, _ROI = 'model.rpn_head', 'model.roi_head'
_STAGES = f'{_ROI}.bbox_head'
ROWS += [
    (RS_CASCADE, 'model.type', 'CascadeRCNN', RS_CASCADE_SRC),
    (RS_CASCADE, 'model.backbone.depth', 50, RS_CASCADE_SRC),
    (RS_CASCADE, 'model.backbone.frozen_stages', 1, RS_CASCADE_SRC),
    (RS_CASCADE, 'model.backbone.norm_eval', True, RS_CASCADE_SRC),
    (RS_CASCADE, 'model.neck',
     dict(type='FPN', in_channels=[256, 512, 1024, 2048], out_channels=256,
          num_outs=5), RS_CASCADE_SRC),
    (RS_CASCADE, f'{_RPN_HEAD}.type', 'RankSortRPNHead', RS_CASCADE_SRC),
    (RS_CASCADE, f'{_RPN_HEAD}.anchor_generator',
     dict(type='AnchorGenerator', scales=[8], ratios=[0.5, 1.0, 2.0],
          strides=[4, 8, 16, 32, 64]), RS_CASCADE_SRC),
    (RS_CASCADE, f'{_RPN_HEAD}.bbox_coder.target_stds', STDS,
     RS_CASCADE_SRC),
    (RS_CASCADE, f'{_RPN_HEAD}.loss_bbox.type', 'GIoULoss', RS_CASCADE_SRC),
    # head_weight=0.20
    (RS_CASCADE, f'{_RPN_HEAD}.loss_cls.loss_weight', 0.2, RS_CASCADE_SRC),
    (RS_CASCADE, f'{_ROI}.type', 'CascadeRoIHead', RS_CASCADE_HEAD),
    (RS_CASCADE, f'{_ROI}.num_stages', 3, RS_CASCADE_SRC),
    (RS_CASCADE, f'{_ROI}.stage_loss_weights', [1, 1, 1], RS_CASCADE_SRC),
    (RS_CASCADE, f'{_ROI}.bbox_roi_extractor',
     dict(type='SingleRoIExtractor',
          roi_layer=dict(type='RoIAlign', output_size=7, sampling_ratio=0),
          out_channels=256, featmap_strides=[4, 8, 16, 32]), RS_CASCADE_SRC),
    (RS_CASCADE, f'{_STAGES}.*type', ['RankSortBBoxHead'] * 3,
     RS_CASCADE_SRC),
    (RS_CASCADE, f'{_STAGES}.*in_channels', [256] * 3, RS_CASCADE_SRC),
    (RS_CASCADE, f'{_STAGES}.*fc_out_channels', [1024] * 3, RS_CASCADE_SRC),
    (RS_CASCADE, f'{_STAGES}.*roi_feat_size', [7] * 3, RS_CASCADE_SRC),
    (RS_CASCADE, f'{_STAGES}.*num_classes', [80] * 3, RS_CASCADE_SRC),
    # the same stds in every stage (MMDetection's cascade halves them)
    (RS_CASCADE, f'{_STAGES}.*bbox_coder',
     [dict(type='DeltaXYWHBBoxCoder', target_means=[0.] * 4,
           target_stds=STDS)] * 3, RS_CASCADE_SRC),
    (RS_CASCADE, f'{_STAGES}.*reg_class_agnostic', [True] * 3,
     RS_CASCADE_SRC),
    (RS_CASCADE, f'{_STAGES}.*reg_decoded_bbox', [True] * 3, RS_CASCADE_SRC),
    # GIoULoss(reduction='none'): weight 1, the head reduces
    (RS_CASCADE, f'{_STAGES}.*loss_bbox',
     [dict(type='GIoULoss', loss_weight=1.0)] * 3, RS_CASCADE_SRC),
    # RankSort.apply(flat_preds, flat_labels): its default delta 0.5
    (RS_CASCADE, f'{_STAGES}.*loss_cls',
     [dict(type='RankSortLoss', delta=0.5)] * 3, RS_RCNN_HEAD),
    (RS_CASCADE, 'model.train_cfg.rpn.assigner',
     dict(type='MaxIoUAssigner', pos_iou_thr=0.7, neg_iou_thr=0.3,
          min_pos_iou=0.3, match_low_quality=True, ignore_iof_thr=-1),
     RS_CASCADE_SRC),
    (RS_CASCADE, 'model.train_cfg.rpn.sampler.type', 'PseudoSampler',
     RS_CASCADE_SRC),
    (RS_CASCADE, 'model.train_cfg.rpn.allowed_border', 0, RS_CASCADE_SRC),
    (RS_CASCADE, 'model.train_cfg.rpn.pos_weight', -1, RS_CASCADE_SRC),
    # their nms_pre 2000, nms_post = max_num 1000, nms_thr 0.7
    (RS_CASCADE, 'model.train_cfg.rpn_proposal',
     dict(nms_pre=2000, max_per_img=1000,
          nms=dict(type='nms', iou_threshold=0.7), min_bbox_size=0),
     RS_CASCADE_SRC),
    (RS_CASCADE, 'model.train_cfg.rcnn.*assigner', [
        dict(type='MaxIoUAssigner', pos_iou_thr=iou, neg_iou_thr=iou,
             min_pos_iou=iou, match_low_quality=False, ignore_iof_thr=-1)
        for iou in (0.5, 0.6, 0.7)], RS_CASCADE_SRC),
    (RS_CASCADE, 'model.train_cfg.rcnn.*sampler', [
        dict(type='RandomSampler', num=1e10, pos_fraction=0.25,
             neg_pos_ub=-1, add_gt_as_proposals=True)] * 3, RS_CASCADE_SRC),
    (RS_CASCADE, 'model.train_cfg.rcnn.*pos_weight', [-1] * 3,
     RS_CASCADE_SRC),
    (RS_CASCADE, 'model.test_cfg.rpn',
     dict(nms_pre=1000, max_per_img=1000,
          nms=dict(type='nms', iou_threshold=0.7), min_bbox_size=0),
     RS_CASCADE_SRC),
    (RS_CASCADE, 'model.test_cfg.rcnn',
     dict(score_thr=0.4, nms=dict(type='nms', iou_threshold=0.5),
          max_per_img=100), RS_CASCADE_SRC),
    (RS_CASCADE, 'train_dataloader.batch_size', 4, RS_CASCADE_SRC),
    (RS_CASCADE, 'optim_wrapper.optimizer.lr', 0.012, RS_CASCADE_SRC),
]
# --- RS-PAA (their loss_cls FocalLoss scores PAA's candidates only:
# test_rs_paa_scores_candidates_with_the_authors_focal_loss)
ROWS += [
    (RS_PAA, 'model.type', 'PAA', RS_PAA_SRC),
    (RS_PAA, 'model.backbone.depth', 50, RS_PAA_SRC),
    (RS_PAA, 'model.backbone.frozen_stages', 1, RS_PAA_SRC),
    (RS_PAA, 'model.neck',
     dict(type='FPN', in_channels=[256, 512, 1024, 2048], out_channels=256,
          start_level=1, add_extra_convs='on_output', num_outs=5),
     RS_PAA_SRC),
    (RS_PAA, f'{HEAD}.type', 'RankSortPAAHead', RS_PAA_SRC),
    (RS_PAA, f'{HEAD}.reg_decoded_bbox', True, RS_PAA_SRC),
    (RS_PAA, f'{HEAD}.score_voting', True, RS_PAA_SRC),
    (RS_PAA, f'{HEAD}.topk', 9, RS_PAA_SRC),
    (RS_PAA, f'{HEAD}.num_classes', 80, RS_PAA_SRC),
    (RS_PAA, f'{HEAD}.in_channels', 256, RS_PAA_SRC),
    (RS_PAA, f'{HEAD}.stacked_convs', 4, RS_PAA_SRC),
    (RS_PAA, f'{HEAD}.feat_channels', 256, RS_PAA_SRC),
    (RS_PAA, f'{HEAD}.anchor_generator',
     dict(type='AnchorGenerator', ratios=[1.0], octave_base_scale=4,
          scales_per_octave=3, strides=STRIDES), RS_PAA_SRC),
    (RS_PAA, f'{HEAD}.bbox_coder',
     dict(type='DeltaXYWHBBoxCoder', target_means=[0.] * 4,
          target_stds=STDS), RS_PAA_SRC),
    (RS_PAA, f'{HEAD}.loss_bbox', dict(type='GIoULoss', loss_weight=1.0),
     RS_PAA_SRC),
    (RS_PAA, f'{HEAD}.loss_cls', dict(type='RankSortLoss', delta=0.5),
     RS_PAA_HEAD),  # rank_loss_type='RankSort', delta=0.5
    (RS_PAA, 'model.train_cfg',
     dict(assigner=dict(type='MaxIoUAssigner', pos_iou_thr=0.1,
                        neg_iou_thr=0.1, min_pos_iou=0, ignore_iof_thr=-1),
          allowed_border=-1, pos_weight=-1, debug=False), RS_PAA_SRC),
    (RS_PAA, 'model.test_cfg',
     dict(nms_pre=1000, min_bbox_size=0, score_thr=0.05,
          nms=dict(type='nms', iou_threshold=0.6), max_per_img=100),
     RS_PAA_SRC),
    (RS_PAA, 'train_dataloader.batch_size', 4, RS_PAA_SRC),
    (RS_PAA, 'optim_wrapper.optimizer.lr', 0.008, RS_PAA_SRC),
]
for _config in ALRP:  # what both aLRP recipes share
    _src = ALRP_ATSS_SRC if _config == ALRP_ATSS else ALRP_RETINA_SRC
    ROWS += [
        (_config, f'{HEAD}.anchor_generator.strides', STRIDES, _src),
        (_config, f'{HEAD}.bbox_coder.target_stds', STDS, _src),
        (_config, f'{HEAD}.loss_bbox.type', 'GIoULoss', _src),
        (_config, f'{HEAD}.loss_cls.sb_weight', 50.0, ALRP_HEAD),
        (_config, 'model.neck.add_extra_convs', 'on_input', _src),
        (_config, 'model.test_cfg',
         dict(nms_pre=1000, min_bbox_size=0, score_thr=0.05,
              nms=dict(type='nms', iou_threshold=0.5), max_per_img=100),
         _src),
        (_config, 'train_cfg.max_epochs', 100, _src),
        (_config, 'optim_wrapper.optimizer.lr', 0.008, _src),
        (_config, 'train_dataloader.batch_size', 8, ALRP_DATA),
        (_config, f'{TRAIN}.*type', [
            'LoadImageFromFile', 'LoadAnnotations', 'PhotoMetricDistortion',
            'Expand', 'MinIoURandomCrop', 'Resize', 'RandomFlip',
            'PackDetInputs'
        ], ALRP_DATA),
        (_config, f'{TRAIN}.[PhotoMetricDistortion]',
         dict(type='PhotoMetricDistortion', brightness_delta=32,
              contrast_range=(0.5, 1.5), saturation_range=(0.5, 1.5),
              hue_delta=18), ALRP_DATA),
        (_config, f'{TRAIN}.[Expand]',
         dict(type='Expand', mean=[123.675, 116.28, 103.53], to_rgb=True,
              ratio_range=(1, 4)), ALRP_DATA),
        (_config, f'{TRAIN}.[MinIoURandomCrop]',
         dict(type='MinIoURandomCrop', min_ious=(0.1, 0.3, 0.5, 0.7, 0.9),
              min_crop_size=0.3), ALRP_DATA),
        (_config, f'{TRAIN}.[Resize]',
         dict(type='Resize', scale=(512, 512), keep_ratio=False), ALRP_DATA),
        (_config, f'{TRAIN}.[RandomFlip].prob', 0.5, ALRP_DATA),
        (_config, f'{TEST}.[Resize]',
         dict(type='Resize', scale=(833, 500), keep_ratio=True), ALRP_DATA),
        # SB: their head sets it every 3,665 counted iterations at batch
        # 32, one epoch (test_sb_period_is_one_coco_epoch), from the start
        (_config, 'custom_hooks',
         [dict(type='ALRPSelfBalanceHook', period_epochs=1, begin=0)],
         ALRP_HEAD),
        (_config, 'param_scheduler.[LinearLR]',
         dict(type='LinearLR', start_factor=0.001, by_epoch=False, begin=0,
              end=500), ALRP_SCHEDULE),
        (_config, 'optim_wrapper.optimizer.momentum', 0.9, ALRP_SCHEDULE),
        (_config, 'optim_wrapper.optimizer.weight_decay', 1e-4,
         ALRP_SCHEDULE),
        (_config, 'optim_wrapper.clip_grad', None, ALRP_SCHEDULE),
    ]
for _config, _src in ((RS_ATSS, RS_ATSS_SRC), (RS_RCNN, RS_RCNN_SRC),
                      (RS_CASCADE, RS_CASCADE_SRC), (RS_PAA, RS_PAA_SRC)):
    # MMDetection 2.x's 1x, theirs
    ROWS += [
        (_config, 'train_cfg.max_epochs', 12, RS_SCHEDULE),
        (_config, 'param_scheduler.[MultiStepLR].milestones', [8, 11],
         RS_SCHEDULE),
        (_config, 'param_scheduler.[LinearLR]',
         dict(type='LinearLR', start_factor=0.001, by_epoch=False, begin=0,
              end=500), RS_SCHEDULE),
        (_config, 'optim_wrapper.optimizer.momentum', 0.9, _src),
        (_config, 'optim_wrapper.optimizer.weight_decay', 1e-4, _src),
        (_config, 'optim_wrapper.clip_grad', None, RS_SCHEDULE),
        (_config, f'{TRAIN}.[Resize]',
         dict(type='Resize', scale=(1333, 800), keep_ratio=True), RS_DATA),
        (_config, f'{TRAIN}.[RandomFlip].prob', 0.5, RS_DATA),
        (_config, f'{TEST}.[Resize]',
         dict(type='Resize', scale=(1333, 800), keep_ratio=True), RS_DATA),
    ]

#: GPUs of the authors' runs (their READMEs' training commands)
GPUS = {RS_ATSS: (4, RS_README), RS_RCNN: (4, RS_README),
        RS_CASCADE: (4, RS_README), RS_PAA: (4, RS_README),
        ALRP_RETINA: (4, ALRP_README), ALRP_ATSS: (4, ALRP_README)}
#: COCO train2017 images with a box (MMDetection's ``filter_empty_gt``)
COCO_TRAIN_IMAGES = 117266


def load(name):
    """The config, parsed once per run (a copy: a test may change it)."""
    return read_config(osp.join(CONFIG_DIR, name))


def setting(cfg, path):
    """The value at a dotted ``path``: keys, ``[Type]`` (the element of a
    list with that ``type``), ``*key`` (that key of every element)."""
    node = cfg.to_dict() if hasattr(cfg, 'to_dict') else cfg
    for part in path.split('.'):
        if part.startswith('[') and part.endswith(']'):
            found = [x for x in node if x.get('type') == part[1:-1]]
            assert len(found) == 1, (path, part, len(found))
            node = found[0]
        elif part.startswith('*'):
            node = [x[part[1:]] for x in node]
        else:
            node = node.get(part) if isinstance(node, dict) else None
    return node


def _plain(value):
    """Drop MMEngine's ``_scope_`` and compare tuples as lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != '_scope_'}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def test_every_recipe_has_rows():
    assert {row[0] for row in ROWS} == set(RECIPES)
    assert all(src.startswith(('kemaloksuz/RankSortLoss: ',
                               'kemaloksuz/aLRPLoss: '))
               for *_, src in ROWS)


@pytest.mark.parametrize('config, path, value, source', ROWS,
                         ids=[f'{r[0]}:{r[1]}' for r in ROWS])
def test_the_config_has_the_authors_value(config, path, value, source):
    assert _plain(setting(load(config), path)) == _plain(value), source


@pytest.mark.parametrize('config', RECIPES)
def test_the_batch_is_the_authors_gpus_times_images(config):
    """``auto_scale_lr.base_batch_size`` is the authors' total batch, and
    the header names their GPU count."""
    gpus, source = GPUS[config]
    cfg = load(config)
    per_gpu = cfg.train_dataloader.batch_size
    assert cfg.auto_scale_lr == dict(enable=True,
                                     base_batch_size=gpus * per_gpu), source
    with open(osp.join(CONFIG_DIR, config), encoding='utf-8') as f:
        header = f.read().split('_base_ =', 1)[0].replace('\n#', '')
    assert f"the authors' {gpus} GPUs x {per_gpu} images" in header, source
    assert f'`tools/dist_train.sh CONFIG {gpus}`' in header, source


@pytest.mark.parametrize('name, source', [(RS_RCNN, RS_RCNN_SRC),
                                          (RS_CASCADE, RS_CASCADE_SRC)])
def test_rs_rcnn_uses_every_roi(name, source):
    """Theirs: ``rcnn=dict(sampler=dict(num=1e10))`` over MMDetection's
    RandomSampler (pos_fraction 0.25), in every stage of the cascade: every
    positive and every negative of the 1000 proposals an image plus its
    ground truths."""
    cfg = load(name)
    stages = cfg.model.train_cfg.rcnn
    rois = cfg.model.train_cfg.rpn_proposal.max_per_img + 100  # + gts
    for stage in stages if isinstance(stages, list) else [stages]:
        sampler = stage.sampler
        assert sampler.type == 'RandomSampler' and \
            sampler.add_gt_as_proposals
        assert sampler.num * sampler.pos_fraction >= rois, source
        assert sampler.num >= rois and sampler.neg_pos_ub == -1, source


def test_rs_paa_scores_candidates_with_the_authors_focal_loss():
    """Their ``loss_cls`` (FocalLoss, gamma 2, alpha 0.25, weight 1) scores
    PAA's candidates beside GIoU; RS trains the head."""
    from mmengine.registry import init_default_scope
    from mmdet.registry import MODELS
    init_default_scope('mmdet')
    head = load(RS_PAA).model.bbox_head
    focal = MODELS.build(head).assign_cls_loss
    assert (type(focal).__name__, focal.use_sigmoid, focal.gamma,
            focal.alpha, focal.loss_weight) == ('FocalLoss', True, 2.0,
                                                0.25, 1.0), RS_PAA_SRC


def test_sb_period_is_one_coco_epoch():
    """Their 3,665 iterations (``self.period = 3665``) are one epoch of
    COCO's training images at their batch of 32; the configs' period of
    one epoch gives that number there, and one epoch at any other batch."""
    from types import SimpleNamespace

    from mmdet.registry import HOOKS
    from torch.utils.data import DataLoader
    assert math.ceil(COCO_TRAIN_IMAGES / 32) == 3665, ALRP_HEAD
    for config in ALRP:
        hook = HOOKS.build(load(config).custom_hooks[0])
        for batch in (32, 16):
            loader = DataLoader(range(COCO_TRAIN_IMAGES), batch_size=batch)
            runner = SimpleNamespace(max_iters=100 * len(loader),
                                     train_dataloader=loader,
                                     param_schedulers=None)
            assert hook.resolve(runner) == (0, math.ceil(
                COCO_TRAIN_IMAGES / batch))


# ------------------------------------------------- build and train a step
def build(name):
    """The config's model, without pretrained weights."""
    from mmengine.registry import init_default_scope
    from mmdet.registry import MODELS
    init_default_scope('mmdet')
    cfg = load(name)
    cfg.model.backbone.init_cfg = None  # never download weights in tests
    if name == RS_CASCADE:  # 100 proposals an image: a shorter CPU step
        cfg.model.train_cfg.rpn_proposal.max_per_img = 100
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    return model, cfg


#: what the built heads must be (the authors' networks)
NETWORKS = {
    # their RankBasedATSSHead: GroupNorm, a Scale per level, 3 anchors
    RS_ATSS: dict(anchors=3, group_norm=True, scales=True),
    # their RankBasedPAAHead (on their QFLHead): the same network
    RS_PAA: dict(anchors=3, group_norm=True, scales=True),
    # their aLRPLossRetinaHead: RetinaNet's towers, 6 and 2 anchors
    ALRP_RETINA: dict(anchors=6, group_norm=False, scales=False),
    ALRP_ATSS: dict(anchors=2, group_norm=False, scales=False),
}


@pytest.mark.parametrize('name', RECIPES)
def test_the_model_builds_and_trains_one_step(name, detection_batch):
    from mmengine.optim import build_optim_wrapper
    model, cfg = build(name)
    model.train()
    if name in (RS_RCNN, RS_CASCADE):
        head = model.roi_head.bbox_head
        head = head[-1] if name == RS_CASCADE else head
        classifier = head.fc_cls
        num_classes = head.num_classes
    else:
        head = model.bbox_head
        classifier = head.atss_cls if hasattr(head, 'atss_cls') else \
            head.retina_cls
        num_classes = head.num_classes
        want = NETWORKS[name]
        assert head.num_base_priors == want['anchors']
        assert any(isinstance(m, torch.nn.GroupNorm)
                   for m in head.modules()) == want['group_norm']
        assert hasattr(head, 'scales') == want['scales']
    assert num_classes == 80
    before = classifier.weight.detach().clone()
    optim_wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    log_vars = model.train_step(detection_batch(num_classes, 64),
                                optim_wrapper)
    keys = {
        RS_ATSS: ['loss_rank_sort', 'loss_bbox'],
        RS_RCNN: ['loss_rank_sort', 'loss_rpn_cls', 'loss_rpn_bbox'],
        RS_PAA: ['loss_rank_sort', 'loss_bbox'],
        RS_CASCADE: ['s0.loss_rank_sort', 's1.loss_rank_sort',
                     's2.loss_rank_sort', 'loss_rpn_cls', 'loss_rpn_bbox'],
    }.get(name, ['loss_alrp_cls', 'loss_alrp_loc'])
    for key in keys + ['loss']:
        assert torch.isfinite(log_vars[key]).item(), (key, log_vars)
    assert not torch.equal(before, classifier.weight.detach())
    if name == RS_CASCADE:  # each stage's box term has its RS value
        for stage in range(3):
            assert log_vars[f's{stage}.loss_bbox'].item() == pytest.approx(
                log_vars[f's{stage}.loss_rank_sort'].item(), rel=1e-5)


@pytest.mark.parametrize('name', ALRP)
def test_the_512_pipeline_runs(name):
    """The SSD-style training pipeline (after loading) on a synthetic
    640 x 480 image with two boxes: a 512 x 512 float image, boxes inside
    it."""
    from mmcv.transforms import Compose
    from mmengine.registry import init_default_scope
    from mmdet.structures.bbox import HorizontalBoxes
    init_default_scope('mmdet')
    pipeline = Compose(load(name).train_dataloader.dataset.pipeline[2:])
    rng = np.random.default_rng(0)
    for seed in range(3):
        np.random.seed(seed)  # the random transforms draw from numpy
        out = pipeline(dict(
            img=rng.integers(0, 256, (480, 640, 3), dtype=np.uint8),
            img_shape=(480, 640), ori_shape=(480, 640),
            gt_bboxes=HorizontalBoxes(torch.tensor(
                [[40., 60., 300., 400.], [320., 100., 600., 300.]])),
            gt_bboxes_labels=np.array([3, 7]),
            gt_ignore_flags=np.array([False, False]),
            img_id=0, img_path='synthetic.jpg'))
        inputs, sample = out['inputs'], out['data_samples']
        assert tuple(inputs.shape) == (3, 512, 512)
        boxes = sample.gt_instances.bboxes.tensor
        assert len(boxes) >= 1
        assert bool((boxes >= 0).all() and (boxes <= 512).all())
