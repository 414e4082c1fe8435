"""The study tool: spec checks, grid expansion, selection on val, resume,
statistics against a hand computation, report contents, and one real run
through MMDetection's runner."""
import csv
import json
import math
import os
import os.path as osp

import pytest

CE = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'
RAMBO = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_rambo_16e_digitsvoc.py'


@pytest.fixture(scope='module')
def study():
    from rankloss_lab import study
    return study


def _write_spec(tmp_path, body, name='mini'):
    path = tmp_path / f'{name}.py'
    path.write_text(body)
    return str(path)


SPEC = f"""
seeds = [0, 1, 2]
select_seed = 0  # as the DigitsVOC studies: the selection seed is a test seed
baseline = 'ce'
methods = dict(
    ce=dict(config='{CE}', lrs=[0.01, 0.02]),
    rambo=dict(config='{RAMBO}', lrs=[0.1, 0.2, 0.4], label='RaMBO'),
    tau0=dict(config='{RAMBO}', lr_from='rambo', options=['x=1']))
"""


def _fake(method, lr, seed, val, test=None):
    res = dict(study='mini', method=method, lr=lr, seed=seed, val_ap50=val,
               val_curve=[val / 2, val], train_seconds=10.0 + seed,
               machine='test machine')
    if test is not None:
        res['test_ap50'] = test
    return res


def test_spec_defaults_and_plans(study, tmp_path):
    spec = study.load_spec(_write_spec(tmp_path, SPEC))
    assert spec['name'] == 'mini' and spec['select_seed'] == 0
    assert spec['methods']['tau0']['label'] == 'tau0'
    plan = study.select_plan(spec, ['ce', 'rambo'])
    assert plan == [('ce', 0.01, 0), ('ce', 0.02, 0), ('rambo', 0.1, 0),
                    ('rambo', 0.2, 0), ('rambo', 0.4, 0)]
    with pytest.raises(RuntimeError, match='select phase first'):
        study.test_plan(spec, ['ce'], {})
    assert study.test_plan(spec, ['tau0'], {'tau0': 0.2}) == [
        ('tau0', 0.2, 0), ('tau0', 0.2, 1), ('tau0', 0.2, 2)]
    # seed by seed, so that a test phase stopped half-way leaves pairs
    assert study.test_plan(spec, ['ce', 'tau0'], {'ce': 0.01, 'tau0': 0.2}
                           )[:3] == [('ce', 0.01, 0), ('tau0', 0.2, 0),
                                     ('ce', 0.01, 1)]


@pytest.mark.parametrize('body, match', [
    ("seeds=[0]\nbaseline='ce'\nmethods=dict()", 'non-empty'),
    (f"seeds=[0]\nbaseline='x'\nmethods=dict(ce=dict(config='{CE}', "
     "lrs=[0.1]))", 'baseline'),
    (f"seeds=[0, 0]\nbaseline='ce'\nmethods=dict(ce=dict(config='{CE}', "
     "lrs=[0.1]))", 'distinct'),
    ("seeds=[0]\nbaseline='ce'\nmethods=dict(ce=dict(config='nope.py', "
     "lrs=[0.1]))", 'not found'),
    (f"seeds=[0]\nbaseline='ce'\nmethods=dict(ce=dict(config='{CE}'))",
     'exactly one of lrs'),
    (f"seeds=[0]\nbaseline='ce'\nmethods=dict(ce=dict(config='{CE}', "
     "lrs=[-1]))", 'positive'),
    (f"seeds=[0]\nbaseline='ce'\nmethods=dict(ce=dict(config='{CE}', "
     f"lrs=[0.1]), b=dict(config='{CE}', lr_from='zz'))", 'lr_from'),
    ("seeds=[0]\nmethods=dict()", "needs 'baseline'"),
    (f"seeds=[0]\nbaseline='ce'\nmethods=dict(ce=dict(config='{CE}', "
     "lrs=[0.1]))\nprepare=[dict(path='x.pth')]", 'prepare entry'),
    (SPEC + "exploratory_comparisons = [dict(method='rambo')]",
     'exploratory comparison 1 must be'),
    (SPEC + "exploratory_comparisons = [dict(method='rambo', baseline='zz')]",
     "baseline 'zz' is not one of the methods"),
    (SPEC + "exploratory_comparisons = [dict(method='rambo', baseline='ce')]",
     'repeats a hypothesis'),
])
def test_bad_specs_name_the_problem(study, tmp_path, body, match):
    with pytest.raises(ValueError, match=match):
        study.load_spec(_write_spec(tmp_path, body))


