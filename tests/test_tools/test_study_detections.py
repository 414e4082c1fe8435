"""A study's stored test detections: the compact file, AP50 re-scored from
it as MMDetection's VOCMetric computes it, and (slow) a real Faster R-CNN
run tested at score_thr 0, filtered to 0.05, against the same model tested
at 0.05."""
import glob
import json
import os
import os.path as osp
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

from rankloss_lab.datasets.toy_voc import make_toy_voc
from rankloss_lab.study.detections import (load_stored, rescore_voc_ap50,
                                           save_detections, voc_ap50)

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
# the mix: its sigmoid scores straddle 0.05 after a few iterations, where
# cross-entropy's 21-way softmax scores all lie below it
QUICK_MIX = osp.join(ROOT, 'configs', 'quickstart',
                     'faster-rcnn_r18-w32_fpn_rambo-bce_toyvoc.py')


def voc_classes():
    from mmdet.datasets import VOCDataset
    return VOCDataset.METAINFO['classes']


@pytest.fixture(scope='module')
def toy(tmp_path_factory):
    """A toy VOC with difficult objects, its test split as MMDetection's
    VOCDataset reads it, and random detections near and away from its
    objects as ``tools/test.py --out`` stores them (``detections.pkl``)."""
    root = str(tmp_path_factory.mktemp('toy') / 'VOCdevkit')
    make_toy_voc(root, num_trainval=2, num_test=10, image_size=64, seed=5,
                 difficult_prob=0.3)
    rng = np.random.default_rng(0)
    from mmengine.registry import init_default_scope

    from mmdet.datasets import VOCDataset
    init_default_scope('mmdet')
    dataset = VOCDataset(
        data_root=root, ann_file='VOC2007/ImageSets/Main/test.txt',
        data_prefix=dict(sub_data_root='VOC2007/'), test_mode=True,
        pipeline=[dict(type='LoadImageFromFile'),
                  dict(type='LoadAnnotations', with_bbox=True),
                  dict(type='PackDetInputs')])
    samples, results = [], []
    for i in range(len(dataset)):
        sample = dataset[i]['data_samples']
        info = dataset.get_data_info(i)
        gt = np.array([o['bbox'] for o in info['instances']],
                      dtype=np.float32).reshape(-1, 4)
        labels = np.array([o['bbox_label'] for o in info['instances']])
        near = gt[rng.integers(0, len(gt), 12)] + rng.normal(
            0, 3, (12, 4)).astype(np.float32)
        far = np.sort(rng.uniform(0, 64, (8, 2, 2)), axis=1).transpose(
            0, 2, 1).reshape(8, 4)[:, [0, 2, 1, 3]].astype(np.float32)
        pred = dict(
            bboxes=torch.from_numpy(np.concatenate([near, far])),
            scores=torch.from_numpy(rng.uniform(0, 1, 20).astype(
                np.float32)),
            labels=torch.from_numpy(np.concatenate([
                labels[rng.integers(0, len(labels), 12)],
                rng.integers(0, 20, 8)])))
        samples.append(sample)
        results.append(dict(img_path=info['img_path'], pred_instances=pred))
    pkl = osp.join(osp.dirname(root), 'detections.pkl')
    with open(pkl, 'wb') as f:
        pickle.dump(results, f)
    return dict(root=root, pkl=pkl, samples=samples, results=results,
                meta=dataset.metainfo)


def vocmetric(toy, score_thr):
    """MMDetection's VOCMetric (11 points) fed the detections above
    ``score_thr``: its ``(unrounded AP50 from its own results, logged
    value)``."""
    from mmengine.structures import InstanceData

    from mmdet.evaluation import VOCMetric
    from mmdet.evaluation.functional import eval_map
    metric = VOCMetric(metric='mAP', eval_mode='11points', iou_thrs=[0.5])
    metric.dataset_meta = toy['meta']
    for sample, res in zip(toy['samples'], toy['results']):
        sample = sample.clone()
        pred = res['pred_instances']
        keep = pred['scores'] > score_thr
        sample.pred_instances = InstanceData(
            **{k: v[keep] for k, v in pred.items()})
        metric.process({}, [sample.to_dict()])
    gts, preds = zip(*metric.results)
    exact = eval_map(preds, gts, iou_thr=0.5, dataset='voc',
                     logger='silent', eval_mode='11points',
                     use_legacy_coordinate=True)[0]
    return exact, metric.compute_metrics(metric.results)['AP50']


