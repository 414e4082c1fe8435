# Study: the dense rank-loss comparison with fair baselines. Focal loss,
# RaMBO (logits) + focal, Rank & Sort and aLRP on ATSS and on RetinaNet
# R18-w32 FPN, from scratch, 16 epochs, DigitsVOC: 8 methods, each with its
# lr selected here, on one grid, with one seed (docs/losses.md,
# docs/dense.md).
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dense_fixed_16e.py --dry-run
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dense_fixed_16e.py --phase select --jobs 2
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dense_fixed_16e.py --freeze
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dense_fixed_16e.py --phase test --jobs 2
# Why: in `digitsvoc_dense_retinanet_rank_sort_16e` focal's lr came from
# another study's seed 0 (`digitsvoc_dense_retinanet_16e`), its best at the
# upper edge of its grid (0.08) never widened, while the rank losses' grids
# were widened twice; the ATSS study also took focal's and the mix's lrs
# from other studies. Here `fair_selection = True`: `--freeze` refuses
# unless every declared method was selected in this study, on grids of one
# density, with its best inside its grid (or the step beyond the edge
# diverged), and a method that collapsed on the selection seed was
# re-selected on the mean over seeds 5 and 11 (`reselect_seed`, default).
_base_ = './digitsvoc_scratch_16e.py'  # data
description = """ATSS and RetinaNet R18-w32 FPN **from scratch**, 16 epochs
(lr / 10 after 12), batch 8, DigitsVOC train (384 images) / val (160) / test
(320): focal, RaMBO (logits) + focal, Rank & Sort, aLRP for each detector,
every lr selected in this study on one factor-2 grid."""
baseline = 'atss_focal'  # each hypothesis names its detector's focal
select_seed = 5
seeds = [6, 7, 8, 9, 10]
preregistered = True  # no test run without the frozen file
fair_selection = True
# One evaluation for every method: test-time score threshold 0 (up to 100
# boxes per image, as the RS / aLRP configs ship). Rank-trained scores have
# no scale: from scratch an RS-trained ATSS kept every test score below
# MMDetection's 0.05, which the focal and mix configs ship; a lower
# threshold alone would also hand a method the AP of its low-scored boxes.
options = ['model.test_cfg.score_thr=0.0']

# One grid for all 8 methods: 6 factor-2 points, 0.005 ... 0.16. The earlier
# studies' bests (val AP50, one selection seed): ATSS focal 0.01, logits mix
# 0.01, RS 0.005, aLRP 0.0025; RetinaNet focal 0.08 (its grid's upper edge),
# logits mix 0.08, RS 0.04, aLRP 0.02. Six points cannot hold 0.0025 and one
# step beyond focal's 0.08 (0.16) at once; this grid holds the step beyond
# the edge that was never widened (the reviewer's finding) and every other
# best, ATSS aLRP's 0.0025 excepted, one step below: if a best lands at
# 0.005 or 0.16, --freeze asks for 0.0025 or 0.32, the same rule for every
# method.
_grid = [0.005, 0.01, 0.02, 0.04, 0.08, 0.16]
_atss = 'configs/dense/atss/atss_r18-w32_fpn_{}_16e_digitsvoc.py'
_retina = 'configs/dense/retinanet/retinanet_r18-w32_fpn_{}_16e_digitsvoc.py'
# the mix ranks the logits for both heads (the RetinaNet config ships the
# sigmoid scores; ATSS's ships the logits: said for both)
_logits = ['model.bbox_head.loss_cls.rank_loss.score_space=logits']
methods = dict(
    _delete_=True,  # not the two-stage study's methods
    atss_focal=dict(label='ATSS, focal loss', config=_atss.format('focal'),
                    lrs=_grid),
    atss_rambo_focal=dict(label='ATSS, RaMBO (logits) + focal',
                          config=_atss.format('rambo-focal'), lrs=_grid,
                          options=_logits),
    atss_rank_sort=dict(label='ATSS, Rank & Sort (delta 0.5)',
                        config=_atss.format('rank-sort'), lrs=_grid),
    # widened below twice: its val AP50 fell from the lower edge (0.005:
    # 24.2, 0.01: 18.8; the earlier study's best was 0.0025), then 0.0025
    # tied 0.005 at 24.2 and the tie went to the lower lr, at the edge again
    atss_alrp=dict(label='ATSS, aLRP (delta 1, SB weighting)',
                   config=_atss.format('alrp'),
                   lrs=[0.00125, 0.0025] + _grid),
    retina_focal=dict(label='RetinaNet, focal loss',
                      config=_retina.format('focal'), lrs=_grid),
    retina_rambo_focal=dict(label='RetinaNet, RaMBO (logits) + focal',
                            config=_retina.format('rambo-focal'), lrs=_grid,
                            options=_logits),
    retina_rank_sort=dict(label='RetinaNet, Rank & Sort (delta 0.5)',
                          config=_retina.format('rank-sort'), lrs=_grid),
    retina_alrp=dict(label='RetinaNet, aLRP (delta 1, SB weighting)',
                     config=_retina.format('alrp'), lrs=_grid),
)
# Each loss against its detector's focal loss, two-sided: the earlier
# studies pointed both ways (aLRP -3.9 behind focal on ATSS, +8.5 ahead of a
# focal that collapsed on RetinaNet). One family of six, Holm over the six.
hypotheses = [
    dict(method='atss_rank_sort', baseline='atss_focal',
         alternative='two-sided'),
    dict(method='atss_alrp', baseline='atss_focal', alternative='two-sided'),
    dict(method='atss_rambo_focal', baseline='atss_focal',
         alternative='two-sided'),
    dict(method='retina_rank_sort', baseline='retina_focal',
         alternative='two-sided'),
    dict(method='retina_alrp', baseline='retina_focal',
         alternative='two-sided'),
    dict(method='retina_rambo_focal', baseline='retina_focal',
         alternative='two-sided'),
]
