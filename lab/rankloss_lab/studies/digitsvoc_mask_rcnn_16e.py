# Study: the rank losses in Mask R-CNN. Cross-entropy, the mix (RaMBO AP +
# sigmoid cross-entropy) and RS-Mask R-CNN (Rank & Sort, Dice mask loss) on
# Mask R-CNN R18-w32 FPN, from scratch, 16 epochs, DigitsVOC with instance
# masks: 3 methods, each with its lr selected here (docs/instance_segmentation.md).
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_mask_rcnn_16e.py --dry-run
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_mask_rcnn_16e.py --phase select --jobs 2
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_mask_rcnn_16e.py --freeze
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_mask_rcnn_16e.py --phase test --jobs 2
# Scored by CocoMetric: the lrs are selected on val box AP50 (the boxes are
# what the three losses rank; the mask branch follows the box head), and
# test box AP50 and mask AP50 are both reported and compared.
# Its own data root: `--masks` writes the same images as the detection
# set, but the detection studies' `data/digits_voc` stays untouched.
description = """Mask R-CNN R18-w32 FPN **from scratch**, 16 epochs (lr /
10 after 12), batch 8, DigitsVOC with instance masks, train (384 images) /
val (160) / test (320): cross-entropy, the mix (RaMBO AP + sigmoid
cross-entropy) and RS-Mask R-CNN, every lr selected in this study on val
box AP50 on a factor-2 grid around the config's."""
_root = 'data/digits_voc_masks/VOCdevkit'
data = dict(
    root=_root,
    make=['tools/dataset_converters/make_digits_voc.py', '{root}',
          '--masks'])
metric = 'coco/bbox_mAP_50'
extra_metrics = ['coco/segm_mAP_50']
select_seeds = [5, 11]
seeds = [6, 7, 8, 9, 10]
baseline = 'ce'
preregistered = True  # no test run without the frozen file
fair_selection = True
# The configs read data/digits_voc/VOCdevkit: every split and both
# evaluators point at this study's root instead. Test-time score threshold
# 0 for every method, as the RS config ships (rank-trained scores have no
# scale).
options = [
    f'{split}_dataloader.dataset.data_root={_root}/'
    for split in ('train', 'val', 'test')
] + [
    f'{split}_evaluator.ann_file={_root}/annotations/instances_{split}.json'
    for split in ('val', 'test')
] + ['model.test_cfg.rcnn.score_thr=0.0']
# A val loop (160 images, 100 masks each at score threshold 0) costs about
# as much as a training epoch, and a test run's val values decide nothing:
# the test trainings validate once, after their last epoch (the val AP50
# each run records), not after every epoch as the selection runs do.
test_phase_options = ['train_cfg.val_interval=16']
_config = 'configs/mask_rcnn/mask-rcnn_r18-w32_fpn_{}_16e_digitsvoc.py'
# Three factor-2 points centred on each config's lr (CE and the mix 0.04,
# RS 0.02: their Faster R-CNN twins'); a best at an edge makes --freeze
# ask for the step beyond it, the same rule for every method.
methods = dict(
    ce=dict(label='Mask R-CNN, cross-entropy', config=_config.format('ce'),
            lrs=[0.02, 0.04, 0.08]),
    rambo_bce=dict(label='Mask R-CNN, RaMBO AP + sigmoid CE (the mix)',
                   config=_config.format('rambo-bce'),
                   lrs=[0.02, 0.04, 0.08]),
    rank_sort=dict(label='RS-Mask R-CNN (Rank & Sort, Dice mask loss)',
                   config=_config.format('rank-sort'),
                   lrs=[0.01, 0.02, 0.04]),
)
# Each rank loss against cross-entropy on box AP50 and on mask AP50,
# two-sided: one family of four, Holm over the four.
hypotheses = [
    dict(method='rambo_bce', metric='coco/bbox_mAP_50'),
    dict(method='rank_sort', metric='coco/bbox_mAP_50'),
    dict(method='rambo_bce', metric='coco/segm_mAP_50'),
    dict(method='rank_sort', metric='coco/segm_mAP_50'),
]