def test_selection_on_val(study, tmp_path):
    spec = study.load_spec(_write_spec(tmp_path, SPEC))
    results = {('ce', 0.01, 0): _fake('ce', 0.01, 0, 0.5),
               ('ce', 0.02, 0): _fake('ce', 0.02, 0, 0.6),
               ('rambo', 0.1, 0): _fake('rambo', 0.1, 0, 0.7),
               ('rambo', 0.2, 0): _fake('rambo', 0.2, 0, 0.7)}
    # rambo's grid is incomplete: nothing selected for it (nor for tau0)
    assert study.selected_lrs(spec, results) == {'ce': 0.02}
    results[('rambo', 0.4, 0)] = _fake('rambo', 0.4, 0, 0.1)
    # a tie goes to the smaller learning rate; lr_from follows
    assert study.selected_lrs(spec, results) == {
        'ce': 0.02, 'rambo': 0.1, 'tau0': 0.1}
    # selection never reads test numbers
    results[('rambo', 0.2, 0)]['test_ap50'] = 0.99
    assert study.selected_lrs(spec, results)['rambo'] == 0.1


def test_statistics_by_hand(study):
    mean, std = study.mean_std([0.70, 0.74, 0.72])
    assert mean == pytest.approx(0.72) and std == pytest.approx(0.02)
    assert math.isnan(study.mean_std([1.0])[1])
    diff = study.paired_difference({0: 3.0, 1: 5.0, 2: 7.0, 9: 100.0},
                                   {0: 2.0, 1: 3.0, 2: 4.0})
    # diffs 1, 2, 3: mean 2, sd 1, t(0.975, 2) = 4.302653
    assert diff['n'] == 3 and diff['mean'] == pytest.approx(2.0)
    half = 4.302653 / math.sqrt(3)
    assert diff['low'] == pytest.approx(2 - half, rel=1e-5)
    assert diff['high'] == pytest.approx(2 + half, rel=1e-5)
    assert study.paired_difference({0: 1.0}, {0: 0.5}) is None