def test_stored_detections_round_trip(toy, tmp_path):
    npz = save_detections(toy['pkl'], str(tmp_path / 'd.npz'), 0.0)
    stored = load_stored(npz)
    assert stored['score_thr'] == 0.0
    assert stored['ids'] == [osp.splitext(osp.basename(r['img_path']))[0]
                             for r in toy['results']]
    for i, res in zip(stored['ids'], toy['results']):
        for key in ('bboxes', 'scores', 'labels'):
            np.testing.assert_array_equal(stored['dets'][i][key],
                                          res['pred_instances'][key].numpy())
    with np.load(npz) as f:
        assert f['labels'].dtype == np.int16
        assert f['scores'].dtype == f['bboxes'].dtype == np.float32
    with pytest.raises(RuntimeError, match='no detections for 1 images'):
        save_detections(toy['pkl'], str(tmp_path / 'e.npz'), 0.0,
                        stored['ids'] + ['000999'])


@pytest.mark.parametrize('score_thr', [0.0, 0.05, 0.5, 0.9])
def test_rescored_ap50_is_vocmetrics(toy, tmp_path, score_thr):
    """Re-scored at a threshold: VOCMetric's AP50 of the detections above
    it, to the last bit; VOCMetric reads the ground truth through
    VOCDataset (difficult objects ignored), the re-scoring from the XML."""
    npz = save_detections(toy['pkl'], str(tmp_path / 'd.npz'), 0.0)
    ours = rescore_voc_ap50(npz, toy['root'], 'test', score_thr,
                            voc_classes())
    exact, logged = vocmetric(toy, score_thr)
    assert ours == exact and round(ours, 3) == logged
    assert 0 < ours < 1


def test_below_the_stored_threshold_is_refused(toy, tmp_path):
    npz = save_detections(toy['pkl'], str(tmp_path / 'd.npz'), 0.3)
    with pytest.raises(ValueError, match='above score_thr 0.3: AP50 at 0.1'):
        rescore_voc_ap50(npz, toy['root'], 'test', 0.1, voc_classes())


def _run(args, cwd):
    env = dict(os.environ, OMP_NUM_THREADS='1')
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    proc = subprocess.run([sys.executable] + args, cwd=cwd, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]


def _logged_ap50(work_dir):
    for path in glob.glob(osp.join(work_dir, '*', '*.json')):
        for line in open(path):
            if 'pascal_voc/AP50' in line:
                return json.loads(line)['pascal_voc/AP50']
    raise AssertionError(f'no AP50 logged under {work_dir}')


@pytest.mark.slow
def test_faster_rcnn_filtered_to_005_is_a_run_at_005(tmp_path):
    """A Faster R-CNN trained briefly with MMDetection's runner (the toy
    VOC quickstart config), tested at score_thr 0 and at 0.05: the stored
    detections at 0, filtered to 0.05, are the run's at 0.05 box for box,
    and their AP50 is that run's AP50 exactly (the threshold acts before
    the per-class NMS and the top-100 cut)."""
    root = tmp_path / 'data' / 'toy_voc' / 'VOCdevkit'
    make_toy_voc(str(root), num_trainval=16, num_test=8, seed=2)
    work = str(tmp_path / 'work')
    _run([osp.join(ROOT, 'tools', 'train.py'), QUICK_MIX, '--work-dir', work,
          '--cfg-options', 'train_cfg.max_epochs=2',
          'train_dataloader.batch_size=4', 'param_scheduler.0.end=4',
          'randomness.seed=0'], cwd=str(tmp_path))
    ckpt = osp.join(work, 'epoch_2.pth')
    stored, ap = {}, {}
    for thr in (0.0, 0.05):
        out = str(tmp_path / f'test_{thr:g}')
        _run([osp.join(ROOT, 'tools', 'test.py'), QUICK_MIX, ckpt,
              '--work-dir', out, '--out', osp.join(out, 'dets.pkl'),
              '--cfg-options', f'model.test_cfg.rcnn.score_thr={thr}'],
             cwd=str(tmp_path))
        stored[thr] = load_stored(save_detections(
            osp.join(out, 'dets.pkl'), osp.join(out, 'dets.npz'), thr))
        ap[thr] = _logged_ap50(out)
    low, high = stored[0.0], stored[0.05]
    kept = 0
    for img_id in low['ids']:
        a, b = low['dets'][img_id], high['dets'][img_id]
        keep = a['scores'] > 0.05
        kept += int(keep.sum())
        for key in ('bboxes', 'scores', 'labels'):
            np.testing.assert_array_equal(a[key][keep], b[key])
    total = sum(len(d['scores']) for d in low['dets'].values())
    assert 0 < kept < total  # the threshold drops some boxes, not all
    root = str(root)
    at_005 = rescore_voc_ap50(osp.join(tmp_path, 'test_0', 'dets.npz'),
                              root, 'test', 0.05, voc_classes())
    assert at_005 == voc_ap50(high['dets'], root, 'test', voc_classes())
    assert round(at_005, 3) == ap[0.05]
    assert round(voc_ap50(low['dets'], root, 'test', voc_classes()),
                 3) == ap[0.0]


