"""COCO-metric studies: a spec selecting on val box AP50 (``metric``) and
reporting test box and mask AP50 (``extra_metrics``), with hypotheses on
either; its runs record every metric and their oLRP (read from the test
dataset MMDetection builds) and skip the calibration, which needs val
detections; its report tabulates and compares each metric against statistics
computed here by hand. Training is faked (no process is started); the
oLRP reader runs on a tiny DigitsVOC with masks through MMDetection's own
``CocoDataset``."""
import csv
import json
import math
import os
import os.path as osp

import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
MASK = 'configs/mask_rcnn/mask-rcnn_r18-w32_fpn_{}_16e_digitsvoc.py'
BOX, SEGM = 'coco/bbox_mAP_50', 'coco/segm_mAP_50'
SPEC = f"""
metric = '{BOX}'
extra_metrics = ['{SEGM}']
select_seeds = [5, 11]
seeds = [6, 7, 8]
baseline = 'ce'
data = dict(root='data/none', make=[])  # ensure_data is faked
preregistered = True
fair_selection = False  # the fair-baseline rules have their own tests
methods = dict(
    ce=dict(config='{MASK.format('ce')}', lrs=[0.02, 0.04], label='CE'),
    rs=dict(config='{MASK.format('rank-sort')}', lrs=[0.01, 0.02],
            label='RS'))
hypotheses = [dict(method='rs', metric='{BOX}'),
              dict(method='rs', metric='{SEGM}', alternative='greater')]
"""
# val box AP50 of the selection runs (mean over seeds 5 and 11: ce 0.04 and
# rs 0.01 win); val mask AP50 is 0.1 below it everywhere
VAL = {('ce', 0.02): 0.30, ('ce', 0.04): 0.40,
       ('rs', 0.01): 0.50, ('rs', 0.02): 0.20}
# test values per metric, method and seed
TEST = {BOX: {'ce': {6: 0.40, 7: 0.42, 8: 0.44},
              'rs': {6: 0.41, 7: 0.45, 8: 0.46}},
        SEGM: {'ce': {6: 0.30, 7: 0.31, 8: 0.35},
               'rs': {6: 0.36, 7: 0.38, 8: 0.40}}}


@pytest.fixture(scope='module')
def study():
    """The study tool's package, imported when a test first needs it."""
    import rankloss_lab.study as tool
    return tool


@pytest.fixture
def fake_training(study, monkeypatch):
    """Fakes ``tools/train.py`` and ``tools/test.py`` (the values above);
    the list of the commands they were called with."""
    calls = []

    def run_logged(cmd, log_path):
        calls.append(cmd)
        work = cmd[cmd.index('--work-dir') + 1]
        os.makedirs(work, exist_ok=True)
        if 'tools/train.py' in cmd:  # the checkpoint the test phase loads
            with open(osp.join(work, 'last_checkpoint'), 'w') as f:
                f.write(work + '/epoch_1.pth')
        return 1.0

    def read_scalars(directory, key):
        on_test = osp.basename(directory) == 'eval_test'
        run = osp.dirname(directory) if on_test else directory
        lr, seed = osp.basename(run)[len('lr'):].split('_seed')
        method = osp.basename(osp.dirname(run))
        if on_test:
            return {1: TEST[key][method][int(seed)]}
        box = VAL.get((method, float(lr)), 0.2)
        return {1: 0.1, 2: box - 0.1 if key == SEGM else box}

    def voc_only(*args):
        raise AssertionError('a COCO study read VOC XML ground truth')

    monkeypatch.setattr(study, 'run_logged', run_logged)
    monkeypatch.setattr(study, 'read_scalars', read_scalars)
    monkeypatch.setattr(study, 'last_train_record', lambda d: {})
    monkeypatch.setattr(study, 'score_calibration', voc_only)
    monkeypatch.setattr(study, 'olrp_on_test', voc_only)

    def olrp_on_dataset(config, options, test_pkl):
        # the run's test options and detections file reach it
        assert any(o.startswith('randomness.seed=') for o in options)
        assert test_pkl.endswith(osp.join('eval_test', 'detections.pkl'))
        seed = int(next(o for o in options if o.startswith(
            'randomness.seed=')).split('=')[1])
        return dict(oLRP=0.6 + seed / 100, oLRP_loc=0.2, oLRP_FP=0.3,
                    oLRP_FN=0.4)

    monkeypatch.setattr(study, 'olrp_on_dataset', olrp_on_dataset)
    monkeypatch.setattr(study, 'ensure_data', lambda spec: None)
    # no detections file behind the fake test (tests/test_tools/
    # test_study_detections.py stores real ones)
    monkeypatch.setattr(study, 'keep_test_detections', lambda *a: None)
    return calls


