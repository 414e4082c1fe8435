"""Pre-registration in the study tool: the freeze is written before any test
run and holds the hypotheses, seeds, selected settings, date and hash; the
test phase refuses changed settings and undeclared rows; the report checks
the freeze, labels undeclared rows exploratory and corrects for the
comparisons. Training is faked (no process is started)."""
import csv
import json
import os
import os.path as osp

import pytest

CE = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'
RAMBO = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_rambo_16e_digitsvoc.py'
SPEC = f"""
seeds = [10, 11, 12]
baseline = 'ce'
test_split = 'confirm'
data = dict(root='data/none', make=[])  # ensure_data is faked
preregistered = True
# the pre-registration's mechanics with an lr from an earlier study: the
# fair-baseline rules waived (they have their own tests, test_study_fairness)
fair_selection = False
methods = dict(
    ce=dict(config='{CE}', lr=0.04, label='CE',
            selected_on=dict(study='older', seeds=[0])),
    mix=dict(config='{RAMBO}', lrs=[0.02, 0.04], label='mix'),
    extra=dict(config='{RAMBO}', lr_from='mix', options=['x=1']))
hypotheses = [dict(method='mix', alternative='greater')]
"""
# val AP50 of the selection runs; test AP50 per method and seed
VAL = {('mix', 0.02): 0.30, ('mix', 0.04): 0.40}
TEST = {'ce': {10: 0.40, 11: 0.42, 12: 0.41},
        'mix': {10: 0.43, 11: 0.44, 12: 0.45},
        'extra': {10: 0.30, 11: 0.31, 12: 0.35}}


@pytest.fixture(scope='module')
def study():
    from rankloss_lab import study
    return study


@pytest.fixture
def fake_training(study, monkeypatch):
    """Replaces the training and test processes; returns their commands."""
    calls = []

    def run_logged(cmd, log_path):
        calls.append(cmd)
        directory = cmd[cmd.index('--work-dir') + 1]
        os.makedirs(directory, exist_ok=True)
        if cmd[1] == 'tools/train.py':
            with open(osp.join(directory, 'last_checkpoint'), 'w') as f:
                f.write(osp.join(directory, 'epoch_2.pth'))
        return 1.0

    def read_scalars(directory, key=None):
        evaluation = osp.basename(directory)
        run = directory if not evaluation.startswith('eval_') else \
            osp.dirname(directory)
        method = osp.basename(osp.dirname(run))
        lr, seed = osp.basename(run)[2:].split('_seed')
        if evaluation == 'eval_test':
            return {1: TEST[method][int(seed)]}
        return {1: 0.1, 2: VAL.get((method, float(lr)), 0.2)}

    monkeypatch.setattr(study, 'run_logged', run_logged)
    monkeypatch.setattr(study, 'read_scalars', read_scalars)
    monkeypatch.setattr(study, 'last_train_record', lambda d: {})
    monkeypatch.setattr(study, 'score_calibration', lambda *a: {})
    monkeypatch.setattr(study, 'olrp_on_test', lambda *a: {})
    monkeypatch.setattr(study, 'ensure_data', lambda spec: None)
    # no detections file behind the fake test (tests/test_tools/
    # test_study_detections.py stores real ones)
    monkeypatch.setattr(study, 'keep_test_detections', lambda *a: None)
    return calls


def _setup(tmp_path, body=SPEC, name='pre'):
    spec = tmp_path / f'{name}.py'
    spec.write_text(body)
    work, out = tmp_path / 'work', tmp_path / 'out'
    return [str(spec), '--work-dir', str(work), '--out-dir', str(out)], out