SPEC = """
seeds = [30, 31]
baseline = 'ce'
options = {options}
score_thresholds = {thresholds}
_cfg = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_{{}}_16e_digitsvoc.py'
methods = dict(ce=dict(config=_cfg.format('ce'), lr=0.04),
               mix=dict(config=_cfg.format('rambo-bce'), lr=0.04))
hypotheses = [dict(method='mix', baseline='ce', alternative='greater',
                   metric='pascal_voc/AP50@' + str(score_thresholds[0]))]
"""


def _spec(tmp_path, thresholds='[0.05, 0.0]', options='[]', extra=''):
    from rankloss_lab.study import load_spec
    path = tmp_path / 'thr.py'
    path.write_text(SPEC.format(thresholds=thresholds, options=options) +
                    extra)
    return load_spec(str(path))


def test_score_thresholds_are_metrics_of_the_spec(tmp_path):
    """Each declared threshold is a metric a hypothesis names; a run
    tested above the lowest is refused before it trains."""
    from rankloss_lab.study import metric_label
    from rankloss_lab.study.runs import check_test_thresholds
    spec = _spec(tmp_path)
    assert spec['extra_metrics'] == ['pascal_voc/AP50@0.05',
                                     'pascal_voc/AP50@0']
    assert spec['hypotheses'][0]['metric'] == 'test pascal_voc/AP50@0.05'
    assert metric_label('pascal_voc/AP50@0.05') == \
        'AP50 at score_thr 0.05'
    # both configs ship 0.05: above the lowest threshold, 0
    with pytest.raises(RuntimeError, match=r'ce is tested at score_thr '
                       r'0.05 .* above the lowest of score_thresholds 0'):
        check_test_thresholds(spec, ['ce', 'mix'])
    check_test_thresholds(_spec(
        tmp_path, options="['model.test_cfg.rcnn.score_thr=0.0']"),
        ['ce', 'mix'])
    for bad, match in (('[0.05, 0.05]', 'distinct'), ('[1.5]', r'\[0, 1\)'),
                       ("['0.05']", 'numbers')):
        with pytest.raises(ValueError, match=match):
            _spec(tmp_path, thresholds=bad)
    with pytest.raises(ValueError, match='adds them itself'):
        _spec(tmp_path, extra="extra_metrics = ['pascal_voc/AP50@0']\n")
    with pytest.raises(ValueError, match="VOCMetric's AP50"):
        _spec(tmp_path, extra="metric = 'coco/bbox_mAP_50'\n")


def test_a_test_run_keeps_its_detections_and_rescores_them(tmp_path):
    """``keep_test_detections`` (every study test run): the detections
    beside the result, AP50 at each declared threshold from them."""
    from mmdet_rankloss.evaluation.voc_files import load_voc_ground_truth
    from rankloss_lab.datasets.digits_voc import DIGIT_CLASSES, make_digits_voc
    from rankloss_lab.study import keep_test_detections
    root = str(tmp_path / 'VOCdevkit')
    make_digits_voc(root, splits=(('train', 1), ('val', 1), ('test', 6)),
                    image_size=64)
    ids, gts = load_voc_ground_truth(root, 'test', DIGIT_CLASSES)
    rng = np.random.default_rng(1)
    # each object found, and again shifted with a shuffled label
    results = [dict(img_path=f'VOC2007/JPEGImages/{i}.jpg',
                    pred_instances=dict(
        bboxes=np.concatenate([gt['bboxes'], gt['bboxes'] + 4]).astype(
            np.float32),
        scores=rng.uniform(0, 1, 2 * len(gt['labels'])).astype(np.float32),
        labels=np.concatenate([gt['labels'], rng.permutation(
            gt['labels'])]))) for i, gt in zip(ids, gts)]
    pkl = str(tmp_path / 'dets.pkl')
    with open(pkl, 'wb') as f:
        pickle.dump(results, f)
    spec = _spec(tmp_path, thresholds='[0.5, 0.0]')
    spec['data'] = dict(root=root)
    result = dict(test_score_thr=0.0, test_split='test')
    keep_test_detections(spec, result, pkl, str(tmp_path / 'result.json'))
    stored = load_stored(str(tmp_path / 'result_test_detections.npz'))
    assert stored['ids'] == ids and stored['score_thr'] == 0.0
    assert result['test_metrics'] == {
        f'pascal_voc/AP50@{t:g}': voc_ap50(stored['dets'], root, 'test',
                                          DIGIT_CLASSES, t)
        for t in (0.5, 0.0)}
    assert len(set(result['test_metrics'].values())) == 2