def _write(tmp_path, body, name='coco'):
    path = tmp_path / f'{name}.py'
    path.write_text(body)
    return str(path)


def test_metric_keys_default_to_voc_and_are_checked(study, tmp_path):
    spec = study.load_spec(_write(tmp_path, SPEC))
    assert spec['metric'] == BOX and spec['extra_metrics'] == [SEGM]
    assert [h['metric'] for h in spec['hypotheses']] == [
        f'test {BOX}', f'test {SEGM}']
    assert [study.common.hypothesis_metric(h)
            for h in spec['hypotheses']] == [BOX, SEGM]
    voc = study.load_spec(osp.join(
        ROOT, 'lab', 'rankloss_lab', 'studies', 'digitsvoc_dense_fixed_16e.py'))
    assert voc['metric'] == 'pascal_voc/AP50' and voc['extra_metrics'] == []
    # the text the VOC studies froze
    assert {h['metric'] for h in voc['hypotheses']} == {'test AP50'}


@pytest.mark.parametrize('edit, match', [
    (("extra_metrics = ['coco/segm_mAP_50']",
      "extra_metrics = ['segm_mAP_50']"), "got 'segm_mAP_50'"),
    (("extra_metrics = ['coco/segm_mAP_50']",
      "extra_metrics = ['pascal_voc/AP50']"), 'one evaluator'),
    (("extra_metrics = ['coco/segm_mAP_50']",
      "extra_metrics = ['coco/bbox_mAP_50']"), 'repeat a key'),
    (("extra_metrics = ['coco/segm_mAP_50']",
      "extra_metrics = 'coco/segm_mAP_50'"), 'must be a list'),
    (("metric='coco/segm_mAP_50', alternative",
      "metric='coco/bbox_mAP', alternative"), "metric must be the spec's"),
    (("metric='coco/segm_mAP_50', alternative",
      "metric='coco/bbox_mAP_50', alternative"),
     'repeats a hypothesis .* on coco/bbox_mAP_50'),
    (("baseline = 'ce'", "baseline = 'ce'\ntest_split = 'confirm'"),
     "test_split must be 'test'"),
])
def test_bad_metric_keys_name_the_problem(study, tmp_path, edit, match):
    assert edit[0] in SPEC
    with pytest.raises(ValueError, match=match):
        study.load_spec(_write(tmp_path, SPEC.replace(*edit)))