def test_freeze_then_test_then_report(study, tmp_path, fake_training,
                                      capsys):
    args, out = _setup(tmp_path)
    # no test run before the freeze
    with pytest.raises(study.PreregistrationError, match='--freeze'):
        study.main(args + ['--phase', 'test'])
    # no freeze before the selection that it freezes
    with pytest.raises(study.PreregistrationError,
                       match=r"no learning rate selected yet for \['mix'\]"):
        study.main(args + ['--freeze'])
    assert not fake_training
    study.main(args + ['--phase', 'select'])
    # the selection ran on seed 0, disjoint from the test seeds 10-12
    assert len(fake_training) == 2 and all(
        'randomness.seed=0' in c for c in fake_training)
    paths = study.main(args + ['--freeze'])
    assert paths['json'] == str(out / 'pre_preregistration.json')
    record = json.load(open(paths['json']))
    assert record['settings']['hypotheses'] == [dict(
        id='H1', method='mix', baseline='ce', alternative='greater',
        metric='test AP50')]
    assert record['settings']['test_seeds'] == [10, 11, 12]
    assert record['settings']['test_split'] == 'confirm'
    assert record['settings']['methods'] == {
        'ce': dict(config=CE, options=[], lr=0.04),
        'mix': dict(config=RAMBO, options=[], lr=0.04)}  # extra: undeclared
    assert record['settings_sha256'] == study.settings_hash(
        record['settings'])
    assert record['seed_overlap'] == {} and record['frozen_at']
    assert record['selection']['mix']['seeds'] == [0]
    assert 'older' in record['selection']['ce']['how']
    md = open(paths['md']).read()
    assert '**H1** (greater): mix (`mix`) > CE (`ce`)' in md
    assert 'Selection and test seeds are disjoint' in md
    # freezing the same settings again changes nothing
    before = open(paths['json']).read()
    study.main(args + ['--freeze'])
    assert 'frozen already' in capsys.readouterr().out
    assert open(paths['json']).read() == before

    # the test phase: the declared methods only, on the fresh split
    fake_training.clear()
    report = study.main(args + ['--phase', 'test'])
    trained = sorted((c[2], [o for o in c if o.startswith('randomness')][0])
                     for c in fake_training if c[1] == 'tools/train.py')
    assert len(trained) == 6 and not any('x=1' in c for c in fake_training)
    tests = [c for c in fake_training if c[1] == 'tools/test.py']
    assert sum('test_dataloader.dataset.ann_file=VOC2007/ImageSets/Main/'
               'confirm.txt' in c for c in tests) == 6
    res = json.load(open(osp.join(study.run_dir(
        str(tmp_path / 'work'), 'pre', 'mix', 0.04, 10), 'result.json')))
    assert res['preregistration_sha256'] == record['settings_sha256']
    assert res['test_started_at'] >= record['frozen_at']
    assert res['test_split'] == 'confirm'
    md = open(report['md']).read()
    assert 'Pre-registered: `pre_preregistration.json`' in md
    assert 'Pre-registered family: m = 1 hypotheses' in md
    # diffs 3, 2, 4 points: mean 3, sd 1; one-sided t = 5.196, 2 df
    assert '| H1: mix vs CE | greater | 3 | +3.0 | [+0.5, +5.5] | ' \
        '[+1.3, +∞) (m = 1) | 0.0175 | 0.0175 | yes |' in md
    rows = list(csv.DictReader(open(report['comparisons'])))
    assert [(r['id'], r['family'], r['significant_holm']) for r in rows] == [
        ('H1', 'pre-registered', 'True')]

    # an undeclared method is refused, or run and labelled exploratory
    fake_training.clear()
    with pytest.raises(study.PreregistrationError,
                       match=r"\['extra'\] are not declared"):
        study.main(args + ['--phase', 'test', '--methods', 'extra'])
    assert not fake_training
    report = study.main(args + ['--phase', 'test', '--methods', 'extra',
                                '--exploratory'])
    md = open(report['md']).read()
    assert '| extra *(exploratory)* | 0.04 | 3 |' in md
    assert 'Exploratory family: m = 1 comparisons' in md
    rows = list(csv.DictReader(open(report['comparisons'])))
    assert [(r['method'], r['family']) for r in rows] == [
        ('mix', 'pre-registered'), ('extra', 'exploratory')]