def test_report_csv_and_table(study, tmp_path):
    spec = study.load_spec(_write_spec(tmp_path, SPEC))
    results = {}
    for lr, val in ((0.01, 0.5), (0.02, 0.6)):
        results[('ce', lr, 0)] = _fake('ce', lr, 0, val)
    for lr, val in ((0.1, 0.4), (0.2, 0.65), (0.4, 0.3)):
        results[('rambo', lr, 0)] = _fake('rambo', lr, 0, val)
    for seed, (c, r) in enumerate(((0.60, 0.62), (0.58, 0.61), (0.62, 0.66))):
        results[('ce', 0.02, seed)] = _fake('ce', 0.02, seed, 0.6, c)
        results[('rambo', 0.2, seed)] = _fake('rambo', 0.2, seed, 0.65, r)
    paths = study.write_report(spec, results, str(tmp_path / 'out'))
    rows = list(csv.DictReader(open(paths['csv'])))
    assert len(rows) == 2 + 3 + 2 + 2  # grids + extra seeds
    sel = [r for r in rows if r['method'] == 'rambo' and r['seed'] == '1']
    assert sel[0]['selected_lr'] == 'True' and sel[0]['test_ap50'] == '0.6100'
    assert sel[0]['val_ap50_epoch1'] == '0.3250'
    md = open(paths['md']).read()
    assert '- RaMBO (`rambo`): lr 0.1: 40.0, lr 0.2: **65.0**, lr 0.4: 30.0' \
        in md
    # a grid not run at all gets no line of dashes
    spec['methods']['margin0'] = dict(config=RAMBO, lrs=[0.1], options=[],
                                      label='margin 0')
    md = open(study.write_report(spec, results,
                                 str(tmp_path / 'out2'))['md']).read()
    assert 'margin0' not in md and '- RaMBO (`rambo`)' in md
    assert '| ce | 0.02 | 3 | 60.0 ± 2.0 | 60.0, 58.0, 62.0 | - |' in md
    # diffs 2, 3, 4 points: mean 3.0, sd 1, CI 3 -+ 4.3027 / sqrt(3)
    # one comparison (tau0 has no test run): Bonferroni at m = 1 is the raw
    assert '| RaMBO | 0.2 | 3 | 63.0 ± 2.6 | 62.0, 61.0, 66.0 | ' \
        '+3.0 [+0.5, +5.5] | [+0.5, +5.5] (m = 1) | 11 |' in md
    # the selection seed 0 is a test seed: the report says so
    assert '**Selection and test seeds overlap:** seed 0' in md
    assert 'Not pre-registered: every comparison below is exploratory' in md
    # t = 3 / (1 / sqrt 3) = 5.196, 2 df: two-sided p = 0.0351
    assert '| RaMBO vs ce | two-sided | 3 | +3.0 | [+0.5, +5.5] | ' \
        '[+0.5, +5.5] (m = 1) | 0.0351 | 0.0351 | yes |' in md
    summary = list(csv.DictReader(open(paths['comparisons'])))
    assert [(r['method'], r['family'], r['m'], r['significant_holm'],
             r['selection_test_seed_overlap']) for r in summary] == [
        ('rambo', 'exploratory', '1', 'True', '0')]
    assert osp.isfile(paths['png'])
    # train time 10 + seed; seed 2's run resumed after an attempt of unknown
    # length: left out of the mean time (10, 11 -> 10.5 -> "10")
    results[('rambo', 0.2, 2)]['train_seconds_partial'] = True
    md = open(study.write_report(spec, results,
                                 str(tmp_path / 'out3'))['md']).read()
    assert '[+0.5, +5.5] (m = 1) | 10 |' in md


def test_exploratory_comparisons_join_the_exploratory_family(study,
                                                            tmp_path):
    # a baseline row added after a test result (tau0 here) is compared
    # with the others exploratorily, in one family with the default pairs
    spec = study.load_spec(_write_spec(
        tmp_path, SPEC + "exploratory_comparisons = [dict(method='rambo', "
        "baseline='tau0')]"))
    per_method = {'ce': {0: 0.60, 1: 0.58, 2: 0.62},
                  'rambo': {0: 0.62, 1: 0.61, 2: 0.66},
                  'tau0': {0: 0.61, 1: 0.60, 2: 0.64}}
    out = study.study_comparisons(spec, per_method, None)
    assert [(c['method'], c['baseline'], c['family'], c['m']) for c in out
            ] == [('rambo', 'ce', 'exploratory', 3),
                  ('tau0', 'ce', 'exploratory', 3),
                  ('rambo', 'tau0', 'exploratory', 3)]
    # rambo - tau0: 1, 1, 2 points: mean 4/3
    assert out[2]['diff']['mean'] == pytest.approx(0.04 / 3)


def test_report_of_a_selection_only_study(study, tmp_path):
    spec = study.load_spec(_write_spec(tmp_path, SPEC))
    results = {('ce', lr, 0): _fake('ce', lr, 0, val)
               for lr, val in ((0.01, 0.5), (0.02, 0.6))}
    md = open(study.write_report(spec, results,
                                 str(tmp_path / 'out'))['md']).read()
    assert '- ce (`ce`): lr 0.01: 50.0, lr 0.02: **60.0**' in md
    # no empty table header: a sentence says there is no test run
    assert '| method | lr |' not in md
    assert 'No test run (`--phase test`)' in md
    # an lr chosen before the study gets its line: no empty section
    spec['methods']['old'] = dict(
        config=CE, lr=0.04, options=[], label='earlier CE',
        selected_on=dict(study='s16', seeds=[0, 1], note='grid 0.01-0.08'))
    md = open(study.write_report(spec, results,
                                 str(tmp_path / 'out2'))['md']).read()
    assert ('- earlier CE (`old`): lr 0.04, selected on val before this '
            'study in `s16` with seeds 0, 1; grid 0.01-0.08') in md


