"""Learning rates selected on more than one seed (``select_seeds``): every
grid point runs with every selection seed, the lr with the best mean val
AP50 is selected (ties: the smaller lr), reports and pre-registrations say
so; the spec's checks; a study that only selects (``select_only``). Results
are faked (no training)."""
import json
import os
import os.path as osp

import pytest

CE = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'
RAMBO = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_rambo_16e_digitsvoc.py'
SPEC = f"""
seeds = [10, 11, 12]
select_seeds = [3, 5]
baseline = 'ce'
methods = dict(
    ce=dict(config='{CE}', lrs=[0.01, 0.02, 0.04], label='CE'),
    rambo=dict(config='{RAMBO}', lrs=[0.1, 0.2], label='RaMBO'),
    tau0=dict(config='{RAMBO}', lr_from='rambo'))
"""


@pytest.fixture(scope='module')
def study():
    from rankloss_lab import study
    return study


def _spec(study, tmp_path, body=SPEC, name='seeds'):
    path = tmp_path / f'{name}.py'
    path.write_text(body)
    return study.load_spec(str(path))


def _results(val):
    """``{(method, lr, seed): result}`` from ``{(method, lr, seed): val}``;
    None: diverged."""
    out = {}
    for (method, lr, seed), v in val.items():
        out[(method, lr, seed)] = dict(
            study='seeds', method=method, lr=lr, seed=seed, val_ap50=v,
            val_curve=[v], train_seconds=1.0, machine='test machine')
        if v is None:
            out[(method, lr, seed)]['diverged'] = 'loss is nan'
    return out


# seed 3 alone selects ce 0.04 (0.62), seed 5 alone 0.01 (0.60); the means
# are 0.55, 0.57, 0.56: 0.02, which neither seed alone selects
CE_VAL = {('ce', 0.01, 3): 0.50, ('ce', 0.02, 3): 0.58, ('ce', 0.04, 3): 0.62,
          ('ce', 0.01, 5): 0.60, ('ce', 0.02, 5): 0.56, ('ce', 0.04, 5): 0.50}


def test_the_spec_completes_both_keys_and_plans_every_seed(study, tmp_path):
    spec = _spec(study, tmp_path)
    assert spec['select_seeds'] == [3, 5] and spec['select_seed'] == 3
    assert spec['reselect_seed'] is None  # the mean over seeds already
    # seed by seed: a phase stopped half-way leaves whole grids
    assert study.select_plan(spec, ['ce', 'rambo']) == [
        ('ce', 0.01, 3), ('ce', 0.02, 3), ('ce', 0.04, 3), ('rambo', 0.1, 3),
        ('rambo', 0.2, 3), ('ce', 0.01, 5), ('ce', 0.02, 5), ('ce', 0.04, 5),
        ('rambo', 0.1, 5), ('rambo', 0.2, 5)]
    # a one-seed spec as before: one seed, its re-selection seed
    old = _spec(study, tmp_path, SPEC.replace('select_seeds = [3, 5]',
                                              'select_seed = 3'), 'old')
    assert old['select_seeds'] == [3] and old['reselect_seed'] == 4
    assert study.select_plan(old, ['rambo']) == [('rambo', 0.1, 3),
                                                 ('rambo', 0.2, 3)]
    # select_seed may repeat the first of select_seeds (e.g. inherited)
    same = _spec(study, tmp_path, SPEC + 'select_seed = 3\n', 'same')
    assert same['select_seeds'] == [3, 5]


@pytest.mark.parametrize('line, match', [
    ('select_seeds = [3]', 'select_seeds must be two or more distinct ints'),
    ('select_seeds = [3, 3]', 'select_seeds must be two or more'),
    ('select_seeds = [3, 11]', r'none of them a test seed \[10, 11, 12\]'),
    ("select_seeds = [3, '5']", 'select_seeds must be two or more'),
    ('select_seeds = 3', 'select_seeds must be two or more'),
    ('select_seed = 5', r'select_seed 5 and select_seeds \[3, 5\] disagree'),
    ('reselect_seed = 7', 'reselect_seed 7 re-selects a collapsed grid of a '
     'one-seed selection'),
    ("select_only = 'yes'", 'select_only must be True or False'),
])
def test_bad_selection_seeds_name_the_problem(study, tmp_path, line, match):
    body = SPEC.replace('select_seeds = [3, 5]\n', '') + line + '\n'
    if line.startswith(('select_seed =', 'reselect', 'select_only')):
        body = SPEC + line + '\n'
    with pytest.raises(ValueError, match=match):
        _spec(study, tmp_path, body)