def test_a_coco_study_end_to_end(study, tmp_path, fake_training):
    """Select on val box AP50, freeze, test (box and mask AP50), report."""
    spec_path = _write(tmp_path, SPEC)
    out = tmp_path / 'out'
    args = [spec_path, '--work-dir', str(tmp_path / 'work'), '--out-dir',
            str(out)]
    study.main(args + ['--phase', 'select'])
    study.main(args + ['--freeze'])
    frozen = json.loads((out / 'coco_preregistration.json').read_text())
    assert frozen['settings']['metric'] == f'test {BOX} (CocoMetric)'
    assert frozen['settings']['extra_metrics'] == [SEGM]
    assert {m: s['lr'] for m, s in frozen['selection'].items()} == {
        'ce': 0.04, 'rs': 0.01}
    del fake_training[:]
    paths = study.main(args + ['--phase', 'test'])
    # each test run: tools/test.py on the test ann file alone (val's
    # values are the training's last val loop); no VOC split option
    tests = [c for c in fake_training if c[1] == 'tools/test.py']
    assert len(tests) == 6
    assert not any('ann_file' in a for c in tests for a in c)
    res = json.load(open(osp.join(study.run_dir(
        str(tmp_path / 'work'), 'coco', 'rs', 0.01, 7), 'result.json')))
    assert res['val_ap50'] == 0.50
    assert res['val_metrics'] == {BOX: 0.50, SEGM: pytest.approx(0.40)}
    assert res['test_ap50'] == 0.45
    assert res['test_metrics'] == {BOX: 0.45, SEGM: 0.38}
    assert 'calibration' not in res
    assert res['test_lrp']['oLRP'] == pytest.approx(0.67)

    md = open(paths['md'], encoding='utf-8').read()
    assert '## Test box AP50 (`coco/bbox_mAP_50`) at the selected' in md
    assert '## Test mask AP50 (`coco/segm_mAP_50`) at the selected' in md
    assert 'val box AP50 after the last epoch' in md
    assert 'the fit needs its own val detections' in md
    # oLRP 0.66, 0.67, 0.68 over seeds 6-8 for each method
    assert '| RS | 3 | 67.0 ± 1.0 | 20.0 ± 0.0 | 30.0 ± 0.0 | 40.0 ± 0.0 |' \
        in md
    # mean ± sd by hand: RS mask AP50 0.36, 0.38, 0.40 -> 38.0 ± 2.0;
    # paired mask diff. to CE 0.06, 0.07, 0.05 -> +6.0
    assert '| RS | 0.01 | 3 | 38.0 ± 2.0 | 36.0, 38.0, 40.0 | +6.0 [' in md
    # box: diffs 0.01, 0.03, 0.02 -> +2.0
    assert '| RS | 0.01 | 3 | 44.0 ± 2.6 | 41.0, 45.0, 46.0 | +2.0 [' in md
    assert 'Pre-registered family: m = 2 hypotheses' in md
    assert 'H2: RS vs CE, mask AP50 | greater |' in md

    with open(paths['comparisons'], encoding='utf-8') as f:
        rows = {r['id']: r for r in csv.DictReader(f)}
    assert rows['H1']['metric'] == BOX and rows['H2']['metric'] == SEGM
    # H2 (one-sided): diffs 0.06, 0.07, 0.05, mean 0.06, sd 0.01, t = 6 sqrt 3
    assert float(rows['H2']['mean_diff']) == pytest.approx(0.06)
    t = 0.06 / (0.01 / math.sqrt(3))
    p = _t_sf(t, 2)
    assert float(rows['H2']['p']) == pytest.approx(p, rel=1e-4)
    # H1 (two-sided): diffs 0.01, 0.03, 0.02: t = 0.02 / (0.01 / sqrt 3)
    p1 = 2 * _t_sf(0.02 / (0.01 / math.sqrt(3)), 2)
    assert float(rows['H1']['p']) == pytest.approx(p1, rel=1e-4)
    # Holm over the two: the smaller p times 2, the larger as is (monotone)
    low, high = sorted([p, p1])
    assert float(rows['H2' if p < p1 else 'H1']['p_holm']) == \
        pytest.approx(min(1, 2 * low), rel=1e-4)
    assert float(rows['H1' if p < p1 else 'H2']['p_holm']) == \
        pytest.approx(max(min(1, 2 * low), high), rel=1e-4)
    with open(paths['csv'], encoding='utf-8') as f:
        run_rows = list(csv.DictReader(f))
    tested = [r for r in run_rows if r['test_ap50']]
    assert len(tested) == 6 and all(
        r[f'test_{SEGM}'] and r[f'val_{SEGM}'] for r in tested)


def test_test_phase_options_reach_the_test_trainings_alone(
        study, tmp_path, fake_training, monkeypatch):
    """``test_phase_options``: in every test training's ``--cfg-options``,
    in no selection training, frozen with the settings and printed in the
    pre-registration; the report draws the selection runs' curves and says
    so."""
    option = 'train_cfg.val_interval=16'
    spec_path = _write(tmp_path, SPEC + f"test_phase_options = ['{option}']\n")
    out = tmp_path / 'out'
    args = [spec_path, '--work-dir', str(tmp_path / 'work'), '--out-dir',
            str(out)]
    study.main(args + ['--phase', 'select'])
    trains = [c for c in fake_training if c[1] == 'tools/train.py']
    assert len(trains) == 8 and not any(option in c for c in trains)
    study.main(args + ['--freeze'])
    frozen = json.loads((out / 'coco_preregistration.json').read_text())
    assert frozen['settings']['test_phase_options'] == [option]
    assert f'also train with `{option}`' in (
        out / 'coco_preregistration.md').read_text()
    del fake_training[:]
    every_epoch = study.read_scalars

    def after_the_last_epoch(directory, key):  # what the option does
        curve = every_epoch(directory, key)
        return curve if osp.basename(directory) == 'eval_test' else {
            16: curve[max(curve)]}
    monkeypatch.setattr(study, 'read_scalars', after_the_last_epoch)
    paths = study.main(args + ['--phase', 'test'])
    trains = [c for c in fake_training if c[1] == 'tools/train.py']
    assert len(trains) == 6 and all(
        c[c.index('--cfg-options'):].count(option) == 1 for c in trains)
    res = json.load(open(osp.join(study.run_dir(
        str(tmp_path / 'work'), 'coco', 'rs', 0.01, 7), 'result.json')))
    assert res['val_epochs'] == [16] and res['val_ap50'] == 0.50
    # per-epoch columns by epoch: a test run fills epoch 16's alone
    with open(paths['csv'], encoding='utf-8') as f:
        rows = list(csv.DictReader(f))
    tested = [r for r in rows if r['test_ap50']]
    assert len(tested) == 6 and all(
        r['val_ap50_epoch16'] and not r['val_ap50_epoch1'] for r in tested)
    # the curves are the selection runs', and the report says so
    assert 'of the selection seeds 5, 11 at the selected learning rates' in \
        open(paths['md'], encoding='utf-8').read()
    # an edit of the option after the freeze is refused
    with open(spec_path, 'a') as f:
        f.write("test_phase_options = ['train_cfg.val_interval=8']\n")
    with pytest.raises(study.PreregistrationError):
        study.main(args + ['--phase', 'test'])