def test_finished_runs_are_skipped(study, tmp_path, monkeypatch):
    spec = study.load_spec(_write_spec(tmp_path, SPEC))
    work = tmp_path / 'work'
    directory = study.run_dir(str(work), 'mini', 'ce', 0.01, 0)
    (work / 'mini' / 'ce' / 'lr0.01_seed0').mkdir(parents=True)
    saved = _fake('ce', 0.01, 0, 0.5, 0.4)
    json.dump(saved, open(osp.join(directory, 'result.json'), 'w'))

    def forbidden(*args, **kwargs):
        raise AssertionError('a finished run was started again')

    monkeypatch.setattr(study, 'run_logged', forbidden)
    assert study.execute_run(spec, 'ce', 0.01, 0, True, str(work)) == saved
    assert study.collect_results(spec, str(work)) == {('ce', 0.01, 0): saved}


def test_records_resume_a_study_without_its_work_directories(
        study, tmp_path, monkeypatch):
    """The committed copy of each result: a run whose record holds what is
    asked is not run again when its work directory is gone; a selection
    record does not stand in for a test run."""
    spec = study.load_spec(_write_spec(tmp_path, SPEC))
    work, records = str(tmp_path / 'work'), str(tmp_path / 'runs')
    path = study.record_path(records, spec, 'ce', 0.01, 1)
    assert path == osp.join(records, 'mini', 'ce_lr0.01_seed1.json')
    tested = _fake('ce', 0.01, 1, 0.5, 0.4)
    selected = _fake('ce', 0.02, 0, 0.6)
    for res in (tested, selected):
        target = study.record_path(records, spec, res['method'], res['lr'],
                                   res['seed'])
        os.makedirs(osp.dirname(target), exist_ok=True)
        json.dump(res, open(target, 'w'))

    def forbidden(*args, **kwargs):
        raise AssertionError('a recorded run was started again')

    monkeypatch.setattr(study, 'run_logged', forbidden)
    assert study.execute_run(spec, 'ce', 0.01, 1, True, work,
                             records=records) == tested
    assert study.execute_run(spec, 'ce', 0.02, 0, False, work,
                             records=records) == selected
    assert not osp.exists(work)  # nothing was run, nothing written
    assert study.collect_results(spec, work, records) == {
        ('ce', 0.01, 1): tested, ('ce', 0.02, 0): selected}
    assert study.collect_results(spec, work) == {}
    with pytest.raises(AssertionError, match='started again'):
        study.execute_run(spec, 'ce', 0.02, 0, True, work, records=records)


def test_records_are_written_beside_the_work_directory(study, tmp_path,
                                                       monkeypatch):
    """A finished run leaves the same result in its work directory and in
    the records; of two copies of one run, the one with a test result."""
    spec = study.load_spec(_write_spec(tmp_path, SPEC))
    work, records = str(tmp_path / 'work'), str(tmp_path / 'runs')
    monkeypatch.setattr(study, 'run_logged', lambda cmd, log: 7.0)
    monkeypatch.setattr(study, 'read_scalars',
                        lambda d, key=None: {1: 0.25, 2: 0.5})
    monkeypatch.setattr(study, 'last_train_record', lambda d: {})
    res = study.execute_run(spec, 'ce', 0.01, 0, False, work,
                            records=records)
    assert res['val_ap50'] == 0.5 and res['train_seconds'] == 7.0
    directory = study.run_dir(work, 'mini', 'ce', 0.01, 0)
    on_disk = json.load(open(osp.join(directory, 'result.json')))
    recorded = json.load(open(study.record_path(records, spec, 'ce', 0.01,
                                                0)))
    assert on_disk == recorded == res
    with_test = dict(res, test_ap50=0.45)
    json.dump(with_test, open(study.record_path(records, spec, 'ce', 0.01,
                                                0), 'w'))
    assert study.collect_results(spec, work, records) == {
        ('ce', 0.01, 0): with_test}