def test_an_exploratory_study_freezes_every_method(study, tmp_path,
                                                  fake_training):
    """No hypothesis: the freeze holds every method's settings, the test
    phase runs them all, every comparison is exploratory."""
    args, out = _setup(tmp_path, SPEC.replace(
        "hypotheses = [dict(method='mix', alternative='greater')]",
        'hypotheses = []'), name='expl')
    study.main(args + ['--phase', 'select'])
    paths = study.main(args + ['--freeze'])
    record = json.load(open(paths['json']))
    assert record['settings']['hypotheses'] == []
    assert sorted(record['settings']['methods']) == ['ce', 'extra', 'mix']
    assert record['settings']['methods']['extra']['options'] == ['x=1']
    assert 'None: an exploratory study.' in open(paths['md']).read()
    fake_training.clear()
    report = study.main(args + ['--phase', 'test'])
    assert sum(c[1] == 'tools/train.py' for c in fake_training) == 9
    md = open(report['md']).read()
    assert 'no hypothesis (an exploratory study' in md
    assert 'Exploratory family: m = 2 comparisons' in md
    rows = list(csv.DictReader(open(report['comparisons'])))
    assert [(r['method'], r['family']) for r in rows] == [
        ('mix', 'exploratory'), ('extra', 'exploratory')]


@pytest.mark.parametrize('old, new, message', [
    ('seeds = [10, 11, 12]', 'seeds = [10, 11, 12, 13]',
     'test_seeds: frozen [10, 11, 12], now [10, 11, 12, 13]'),
    ("lr=0.04, label='CE'", "lr=0.05, label='CE'",
     'methods.ce.lr: frozen 0.04, now 0.05'),
    ("alternative='greater'", "alternative='two-sided'",
     'hypotheses: frozen'),
    ("label='mix')", "label='mix', options=['y=2'])",
     "methods.mix.options: frozen [], now ['y=2']"),
])
def test_changed_settings_are_refused(study, tmp_path, fake_training, old,
                                      new, message):
    args, out = _setup(tmp_path)
    study.main(args + ['--phase', 'select'])
    study.main(args + ['--freeze'])
    study.main(args + ['--phase', 'test'])
    assert old in SPEC
    open(args[0], 'w').write(SPEC.replace(old, new))
    fake_training.clear()
    for extra in (['--phase', 'test'], ['--report-only']):
        with pytest.raises(study.PreregistrationError) as err:
            study.main(args + extra)
        assert message in str(err.value)
        assert 'pre_preregistration.json' in str(err.value)
    assert not [c for c in fake_training if c[1] == 'tools/train.py']
    # and no second freeze over the first
    with pytest.raises(study.PreregistrationError):
        study.main(args + ['--freeze'])


def test_no_freeze_after_a_test_run(study, tmp_path, fake_training):
    body = SPEC.replace('preregistered = True', '')
    args, out = _setup(tmp_path, body)
    study.main(args)  # selection and test, not pre-registered
    md = open(out / 'pre.md').read()
    assert 'Not pre-registered: every comparison below is exploratory' in md
    with pytest.raises(study.PreregistrationError,
                       match='test results exist already'):
        study.main(args + ['--freeze'])
    assert not (out / 'pre_preregistration.json').exists()


def test_report_refuses_runs_from_before_the_freeze(study, tmp_path,
                                                    fake_training):
    args, out = _setup(tmp_path)
    study.main(args + ['--phase', 'select'])
    spec = study.load_spec(args[0])
    # a freeze dated after the test runs: they were not pre-registered
    study.freeze(spec, args[0], str(tmp_path / 'work'), str(out),
                 now='2999-01-01T00:00:00+00:00')
    with pytest.raises(study.PreregistrationError,
                       match='not after the freeze of 2999-01-01'):
        study.main(args + ['--phase', 'test'])


