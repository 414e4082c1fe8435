"""The numbers of the study reports, read once: the one reader of a report's
CSV (``docs/evidence/<study>.csv``), and the results rows the docs quote:
:data:`RESULTS`, the blocks of the README's results table, and :data:`EXTRA`,
studies whose rows only the metafiles quote
(:mod:`rankloss_lab.metafile_results`).
"""
import csv
import os.path as osp
from typing import Dict, List, Optional, Sequence

from rankloss_lab.paths import ROOT
from rankloss_lab.runner import read_json

__all__ = ['EVIDENCE', 'ROOT', 'RESULTS', 'EXTRA', 'DINO_PROTOCOL', 'read_csv',
           'study_rows', 'test_values', 'metric_column', 'frozen_settings']

EVIDENCE = 'docs/evidence'


def read_csv(path: str) -> List[dict]:
    """The rows of a study's CSV."""
    with open(path, newline='', encoding='utf-8') as f:
        return list(csv.DictReader(f))


def test_values(rows: Sequence[dict], method: str,
                metric: Optional[str] = None) -> Dict[int, float]:
    """``{seed: value}`` of ``method``'s test rows at its selected lr in the
    CSV column ``metric`` (default ``test_r1`` in a retrieval report, else
    ``test_ap50``); two rows of one seed are an error."""
    if metric is None:
        metric = 'test_r1' if rows and 'test_r1' in rows[0] else 'test_ap50'
    out: Dict[int, float] = {}
    for r in rows:
        if (r['method'] == method and r['selected_lr'] == 'True'
                and r.get(metric, '') != ''):
            seed = int(r['seed'])
            if seed in out:
                raise ValueError(f'{method}: two test rows for seed {seed}')
            out[seed] = float(r[metric])
    return out


def metric_column(rows: Sequence[dict],
                  metric: Optional[str]) -> Optional[str]:
    """``test_<metric>`` for an extra metric of the study, else None."""
    column = f'test_{metric}' if metric else None
    return column if rows and column in rows[0] else None


def frozen_settings(study: str, evidence: str) -> Optional[dict]:
    """The ``settings`` of ``<evidence>/<study>_preregistration.json``;
    None where the study was not frozen."""
    record = read_json(osp.join(evidence, f'{study}_preregistration.json'))
    return None if record is None else record['settings']


def study_rows(study: str, root: str = ROOT) -> List[dict]:
    """The rows of ``docs/evidence/<study>.csv`` under ``root``."""
    return read_csv(osp.join(root, EVIDENCE, f'{study}.csv'))


_FRCNN = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_{}_16e_digitsvoc.py'
_ATSS = 'configs/dense/atss/atss_r18-w32_fpn_{}_16e_digitsvoc.py'
_RETINA = 'configs/dense/retinanet/retinanet_r18-w32_fpn_{}_16e_digitsvoc.py'
_ATSS56 = _ATSS.replace('_16e_', '_56e_')
_RETINA56 = _RETINA.replace('_16e_', '_56e_')
_FCOS = 'configs/dense/fcos/fcos_r18-w32_fpn_{}_16e_digitsvoc.py'
_MASK = 'configs/mask_rcnn/mask-rcnn_r18-w32_fpn_{}_16e_digitsvoc.py'
_GLYPHS = ('configs/digitsvoc/'
           'faster-rcnn_r18-w32-glyphs_fpn_{}_12e_digitsvoc.py')
_DINO = 'configs/dino/dino-4scale_r18-w32-glyphs_{}_36e_digitsvoc.py'
#: The DigitsVOC DINO of ``digitsvoc_dino_long`` (its verdict scope too).
DINO_PROTOCOL = ('DINO (3 + 3 layers, 100 queries) R18-w32, glyph-pretrained '
                 'backbone, 36 epochs')
_DIGITS = ('configs/retrieval/'
           'retrieval_r18-w16_rambo-log_20e_digit-instances.py')

_THR0 = ('tested at score_thr 0, as every method of the study; the config '
         'ships 0.05')


def _rows(template: str, *rows: tuple) -> List[tuple]:
    """Rows ``(method, label, name, change='')``, ``name`` filled into the
    config path ``template``."""
    return [(m, label, template.format(name), *(change or ('', )))
            for m, label, name, *change in rows]


def _ap50(study: str, baseline: str, label: str, protocol: str, rows: list,
          **kwargs) -> dict:
    """A DigitsVOC block of test AP50."""
    return dict(study=study, metric='test_ap50', baseline=baseline,
                baseline_label=label, data='DigitsVOC', protocol=protocol,
                rows=rows, **kwargs)