def test_the_best_mean_over_the_seeds_is_selected(study, tmp_path):
    spec = _spec(study, tmp_path)
    results = _results(CE_VAL)
    sel = study.grid_selection(spec, results, 'ce')
    assert sel['lr'] == 0.02 and sel['seeds'] == [3, 5]
    assert sel['scores'] == pytest.approx({0.01: 0.55, 0.02: 0.57,
                                           0.04: 0.56})
    assert sel['per_seed'][3] == {0.01: 0.50, 0.02: 0.58, 0.04: 0.62}
    # each seed alone would have selected another lr
    assert study.best_lr(sel['per_seed'][3]) == 0.04
    assert study.best_lr(sel['per_seed'][5]) == 0.01
    assert study.selection_seeds(spec, 'ce', results) == [3, 5]
    assert study.selection_seeds(spec, 'tau0') == [3, 5]  # lr_from
    assert study.selection_note(spec, 'ce', results) == (
        'best mean val AP50 over seeds 3, 5 of the grid {0.01, 0.02, 0.04}, '
        'in this study')
    assert study.selection_note(spec, 'tau0', results).startswith(
        'the lr of `rambo` (best mean val AP50 over seeds 3, 5 of the grid '
        '{0.1, 0.2}')


def test_no_selection_until_every_seed_finished_its_grid(study, tmp_path):
    spec = _spec(study, tmp_path)
    results = _results({k: v for k, v in CE_VAL.items()
                        if k != ('ce', 0.04, 5)})
    sel = study.grid_selection(spec, results, 'ce')
    assert sel['lr'] is None and sel['pending'] == 'select'
    assert sel['per_seed'][5] is None and sel['scores'] is None
    assert study.selected_lrs(spec, results) == {}


def test_ties_go_to_the_smaller_lr(study, tmp_path):
    spec = _spec(study, tmp_path)
    # rambo: means 0.45 and 0.45 (0.4 + 0.5 and 0.5 + 0.4): a tie
    val = {('rambo', 0.1, 3): 0.4, ('rambo', 0.2, 3): 0.5,
           ('rambo', 0.1, 5): 0.5, ('rambo', 0.2, 5): 0.4}
    assert study.selected_lrs(spec, _results(val)) == {'rambo': 0.1,
                                                       'tau0': 0.1}
    # a tie of the logged (3-decimal) values whose float sums differ in the
    # last bit: 0.307 + 0.255 > 0.344 + 0.218 in binary, equal in AP50
    assert 0.307 + 0.255 > 0.344 + 0.218
    val = {('rambo', 0.1, 3): 0.344, ('rambo', 0.1, 5): 0.218,
           ('rambo', 0.2, 3): 0.307, ('rambo', 0.2, 5): 0.255}
    assert study.selected_lrs(spec, _results(val))['rambo'] == 0.1
    # a difference of one logged unit is no tie
    val[('rambo', 0.2, 5)] = 0.256
    assert study.selected_lrs(spec, _results(val))['rambo'] == 0.2


def test_a_run_that_diverged_on_one_seed_is_never_selected(study, tmp_path):
    spec = _spec(study, tmp_path)
    val = {('rambo', 0.1, 3): 0.30, ('rambo', 0.2, 3): None,
           ('rambo', 0.1, 5): 0.31, ('rambo', 0.2, 5): 0.90}
    sel = study.grid_selection(spec, _results(val), 'rambo')
    assert sel['lr'] == 0.1 and sel['scores'][0.2] == float('-inf')