def test_a_resumed_run_counts_the_time_of_every_attempt(
        study, tmp_path, monkeypatch):
    """A run stopped part-way and resumed: its train time is the first
    attempt's up to the checkpoint it left plus the second attempt's, not
    the second alone; a run resumed from an attempt that left no record is
    marked, and the report leaves it out of the mean time."""
    spec = study.load_spec(_write_spec(tmp_path, SPEC))
    work = str(tmp_path / 'work')
    directory = study.run_dir(work, 'mini', 'ce', 0.01, 0)
    os.makedirs(directory)
    clock = iter([1000.0, 1500.0])
    monkeypatch.setattr(study.time, 'time', lambda: next(clock))

    def killed(cmd, log):  # the first attempt leaves a checkpoint, then dies
        ckpt = osp.join(directory, 'epoch_8.pth')
        open(ckpt, 'w').close()
        os.utime(ckpt, (1300.0, 1300.0))
        open(osp.join(directory, 'last_checkpoint'), 'w').write(ckpt)
        raise RuntimeError('killed')

    monkeypatch.setattr(study, 'run_logged', killed)
    with pytest.raises(RuntimeError, match='killed'):
        study.execute_run(spec, 'ce', 0.01, 0, False, work)
    commands = []

    def resumed(cmd, log):
        commands.append(cmd)
        return 250.0

    monkeypatch.setattr(study, 'run_logged', resumed)
    monkeypatch.setattr(study, 'read_scalars',
                        lambda d, key=None: {1: 0.25, 2: 0.5})
    monkeypatch.setattr(study, 'last_train_record', lambda d: {})
    res = study.execute_run(spec, 'ce', 0.01, 0, False, work)
    assert '--resume' in commands[0]
    assert res['train_seconds'] == 300.0 + 250.0  # 1000 -> 1300, then 250
    assert res['resumed'] == 1 and 'train_seconds_partial' not in res

    # a checkpoint from an attempt of which nothing is known
    other = study.run_dir(work, 'mini', 'ce', 0.01, 1)
    os.makedirs(other)
    open(osp.join(other, 'epoch_3.pth'), 'w').close()
    open(osp.join(other, 'last_checkpoint'), 'w').write(
        osp.join(other, 'epoch_3.pth'))
    monkeypatch.setattr(study.time, 'time', lambda: 2000.0)
    res = study.execute_run(spec, 'ce', 0.01, 1, False, work)
    assert res['train_seconds'] == 250.0 and res['train_seconds_partial']


@pytest.mark.parametrize('logged, interval, expected', [
    ({10: 0.2, 11: 0.3}, 1, 'epoch_11.pth'),  # stopped during epoch 12's val
    ({10: 0.2, 11: 0.3, 12: 0.4}, 1, 'epoch_12.pth'),  # its val logged
    ({}, 16, 'epoch_12.pth'),  # no val due at epoch 12
])
def test_a_run_stopped_during_its_val_trains_that_epoch_again(
        study, tmp_path, monkeypatch, logged, interval, expected):
    """The resume point: the checkpoint before the last when the last
    epoch's due val was not logged, so the val curve has no gap."""
    directory = str(tmp_path)
    for epoch in (11, 12):
        open(osp.join(directory, f'epoch_{epoch}.pth'), 'w').close()
    open(osp.join(directory, 'last_checkpoint'), 'w').write(
        osp.join(directory, 'epoch_12.pth'))
    (tmp_path / 'c.py').write_text(
        f'train_cfg = dict(max_epochs=36, val_interval={interval})\n')
    monkeypatch.setattr(study, 'read_scalars', lambda d, key=None: logged)
    assert study.resume_checkpoint(directory, 'configs/c.py') == osp.join(
        directory, expected)
    os.remove(osp.join(directory, 'epoch_11.pth'))  # rotated out: kept gap
    assert study.resume_checkpoint(directory, 'configs/c.py').endswith(
        'epoch_12.pth')