_MIX = '**RaMBO + sigmoid CE** (`MixedRankLoss`)'
_16 = 'R18-w32 FPN, from scratch, 16 epochs'
_56 = 'R18-w32 FPN, from scratch, 56 epochs, fresh test split'

# One block per study report: its rows are (method in the CSV, label, config
# file, what the study changed in that config, or '').
RESULTS = [
    _ap50('digitsvoc_scratch_16e', 'ce', 'CE', f'Faster R-CNN {_16}', _rows(
        _FRCNN, ('ce', 'cross-entropy', 'ce'),
        ('rambo', 'RaMBO, paper settings', 'rambo', '`margin=0.15`'),
        ('margin0', 'RaMBO, margin 0', 'rambo'),
        ('rambo_bce', _MIX, 'rambo-bce'))),
    # against CE at 0.04: CE at its val-selected 0.08 diverged with 2 seeds
    _ap50('digitsvoc_pretrained_12e', 'ce_lr004', 'CE at 0.04 (exploratory)',
          'Faster R-CNN R18-w32 FPN, glyph-pretrained backbone, 12 epochs',
          _rows(_GLYPHS, ('ce_lr004', 'cross-entropy', 'ce'),
                ('ce', 'cross-entropy, lr selected on val', 'ce',
                 '`lr=0.08`'),
                ('rambo', 'RaMBO, paper settings', 'rambo'),
                ('margin0', 'RaMBO, margin 0', 'rambo', '`margin=0`'),
                ('rambo_bce', _MIX, 'rambo-bce'))),
    # every run evaluated with score_thr 0 (the focal and mix configs ship
    # MMDetection's 0.05: their notes say so)
    _ap50('digitsvoc_dense_fixed_16e', 'atss_focal', 'focal',
          f'ATSS {_16}', _rows(
              _ATSS, ('atss_focal', 'focal loss', 'focal'),
              ('atss_rambo_focal', '**RaMBO (logits) + focal**',
               'rambo-focal'),
              ('atss_rank_sort', 'Rank & Sort', 'rank-sort'),
              ('atss_alrp', 'aLRP', 'alrp')),
          notes=dict(atss_focal=_THR0, atss_rambo_focal=_THR0)),
    _ap50('digitsvoc_dense_fixed_16e', 'retina_focal', 'focal',
          f'RetinaNet {_16}', _rows(
              _RETINA, ('retina_focal', 'focal loss', 'focal'),
              ('retina_rambo_focal', 'RaMBO (logits) + focal',
               'rambo-focal'),
              ('retina_rank_sort', '**Rank & Sort**', 'rank-sort',
               '`lr=0.08`'),
              ('retina_alrp', 'aLRP', 'alrp')),
          notes=dict(retina_focal=_THR0)),
    _ap50('digitsvoc_dense_fcos_16e', 'fcos_focal', 'focal',
          f'FCOS {_16}', _rows(
              _FCOS, ('fcos_focal', 'focal loss', 'focal'),
              ('fcos_rambo_focal', '**RaMBO (logits) + focal**',
               'rambo-focal'),
              ('fcos_rank_sort', 'Rank & Sort', 'rank-sort')),
          notes=dict(fcos_focal=_THR0, fcos_rambo_focal=_THR0)),
    _ap50('confirm_dense_long', 'retina_focal', 'focal', f'RetinaNet {_56}',
          _rows(_RETINA56,
                ('retina_focal', 'focal loss', 'focal', '`lr=0.08`'),
                ('retina_rank_sort', 'Rank & Sort', 'rank-sort')),
          split='confirm_long', notes=dict(retina_focal=_THR0)),
    _ap50('confirm_dense_long', 'atss_focal', 'focal', f'ATSS {_56}',
          _rows(_ATSS56, ('atss_focal', 'focal loss', 'focal'),
                ('atss_rambo_focal', 'RaMBO (logits) + focal',
                 'rambo-focal')),
          split='confirm_long',
          notes=dict(atss_focal=_THR0, atss_rambo_focal=_THR0)),
    _ap50('digitsvoc_rank_sort_frcnn_16e', 'ce', 'CE', f'Faster R-CNN {_16}',
          _rows(_FRCNN, ('ce', 'cross-entropy', 'ce'),
                ('rambo_bce', _MIX, 'rambo-bce'),
                ('rank_sort', 'Rank & Sort (RS-R-CNN)', 'rank-sort'))),
    # one study, two metrics of CocoMetric: box AP50 and mask AP50
    *[dict(study='digitsvoc_mask_rcnn_16e', metric=metric,
           baseline='ce', baseline_label='CE', data='DigitsVOC with masks',
           protocol=f'Mask R-CNN {_16}; {what} AP50 (CocoMetric)',
           rows=_rows(_MASK, ('ce', 'cross-entropy', 'ce'),
                      ('rambo_bce', 'RaMBO + sigmoid CE (`MixedRankLoss`)',
                       'rambo-bce'),
                      ('rank_sort', '**Rank & Sort (RS-Mask R-CNN)**',
                       'rank-sort')),
           notes=dict(ce=_THR0, rambo_bce=_THR0))
      for metric, what in (('test_ap50', 'box'),
                           ('test_coco/segm_mAP_50', 'mask'))],
    _ap50('digitsvoc_dino_long', 'focal', 'focal', DINO_PROTOCOL, _rows(
              _DINO, ('focal', 'focal loss', 'focal'),
              ('quality_focal', 'Quality Focal', 'quality-focal'),
              ('rank_sort', '**Rank & Sort**', 'rank-sort'),
              ('rambo_focal', 'RaMBO (logits) + focal', 'rambo-focal'))),
    dict(study='digit_instances_losses', metric='test_r1', baseline='rambo',
         baseline_label='RaMBO', data='digit instances',
         protocol='retrieval, ResNet-18 (16 ch.), from scratch, 20 epochs; '
         'R@1',
         rows=[
             ('rambo', '**RaMBO recall loss (log)**', _DIGITS, ''),
             ('fastap', 'FastAP', _DIGITS,
              '`tools/retrieval_quickstart.py --loss fastap`'),
             ('triplet', 'batch-hard triplet, margin not searched', _DIGITS,
              '`tools/retrieval_quickstart.py --loss triplet-bh`'),
         ],
         # its margin (0.3) was not searched, and it ended below raw
         # pixels: a failed baseline setup, compared with nothing
         untuned=['triplet']),
]