def test_the_report_gives_the_means_and_each_seed(study, tmp_path):
    spec = _spec(study, tmp_path)
    results = _results({**CE_VAL, ('rambo', 0.1, 3): 0.4})
    md = open(study.write_report(spec, results,
                                 str(tmp_path / 'out'))['md']).read()
    assert ('Test seeds: 10, 11, 12; learning rates selected on val with the '
            'mean over seeds 3, 5.') in md
    assert ('- CE (`ce`): mean over seeds 3, 5: lr 0.01: 55.0, lr 0.02: '
            '**57.0**, lr 0.04: 56.0\n'
            '  seed 3: lr 0.01: 50.0, lr 0.02: 58.0, lr 0.04: 62.0\n'
            '  seed 5: lr 0.01: 60.0, lr 0.02: 56.0, lr 0.04: 50.0\n') in md
    # unfinished: dashes, no bold, said
    assert ('- RaMBO (`rambo`): mean over seeds 3, 5: lr 0.1: -, lr 0.2: - '
            '(not finished)\n'
            '  seed 3: lr 0.1: 40.0, lr 0.2: -\n'
            '  seed 5: lr 0.1: -, lr 0.2: -') in md
    with open(str(tmp_path / 'out' / 'seeds.csv')) as f:
        rows = f.read().splitlines()
    assert len(rows) == 1 + 7  # every run of every seed


def test_the_pre_registration_freezes_the_seeds(study, tmp_path):
    spec = _spec(study, tmp_path, SPEC + 'fair_selection = False\n')
    settings = study.study_settings(spec, {'ce': 0.02, 'rambo': 0.1})
    assert settings['select_seeds'] == [3, 5] and settings['select_seed'] == 3
    assert 'reselect_seed' not in settings
    # a one-seed spec freezes what it froze before: no select_seeds key
    old = _spec(study, tmp_path, SPEC.replace(
        'select_seeds = [3, 5]', 'select_seed = 3') +
        'fair_selection = True\n', 'old')
    settings = study.study_settings(old, {'ce': 0.02, 'rambo': 0.1})
    assert 'select_seeds' not in settings
    assert settings['reselect_seed'] == 4


SELECT_ONLY = SPEC.replace('seeds = [10, 11, 12]\n', '') + \
    'select_only = True\n'


def test_a_select_only_study_has_no_test_phase(study, tmp_path, capsys,
                                               monkeypatch):
    spec = _spec(study, tmp_path, SELECT_ONLY, 'only')
    assert spec['seeds'] == [] and spec['select_seeds'] == [3, 5]
    path = str(tmp_path / 'only.py')
    args = [path, '--work-dir', str(tmp_path / 'work'), '--out-dir',
            str(tmp_path / 'out')]
    with pytest.raises(SystemExit, match='selection only'):
        study.main(args + ['--phase', 'test'])
    with pytest.raises(study.PreregistrationError, match='select_only = '
                       'True: it selects on val and is never tested'):
        study.main(args + ['--freeze'])
    runs = []

    def execute_run(spec, method, lr, seed, evaluate_test, work_dir,
                    preregistration=None, records=None):
        assert not evaluate_test
        runs.append((method, lr, seed))
        res = _results({(method, lr, seed): 0.5 + lr})[(method, lr, seed)]
        res['val_curve'] = [0.1, 0.3, 0.5 + lr]
        path = study.record_path(records, spec, method, lr, seed)
        os.makedirs(osp.dirname(path), exist_ok=True)
        study.write_json(path, res)
        return res

    monkeypatch.setattr(study, 'execute_run', execute_run)
    monkeypatch.setattr(study, 'ensure_data', lambda spec: None)
    paths = study.main(args)  # --phase all: the selection only
    assert sorted(runs) == sorted(study.select_plan(spec, ['ce', 'rambo']))
    md = open(paths['md']).read()
    assert ('Test seeds: none (selection only); learning rates selected on '
            'val with the mean over seeds 3, 5.') in md
    assert 'No test run' in md
    # the curves of the selection seeds at the selected lrs
    assert json.load(open(study.record_path(
        str(tmp_path / 'out' / 'runs'), spec, 'ce', 0.04, 5)))['seed'] == 5
    assert paths['png'].endswith('only_curves.png')
    assert (tmp_path / 'out' / 'only_curves.png').is_file()