@pytest.mark.slow
def test_one_real_run_through_the_runner(study, tmp_path, capsys):
    """A one-epoch study on a tiny DigitsVOC: train, evaluate val and test,
    score calibration, report; a second call runs nothing."""
    data = tmp_path / 'data' / 'VOCdevkit'
    body = f"""
data = dict(root='{data}', make=['tools/dataset_converters/make_digits_voc.py', '{{root}}',
            '--train', '8', '--val', '4', '--test', '4'])
seeds = [0]
select_seed = 0  # one training: the selection run is the test run
baseline = 'ce'
options = ['train_cfg.max_epochs=1', 'train_dataloader.num_workers=0',
           'val_dataloader.num_workers=0', 'test_dataloader.num_workers=0',
           'train_dataloader.persistent_workers=False',
           'val_dataloader.persistent_workers=False',
           'test_dataloader.persistent_workers=False',
           'train_dataloader.batch_size=4',
           'train_dataloader.dataset.data_root={data}/',
           'val_dataloader.dataset.data_root={data}/',
           'test_dataloader.dataset.data_root={data}/']
methods = dict(ce=dict(config='{CE}', lrs=[0.01]))
"""
    spec_path = _write_spec(tmp_path, body, name='tiny')
    args = [spec_path, '--work-dir', str(tmp_path / 'work'), '--out-dir',
            str(tmp_path / 'out')]
    paths = study.main(args)
    out = capsys.readouterr().out
    assert 'select 1/1 ce lr=0.01 seed=0' in out and 'ETA' in out
    res = json.load(open(osp.join(
        study.run_dir(str(tmp_path / 'work'), 'tiny', 'ce', 0.01, 0),
        'result.json')))
    assert len(res['val_curve']) == 1 and 0 <= res['test_ap50'] <= 1
    assert 'calibration' in res
    assert '| ce | 0.01 | 1 |' in open(paths['md']).read()
    study.main(args)
    assert '0 to run' in capsys.readouterr().out


def test_dry_run_prints_the_plan_and_writes_nothing(study, tmp_path, capsys,
                                                    monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError('a dry run started a training')

    monkeypatch.setattr(study, 'run_logged', forbidden)
    out_dir = tmp_path / 'out'
    args = [_write_spec(tmp_path, SPEC), '--work-dir', str(tmp_path / 'work'),
            '--out-dir', str(out_dir), '--dry-run']
    assert study.main(args) == {}
    out = capsys.readouterr().out
    # 2 + 3 selection runs (tau0 takes rambo's lr); the test runs wait for it
    assert "('ce', 0.01, 0)" in out and "('rambo', 0.4, 0)" in out
    assert 'test runs follow the selection' in out and 'select' in out
    assert not out_dir.exists()


def test_prepare_writes_missing_files_once_and_a_dry_run_none(
        study, tmp_path, capsys):
    """A spec's ``prepare`` command runs when its file is missing (a
    pretrained backbone, say), and not when it exists or on a dry run."""
    target = tmp_path / 'made' / 'weights.txt'
    script = tmp_path / 'make.py'
    script.write_text(
        'import os, sys\n'
        'os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)\n'
        'open(sys.argv[1], "a").write("x")\n')
    body = SPEC + (f"prepare = [dict(path={str(target)!r}, "
                   f"make=[{str(script)!r}, {str(target)!r}])]\n")
    spec_path = _write_spec(tmp_path, body)
    args = [spec_path, '--work-dir', str(tmp_path / 'work'), '--out-dir',
            str(tmp_path / 'out'), '--dry-run']
    study.main(args)
    assert not target.exists()
    spec = study.load_spec(spec_path)
    study.ensure_data(spec)
    study.ensure_data(spec)
    assert target.read_text() == 'x'  # written once
    assert f'writing {target}' in capsys.readouterr().out