#: Studies of shipped configs whose rows are not in the README's results
#: table; same shape as :data:`RESULTS` (``split``: the test split, if not
#: ``test``; a row's ``change``: how it differs from the config as it ships).
EXTRA = [
    dict(study='digitsvoc_dense_atss_16e', metric='test_ap50',
         data='DigitsVOC', rows=_rows(
             _ATSS, ('focal', 'focal loss', 'focal', '`lr=0.01`'),
             ('rambo', 'RaMBO over all anchors', 'rambo'),
             ('mix_logits', 'RaMBO (logits) + focal', 'rambo-focal'))),
    dict(study='digitsvoc_dense_retinanet_16e', metric='test_ap50',
         data='DigitsVOC', rows=_rows(
             _RETINA, ('focal', 'focal loss', 'focal', '`lr=0.08`'),
             ('rambo', 'RaMBO over all anchors', 'rambo'),
             ('mix', 'RaMBO (sigmoid) + focal', 'rambo-focal',
              "`score_space='sigmoid'`, `lr=0.02`"))),
    dict(study='digitsvoc_dense_atss_rank_sort_16e', metric='test_ap50',
         data='DigitsVOC', rows=_rows(
             _ATSS, ('focal', 'focal loss', 'focal', '`lr=0.01`'),
             ('rambo_focal', 'RaMBO (logits) + focal', 'rambo-focal'),
             ('rank_sort', 'Rank & Sort', 'rank-sort', '`lr=0.005`'),
             ('alrp', 'aLRP', 'alrp'))),
    dict(study='digitsvoc_dense_retinanet_rank_sort_16e', metric='test_ap50',
         data='DigitsVOC', rows=_rows(
             _RETINA, ('focal', 'focal loss', 'focal', '`lr=0.08`'),
             ('focal_lr004', 'focal loss, lr 0.04 (exploratory)', 'focal'),
             ('rambo_focal', 'RaMBO (logits) + focal', 'rambo-focal'),
             ('rank_sort', 'Rank & Sort', 'rank-sort', '`lr=0.04`'),
             ('alrp', 'aLRP', 'alrp'))),
    dict(study='confirm_digitsvoc', metric='test_ap50', data='DigitsVOC',
         split='confirm', rows=[
             *_rows(_FRCNN, ('ce', 'cross-entropy', 'ce'),
                    ('rambo_bce', 'RaMBO + sigmoid CE', 'rambo-bce')),
             *_rows(_ATSS, ('focal', 'focal loss', 'focal', '`lr=0.01`'),
                    ('rambo_focal', 'RaMBO (logits) + focal',
                     'rambo-focal'))]),
]