def test_an_edited_freeze_file_is_refused(study, tmp_path, fake_training):
    args, out = _setup(tmp_path)
    study.main(args + ['--phase', 'select'])
    paths = study.main(args + ['--freeze'])
    record = json.load(open(paths['json']))
    record['settings']['methods']['mix']['lr'] = 0.02
    json.dump(record, open(paths['json'], 'w'))
    with pytest.raises(study.PreregistrationError, match='was edited'):
        study.main(args + ['--phase', 'test'])


def test_selection_seed_is_disjoint_by_default(study, tmp_path):
    args, _ = _setup(tmp_path)
    assert study.load_spec(args[0])['select_seed'] == 0
    body = SPEC.replace('seeds = [10, 11, 12]', 'seeds = [0, 1, 2]')
    spec = study.load_spec(_setup(tmp_path, body, 'b')[0][0])
    assert spec['select_seed'] == 3
    # the grid's selection seed is no test seed; ce's declared one (0) is
    assert study.seed_overlap(spec, list(spec['methods'])) == {'ce': [0]}
    # a spec may keep the overlap (the DigitsVOC studies): it is stated
    spec = study.load_spec(_setup(
        tmp_path, body + 'select_seed = 0\n', 'c')[0][0])
    assert study.seed_overlap(spec, ['mix', 'extra', 'ce']) == {
        'mix': [0], 'extra': [0], 'ce': [0]}
    assert 'seed 0 selected the learning rates' in study.seeds_sentence(
        spec, ['mix'])


@pytest.mark.parametrize('body, match', [
    ("hypotheses = [dict(method='nope')]", 'not one of the methods'),
    ("hypotheses = [dict(method='ce')]", 'with itself'),
    ("hypotheses = [dict(method='mix', alternative='bigger')]",
     'alternative must be one of'),
    ("hypotheses = [dict(method='mix'), dict(method='mix')]", 'repeats'),
    ("methods['ce']['lrs'] = [0.1]", 'exactly one of lrs'),
    ("methods['ce']['lr'] = -1", 'lr must be a positive number'),
])
def test_bad_hypotheses_and_lrs(study, tmp_path, body, match):
    with pytest.raises(ValueError, match=match):
        study.load_spec(_setup(tmp_path, SPEC + body + '\n')[0][0])


def test_the_confirmation_study_is_frozen(study):
    """The committed pre-registration matches the confirmation spec: any
    change to its settings fails here before it could reach a run."""
    root = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
    spec = study.load_spec(osp.join(root, 'lab/rankloss_lab/studies/'
                                    'confirm_digitsvoc.py'))
    record = study.read_preregistration(
        spec, osp.join(root, 'docs', 'evidence'), required=True)
    study.check_preregistration(spec, study.selected_lrs(spec, {}), record)
    assert [(h['method'], h['baseline'], h['alternative'])
            for h in record['settings']['hypotheses']] == [
        ('rambo_bce', 'ce', 'greater'), ('rambo_focal', 'focal', 'greater')]
    assert record['settings']['test_seeds'] == [10, 11, 12, 13, 14]
    assert record['seed_overlap'] == {}


def test_the_frozen_spec_path_still_loads(study, capsys):
    """The pre-registration records the spec where it was frozen
    (``tools/studies/``); that path still names the moved spec."""
    root = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
    record = json.load(open(osp.join(
        root, 'docs', 'evidence', 'confirm_digitsvoc_preregistration.json')))
    assert record['spec'] == 'tools/studies/confirm_digitsvoc.py'
    spec = study.load_spec(osp.join(root, record['spec']))
    assert 'moved to lab/rankloss_lab/studies/confirm_digitsvoc.py' in \
        capsys.readouterr().out
    # the data writer moved since the freeze: the same script, by its
    # present path (freeze.MOVED_SCRIPTS)
    assert study.settings_differences(
        study.current_paths(record['settings']),
        study.study_settings(spec, study.selected_lrs(spec, {}))) == []
    assert record['settings']['data']['make'][0] == 'tools/make_digits_voc.py'