@pytest.mark.parametrize('extra, match', [
    ("test_phase_options = 'train_cfg.val_interval=16'", 'list of'),
    ("test_phase_options = ['val_interval']", "'key=value' strings"),
    ("test_phase_options = ['a=1']\nselect_seeds = None\nselect_seed = 6",
     'selection seeds apart from the test seeds'),
])
def test_bad_test_phase_options_name_the_problem(study, tmp_path, extra,
                                                 match):
    with pytest.raises(ValueError, match=match):
        study.load_spec(_write(tmp_path, SPEC + extra + '\n'))


def test_one_point_test_curves_give_way_to_the_selection_curves(study,
                                                                 tmp_path):
    """Test runs that validated after their last epoch alone: the curves
    (and their figure) are the selection seeds' at the selected lr; with
    neither, no figure."""
    spec = study.load_spec(_write(tmp_path, SPEC))
    png = str(tmp_path / 'c.png')
    tested = {('ce', 0.04, s): dict(val_curve=[0.4], val_epochs=[16],
                                    val_ap50=0.4) for s in spec['seeds']}
    assert not study.plot_curves(spec, tested, {'ce': 0.04}, png)
    selection = {('ce', 0.04, s): dict(val_curve=[0.1, 0.3, 0.2],
                                       val_ap50=0.2) for s in (5, 11)}
    runs, whose = study.curve_runs(spec, {**tested, **selection},
                                   {'ce': 0.04})
    assert runs == {'ce': [[0.1, 0.3, 0.2]] * 2}
    assert whose == 'selection seeds 5, 11'
    assert study.plot_curves(spec, {**tested, **selection}, {'ce': 0.04},
                             png)
    # every-epoch test curves come first
    full = {k: dict(val_curve=[0.2, 0.4], val_ap50=0.4) for k in tested}
    assert study.curve_runs(spec, {**full, **selection}, {'ce': 0.04}) == (
        {'ce': [[0.2, 0.4]] * 3}, 'test seeds')
    # a val not logged (a run stopped during it) is NaN at its epoch
    gap = {**selection, ('ce', 0.04, 11): dict(
        val_curve=[0.1, 0.2], val_epochs=[1, 3], val_ap50=0.2)}
    runs, _ = study.curve_runs(spec, gap, {'ce': 0.04})
    assert runs['ce'][0] == [0.1, 0.3, 0.2]
    assert runs['ce'][1][0::2] == [0.1, 0.2] and runs['ce'][1][1] != 0.3
    assert study.plot_curves(spec, gap, {'ce': 0.04}, png)
    # a record's epochs: val_epochs, else 1..n
    assert study.val_by_epoch(tested[('ce', 0.04, 6)]) == {16: 0.4}
    assert study.val_by_epoch(full[('ce', 0.04, 6)]) == {1: 0.2, 2: 0.4}


def _t_sf(t: float, dof: int) -> float:
    """P(T > t) of Student's t with 2 degrees of freedom, closed form."""
    assert dof == 2
    return 0.5 - t / (2 * math.sqrt(t * t + 2))


def test_the_mask_rcnn_study_spec(study, capsys):
    path = osp.join(ROOT, 'lab', 'rankloss_lab', 'studies',
                    'digitsvoc_mask_rcnn_16e.py')
    spec = study.load_spec(path)
    assert spec['metric'] == BOX and spec['extra_metrics'] == [SEGM]
    assert spec['select_seeds'] == [5, 11]
    assert spec['seeds'] == [6, 7, 8, 9, 10]
    assert spec['fair_selection'] is True and spec['preregistered'] is True
    # its own data root, made with --masks; every split points at it
    root = spec['data']['root']
    assert root != 'data/digits_voc/VOCdevkit' and '--masks' in \
        spec['data']['make']
    for split in ('train', 'val', 'test'):
        assert f'{split}_dataloader.dataset.data_root={root}/' in \
            spec['options']
    for split in ('val', 'test'):
        assert (f'{split}_evaluator.ann_file={root}/annotations/'
                f'instances_{split}.json') in spec['options']
    # factor-2 grids of three points centred on each config's own lr
    from mmengine.config import Config
    for name, m in spec['methods'].items():
        lr = Config.fromfile(osp.join(ROOT, m['config'])).optim_wrapper\
            .optimizer.lr
        assert m['lrs'] == pytest.approx([lr / 2, lr, 2 * lr]), name
    assert study.fairness_problems(spec, {}) == []
    # its test trainings validate after the last of their 16 epochs alone
    assert spec['test_phase_options'] == ['train_cfg.val_interval=16']
    # mix and RS against CE, on box and on mask AP50: one family of four
    assert [(h['method'], h['baseline'], h['metric'], h['alternative'])
            for h in spec['hypotheses']] == [
        (m, 'ce', f'test {key}', 'two-sided')
        for key in (BOX, SEGM) for m in ('rambo_bce', 'rank_sort')]
    study.main([path, '--dry-run', '--work-dir', '/nonexistent/work',
                '--out-dir', '/nonexistent/out'])
    out = capsys.readouterr().out
    assert '[study] digitsvoc_mask_rcnn_16e select: 18 runs' in out
    assert '3 methods x 5 seeds = 15 runs' in out


def _coco_detections(root, path, relabel=0, drop_crowd=True):
    """``tools/test.py --out`` results that repeat the test split's
    ground truth boxes (labels shifted by ``relabel``), score 1."""
    import pickle

    import numpy as np
    gt = json.load(open(osp.join(root, 'annotations',
                                 'instances_test.json')))
    out = []
    for img in gt['images']:
        anns = [a for a in gt['annotations'] if a['image_id'] == img['id']
                and not (drop_crowd and a['iscrowd'])]
        boxes = np.array([[a['bbox'][0], a['bbox'][1],
                           a['bbox'][0] + a['bbox'][2],
                           a['bbox'][1] + a['bbox'][3]] for a in anns],
                         dtype=np.float32).reshape(-1, 4)
        labels = np.array([(a['category_id'] - 1 + relabel) % 10
                           for a in anns], dtype=np.int64)
        out.append(dict(img_id=img['id'], img_path=osp.join(
            root, 'VOC2007', 'JPEGImages', img['file_name']),
            pred_instances=dict(bboxes=boxes, labels=labels,
                                scores=np.ones(len(anns), np.float32))))
    with open(path, 'wb') as f:
        pickle.dump(out, f)
    return sum(len(o['pred_instances']['labels']) for o in out)


def test_olrp_of_a_coco_study_reads_the_test_json(study, digits_masks_root,
                                                   tmp_path):
    """Perfect detections score oLRP 0; every label wrong scores 1 (each
    class: no true positive, all false negatives)."""
    root = digits_masks_root.rstrip('/')
    options = [f'test_dataloader.dataset.data_root={root}/',
               f'test_evaluator.ann_file={root}/annotations/'
               'instances_test.json', 'randomness.seed=6']
    pkl = str(tmp_path / 'detections.pkl')
    assert _coco_detections(root, pkl) > 0
    perfect = study.olrp_on_dataset(MASK.format('ce'), options, pkl)
    assert perfect == dict(oLRP=0.0, oLRP_loc=0.0, oLRP_FP=0.0,
                           oLRP_FN=0.0)
    _coco_detections(root, pkl, relabel=1)
    wrong = study.olrp_on_dataset(MASK.format('ce'), options, pkl)
    assert wrong['oLRP'] == pytest.approx(1.0)
    assert wrong['oLRP_FN'] == pytest.approx(1.0)
    # a test image without detections is an error naming the file
    import pickle
    with open(pkl, 'rb') as f:
        results = pickle.load(f)
    with open(pkl, 'wb') as f:
        pickle.dump(results[1:], f)
    with pytest.raises(SystemExit, match='no detections for 1 of the'):
        study.olrp_on_dataset(MASK.format('ce'), options, pkl)
