"""The fair-baseline rules of the study tool: ``--freeze`` refuses a best at
a grid edge (unless the step beyond diverged), a declared method whose lr
was not selected in the study, grids of different densities, a collapsed
method not re-selected, a new freeze of a selection on one seed, and a spec
that does not say ``fair_selection``; re-selection runs a collapsed grid
again and selects on the mean. Results are faked (no training)."""
import json
import os
import os.path as osp

import pytest

CE = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'
RAMBO = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_rambo_16e_digitsvoc.py'
ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
SPEC = f"""
seeds = [10, 11, 12]
baseline = 'ce'
preregistered = True
fair_selection = True
methods = dict(
    ce=dict(config='{CE}', lrs=[0.01, 0.02, 0.04], label='CE'),
    rambo=dict(config='{RAMBO}', lrs=[0.1, 0.2, 0.4], label='RaMBO'))
"""
# val AP50 on the selection seed (0): both bests inside their grids
VAL = {('ce', 0.01): 0.50, ('ce', 0.02): 0.60, ('ce', 0.04): 0.55,
       ('rambo', 0.1): 0.40, ('rambo', 0.2): 0.65, ('rambo', 0.4): 0.30}
# the spec of a study frozen from now on: two selection seeds
TWO = SPEC + 'select_seeds = [0, 1]\n'
# val AP50 on seed 1: the means over seeds 0 and 1 have the same bests
VAL1 = {('ce', 0.01): 0.54, ('ce', 0.02): 0.56, ('ce', 0.04): 0.51,
        ('rambo', 0.1): 0.44, ('rambo', 0.2): 0.61, ('rambo', 0.4): 0.36}


@pytest.fixture(scope='module')
def study():
    from rankloss_lab import study
    return study


def _setup(tmp_path, body=SPEC, val=VAL, seed=0, more=None):
    """The spec's path, its results as records, the freeze's arguments;
    ``more``: ``{seed: val}`` of further selection seeds."""
    path = tmp_path / 'fair.py'
    path.write_text(body)
    records = str(tmp_path / 'runs')
    for s, values in {seed: val, **(more or {})}.items():
        for (method, lr), v in values.items():
            _record(records, method, lr, s, v)
    return str(path), records


def _record(records, method, lr, seed, val, **extra):
    res = dict(study='fair', method=method, lr=lr, seed=seed, val_ap50=val,
               val_curve=[val], train_seconds=1.0, machine='test machine')
    res.update(extra)
    path = osp.join(records, 'fair', f'{method}_lr{lr:g}_seed{seed}.json')
    os.makedirs(osp.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(res, f)


def _freeze(study, tmp_path, path, records):
    spec = study.load_spec(path)
    return study.freeze(spec, path, str(tmp_path / 'work'),
                        str(tmp_path / 'out'), records=records)


def test_a_fair_study_freezes_and_says_so(study, tmp_path):
    path, records = _setup(tmp_path, TWO, more={1: VAL1})
    paths = _freeze(study, tmp_path, path, records)
    record = json.load(open(paths['json']))
    assert record['settings']['fair_selection'] is True
    assert record['settings']['select_seeds'] == [0, 1]
    assert 'reselect_seed' not in record['settings']  # a mean already
    assert {m: s['lr'] for m, s in record['selection'].items()} == {
        'ce': 0.02, 'rambo': 0.2}
    assert record['selection']['ce']['seeds'] == [0, 1]
    assert record['selection']['ce']['how'] == (
        'best mean val AP50 over seeds 0, 1 of the grid {0.01, 0.02, 0.04}, '
        'in this study')
    md = open(paths['md']).read()
    assert ('Fair-baseline rules (`fair_selection = True`), checked at this '
            'freeze: every declared method was selected in this study on '
            'factor-2 grids of one density, on the best mean val AP50 over '
            'seeds 0, 1, its best inside its grid') in md


def test_a_new_freeze_of_a_one_seed_selection_is_refused(study, tmp_path,
                                                         monkeypatch):
    """Rule 5: a study frozen from now on selects on two or more seeds; a
    pre-registration written before the rule still freezes unchanged."""
    path, records = _setup(tmp_path)
    with pytest.raises(study.PreregistrationError) as err:
        _freeze(study, tmp_path, path, records)
    assert ('- selected on one seed (0): `ce`, `rambo`. fair_selection = '
            'True selects each lr on the best mean val AP50 over at least two '
            'seeds: set select_seeds = [0, 1]') in str(err.value)
    assert not (tmp_path / 'out').exists()
    # frozen before the rule (the check left out), then frozen again
    with monkeypatch.context() as m:
        m.setattr(study, 'one_seed_problems', lambda spec, results: [])
        paths = _freeze(study, tmp_path, path, records)
    before = open(paths['json']).read()
    assert _freeze(study, tmp_path, path, records) == paths
    assert open(paths['json']).read() == before
    # waived rules (fair_selection = False) waive this one too
    (tmp_path / 'waived').mkdir()
    path, records = _setup(tmp_path / 'waived', SPEC.replace(
        'fair_selection = True', 'fair_selection = False'))
    _freeze(study, tmp_path / 'waived', path, records)


@pytest.mark.parametrize('seed1, message', [
    # seed 0 alone would select 0.2, inside; the mean's best is the edge
    ({('rambo', 0.1): 0.40, ('rambo', 0.2): 0.55, ('rambo', 0.4): 0.92},
     'rambo: its best mean val AP50 over seeds 0, 1 (61.0) is at lr 0.4, '
     'the upper edge (largest lr) of its grid {0.1, 0.2, 0.4}: add lr 0.8'),
    # seed 1 alone would select 0.4, the edge; the mean's best is inside
    ({('rambo', 0.1): 0.40, ('rambo', 0.2): 0.60, ('rambo', 0.4): 0.70},
     None),
])
def test_the_grid_edge_rule_reads_the_mean(study, tmp_path, seed1,
                                           message):
    path, records = _setup(tmp_path, TWO, more={1: {**VAL1, **seed1}})
    if message is None:
        paths = _freeze(study, tmp_path, path, records)
        assert json.load(open(paths['json']))['selection']['rambo'][
            'lr'] == 0.2  # means 40.0, 62.5, 50.0
        return
    with pytest.raises(study.PreregistrationError) as err:
        _freeze(study, tmp_path, path, records)
    assert message in str(err.value)
    assert 'ce:' not in str(err.value) and 'one seed' not in str(err.value)


@pytest.mark.parametrize('lr, val, edge, add', [
    (0.4, 0.9, 'upper edge (largest lr)', 'add lr 0.8'),
    (0.1, 0.9, 'lower edge (smallest lr)', 'add lr 0.05'),
])
def test_a_best_at_a_grid_edge_is_refused(study, tmp_path, lr, val, edge,
                                         add):
    path, records = _setup(tmp_path, val={**VAL, ('rambo', lr): val})
    with pytest.raises(study.PreregistrationError) as err:
        _freeze(study, tmp_path, path, records)
    message = str(err.value)
    assert (f'rambo: its best val AP50 on seed 0 (90.0) is at lr {lr:g}, the '
            f'{edge} of its grid {{0.1, 0.2, 0.4}}: {add} to its grid') \
        in message
    assert 'ce:' not in message  # ce's best is inside its grid
    assert not (tmp_path / 'out').exists()


def test_a_diverged_step_beyond_the_edge_lets_the_freeze_pass(study,
                                                            tmp_path):
    edge = {('rambo', 0.4): 0.9}
    path, records = _setup(tmp_path, TWO, {**VAL, **edge},
                           more={1: {**VAL1, **edge}})
    # a run beyond the edge that trained is no reason: it is not diverged
    _record(records, 'rambo', 0.8, 0, 0.1)
    with pytest.raises(study.PreregistrationError, match='add lr 0.8'):
        _freeze(study, tmp_path, path, records)
    # the same run, recorded as diverged: the grid cannot go further
    _record(records, 'rambo', 0.8, 0, None,
            diverged='ValueError: scores contain 3 non-finite value(s)')
    paths = _freeze(study, tmp_path, path, records)
    record = json.load(open(paths['json']))
    assert record['selection']['rambo']['lr'] == 0.4


def test_a_diverged_grid_point_is_never_selected(study, tmp_path):
    """The step beyond the edge added to the grid: its diverged run counts
    as finished, below every other, so the best is inside the grid."""
    body = TWO.replace('[0.1, 0.2, 0.4]', '[0.1, 0.2, 0.4, 0.8]')
    edge = {('rambo', 0.4): 0.9}
    path, records = _setup(tmp_path, body, {**VAL, **edge},
                           more={1: {**VAL1, **edge}})
    spec = study.load_spec(path)
    results = study.collect_results(spec, str(tmp_path / 'work'), records)
    assert 'rambo' not in study.selected_lrs(spec, results)  # 0.8 not run
    _record(records, 'rambo', 0.8, 0, None, diverged='loss is nan')
    _record(records, 'rambo', 0.8, 1, 0.95)  # trained on one seed only
    results = study.collect_results(spec, str(tmp_path / 'work'), records)
    # 0.4 is the best; 0.8 diverged on seed 0: the stability rule
    # (rankloss_lab.study.selection) takes the neighbour below, 0.2
    assert study.selected_lrs(spec, results)['rambo'] == 0.2
    _freeze(study, tmp_path, path, records)
    md = open(study.write_report(spec, results,
                                 str(tmp_path / 'report'))['md']).read()
    assert ('- RaMBO (`rambo`): best lr 0.4, its next larger grid lr '
            'collapsed on a selection seed: the stability rule selects 0.2'
            in md)
    assert ('- RaMBO (`rambo`): mean over seeds 0, 1: lr 0.1: 42.0, lr 0.2: '
            '**63.0**, lr 0.4: 90.0, lr 0.8: diverged\n'
            '  seed 0: lr 0.1: 40.0, lr 0.2: 65.0, lr 0.4: 90.0, lr 0.8: '
            'diverged\n'
            '  seed 1: lr 0.1: 44.0, lr 0.2: 61.0, lr 0.4: 90.0, lr 0.8: '
            '95.0\n') in md
    assert 'learning rates selected on val with the mean over seeds 0, 1' \
        in md


def test_an_lr_from_another_study_is_refused(study, tmp_path):
    body = SPEC.replace(
        "lrs=[0.01, 0.02, 0.04], label='CE'",
        "lr=0.04, label='CE', selected_on=dict(study='older', seeds=[0])")
    path, records = _setup(tmp_path, body)
    with pytest.raises(study.PreregistrationError) as err:
        _freeze(study, tmp_path, path, records)
    assert ('ce: its lr 0.04 was selected in `older` with seed 0, not in '
            'this study: give it its own grid (lrs)') in str(err.value)
    # lr_from (another method's lr) is not a selection of its own either
    body = SPEC.replace("lrs=[0.01, 0.02, 0.04], label='CE'",
                        "lr_from='rambo', label='CE'")
    path, records = _setup(tmp_path, body)
    with pytest.raises(study.PreregistrationError,
                       match=r'ce: it takes the lr of `rambo` \(lr_from\)'):
        _freeze(study, tmp_path, path, records)


def test_grids_of_other_densities_are_refused(study, tmp_path):
    body = SPEC.replace('[0.1, 0.2, 0.4]', '[0.1, 0.15, 0.225]')
    val = {k: v for k, v in VAL.items() if k[0] == 'ce'}
    val.update({('rambo', 0.1): 0.4, ('rambo', 0.15): 0.65,
                ('rambo', 0.225): 0.3})
    path, records = _setup(tmp_path, body, val)
    with pytest.raises(study.PreregistrationError) as err:
        _freeze(study, tmp_path, path, records)
    assert ('rambo: its grid {0.1, 0.15, 0.225} steps by a factor 1.5, the '
            'grid of `ce` by 2: every declared method needs the same grid '
            'density') in str(err.value)
    body = SPEC.replace('[0.1, 0.2, 0.4]', '[0.1, 0.2, 0.5]')
    val = dict(VAL)
    val[('rambo', 0.5)] = val.pop(('rambo', 0.4))
    path, records = _setup(tmp_path, body, val)
    with pytest.raises(study.PreregistrationError,
                       match=r'rambo: its grid \{0.1, 0.2, 0.5\} has uneven '
                       r'steps \(ratios 2, 2.5\)'):
        _freeze(study, tmp_path, path, records)


def test_the_spec_must_say_fair_selection(study, tmp_path):
    path, records = _setup(tmp_path,
                           SPEC.replace('fair_selection = True\n', ''))
    with pytest.raises(study.PreregistrationError,
                       match='does not say fair_selection'):
        _freeze(study, tmp_path, path, records)
    # waived: a best at an edge and a borrowed lr freeze, and it is said
    body = SPEC.replace('fair_selection = True', 'fair_selection = False')
    path, records = _setup(tmp_path, body,
                           val={**VAL, ('rambo', 0.4): 0.9})
    paths = _freeze(study, tmp_path, path, records)
    assert '**Fair-baseline rules waived** (`fair_selection = False`)' in \
        open(paths['md']).read()
    assert json.load(open(paths['json']))['settings'][
        'fair_selection'] is False


@pytest.mark.parametrize('line, match', [
    ("fair_selection = 'yes'", 'fair_selection must be True or False'),
    ('reselect_seed = 11', 'reselect_seed must be an int that is neither'),
    ('reselect_seed = 0', 'reselect_seed must be an int that is neither'),
])
def test_bad_fairness_keys(study, tmp_path, line, match):
    path, _ = _setup(tmp_path, SPEC + line + '\n', {})
    with pytest.raises(ValueError, match=match):
        study.load_spec(path)


# rambo collapsed on seed 0 (best 0.4 % at 0.2); on seed 1 it trains at 0.1
COLLAPSED = {**VAL, ('rambo', 0.1): 0.002, ('rambo', 0.2): 0.004,
             ('rambo', 0.4): 0.0}
AGAIN = {('rambo', 0.1): 0.30, ('rambo', 0.2): 0.10, ('rambo', 0.4): 0.0}


def test_a_collapsed_method_is_reselected_on_the_mean(study, tmp_path,
                                                      monkeypatch):
    path, records = _setup(tmp_path, val=COLLAPSED)
    spec = study.load_spec(path)
    work = str(tmp_path / 'work')
    results = study.collect_results(spec, work, records)
    # no selection until the grid ran again with the re-selection seed (1)
    assert study.selected_lrs(spec, results) == {'ce': 0.02}
    assert study.reselect_plan(spec, ['ce', 'rambo'], results) == [
        ('rambo', 0.1, 1), ('rambo', 0.2, 1), ('rambo', 0.4, 1)]
    with pytest.raises(study.PreregistrationError) as err:
        _freeze(study, tmp_path, path, records)
    assert ('rambo: collapsed on seed 0: its best val AP50 is 0.4 at lr 0.2, '
            'below 1 %: run --phase select to re-select it (its grid again '
            'with seed 1') in str(err.value)
    for (method, lr), v in AGAIN.items():
        _record(records, method, lr, 1, v)
    results = study.collect_results(spec, work, records)
    # the mean over seeds 0 and 1: 15.1, 5.2, 0.0 -> 0.1 (seed 0 alone: 0.2)
    assert study.selected_lrs(spec, results) == {'ce': 0.02, 'rambo': 0.1}
    assert study.selection_seeds(spec, 'rambo', results) == [0, 1]
    assert study.selection_seeds(spec, 'ce', results) == [0]
    # a method that trained on seed 0 is not run again
    assert study.reselect_plan(spec, ['ce'], results) == []
    # 0.1 is now the best and the lower edge: the rules still hold
    with pytest.raises(study.PreregistrationError,
                       match=r'rambo: its best mean val AP50 over seeds 0, 1 '
                       r'\(15.1\) is at lr 0.1, the lower edge'):
        _freeze(study, tmp_path, path, records)
    body = SPEC.replace('[0.1, 0.2, 0.4]', '[0.05, 0.1, 0.2, 0.4]')
    open(path, 'w').write(body)
    for seed, v in ((0, 0.002), (1, 0.05)):
        _record(records, 'rambo', 0.05, seed, v)
    # rule 5: ce was selected on one seed; rambo, re-selected, on two
    with pytest.raises(study.PreregistrationError,
                       match=r'selected on one seed \(0\): `ce`\. '):
        _freeze(study, tmp_path, path, records)
    # a freeze written before rule 5: the re-selection is said
    monkeypatch.setattr(study, 'one_seed_problems', lambda spec, res: [])
    paths = _freeze(study, tmp_path, path, records)
    record = json.load(open(paths['json']))
    assert record['selection']['rambo']['seeds'] == [0, 1]
    assert 're-selected: on seed 0 its best, 0.4 at lr 0.2, had collapsed' \
        in record['selection']['rambo']['how']
    assert ('`rambo` collapsed on that seed and was re-selected on the mean '
            'over seeds 0 and 1') in open(paths['md']).read()
    spec = study.load_spec(path)
    md = open(study.write_report(
        spec, study.collect_results(spec, work, records),
        str(tmp_path / 'report'))['md']).read()
    assert ('  collapsed on seed 0 (best below 1 %), re-selected with seed 1: '
            'lr 0.05: 5.0, lr 0.1: 30.0, lr 0.2: 10.0, lr 0.4: 0.0; mean over '
            'seeds 0 and 1: lr 0.05: 2.6, lr 0.1: **15.1**, lr 0.2: 5.2, '
            'lr 0.4: 0.0') in md


def test_the_selection_phase_runs_the_reselection(study, tmp_path, capsys,
                                                  monkeypatch):
    """``--phase select`` of a fair study: the grids, then the collapsed
    method's grid with the re-selection seed; a dry run says so."""
    path, _ = _setup(tmp_path, val={})
    runs = []

    def execute_run(spec, method, lr, seed, evaluate_test, work_dir,
                    preregistration=None, records=None):
        runs.append((method, lr, seed))
        val = (COLLAPSED if seed == 0 else AGAIN)[(method, lr)]
        res = dict(study='fair', method=method, lr=lr, seed=seed,
                   val_ap50=val, val_curve=[val])
        _record(records, method, lr, seed, val)
        return res

    monkeypatch.setattr(study, 'execute_run', execute_run)
    monkeypatch.setattr(study, 'ensure_data', lambda spec: None)
    args = [path, '--work-dir', str(tmp_path / 'work'), '--out-dir',
            str(tmp_path / 'out')]
    study.main(args + ['--phase', 'select', '--dry-run'])
    out = capsys.readouterr().out
    assert '[study] fair select: 6 runs' in out
    assert ('[study] re-selection: a method whose best val AP50 on seed 0 is '
            'below 1 % runs its grid again with seed 1 (none so far)') in out
    assert not runs
    study.main(args + ['--phase', 'select'])
    assert runs == [(m, lr, 0) for m, lr in VAL] + [
        ('rambo', 0.1, 1), ('rambo', 0.2, 1), ('rambo', 0.4, 1)]
    runs.clear()
    study.main(args + ['--phase', 'select'])
    assert not runs  # everything is recorded: nothing runs again


def test_a_training_that_diverges_is_recorded(study, tmp_path, monkeypatch):
    path, _ = _setup(tmp_path, val={})
    spec = study.load_spec(path)
    work, records = str(tmp_path / 'work'), str(tmp_path / 'runs')
    calls = []

    def nan(cmd, log):
        calls.append(cmd)
        raise RuntimeError(
            f"command failed (1): {' '.join(cmd)}\nlog {log}:\n"
            '$ python tools/train.py x --cfg-options a=inf\n'
            'Traceback (most recent call last):\n'
            'ValueError: scores contain 12 non-finite value(s) (NaN or inf)'
            '; ranks of non-finite scores are undefined\n')

    monkeypatch.setattr(study, 'run_logged', nan)
    monkeypatch.setattr(study, 'read_scalars', lambda d, key=None: {1: 0.1})
    monkeypatch.setattr(study, 'last_train_record', lambda d: {})
    res = study.execute_run(spec, 'rambo', 0.4, 0, False, work,
                            records=records)
    assert res['diverged'].startswith('ValueError: scores contain 12 '
                                      'non-finite')
    assert res['val_ap50'] is None and res['val_curve'] == [0.1]
    assert json.load(open(study.record_path(records, spec, 'rambo', 0.4,
                                            0))) == res
    # recorded: not run again; a test run of it has nothing to test
    assert study.execute_run(spec, 'rambo', 0.4, 0, False, work,
                             records=records) == res
    with pytest.raises(RuntimeError, match='the training diverged'):
        study.execute_run(spec, 'rambo', 0.4, 0, True, work, records=records)
    assert len(calls) == 1

    # a failure for another reason is no result
    def crash(cmd, log):
        raise RuntimeError(f'command failed (1): x\nlog {log}:\n'
                           'RuntimeError: CUDA out of memory\n')

    monkeypatch.setattr(study, 'run_logged', crash)
    with pytest.raises(RuntimeError, match='out of memory'):
        study.execute_run(spec, 'rambo', 0.2, 0, False, work,
                          records=records)
    assert not osp.exists(study.record_path(records, spec, 'rambo', 0.2, 0))

    # trained to the end on a loss gone NaN: measured, and marked diverged
    monkeypatch.setattr(study, 'run_logged', lambda cmd, log: 5.0)
    monkeypatch.setattr(study, 'last_train_record',
                        lambda d: {'loss': float('nan'), 'loss_cls': 0.5})
    res = study.execute_run(spec, 'rambo', 0.1, 0, False, work)
    assert res['val_ap50'] == 0.1
    assert res['diverged'] == 'non-finite training loss (loss = nan)'


def _tested(method, lr, seed, test):
    return dict(study='fair', method=method, lr=lr, seed=seed, val_ap50=0.5,
                val_curve=[0.5], train_seconds=10.0, machine='test machine',
                test_ap50=test)


def test_bimodal_rows_say_how_many_seeds_trained(study, tmp_path):
    """Some seeds trained, some collapsed: the row says k of n beside its
    mean and its comparisons are flagged; all or none trained: as before."""
    path, _ = _setup(tmp_path, SPEC.replace('preregistered = True', ''), {})
    spec = study.load_spec(path)
    results = {}
    for (method, lr), v in VAL.items():
        results[(method, lr, 0)] = dict(_tested(method, lr, 0, None),
                                        val_ap50=v)
        del results[(method, lr, 0)]['test_ap50']
    ce = {10: 0.60, 11: 0.58, 12: 0.62}
    # 2 of 3 trained: a collapse is a run below a quarter of the larger
    # median (60 here), not below 1 point
    rambo = {10: 0.55, 11: 0.09, 12: 0.57}
    for seed in ce:
        results[('ce', 0.02, seed)] = _tested('ce', 0.02, seed, ce[seed])
        results[('rambo', 0.2, seed)] = _tested('rambo', 0.2, seed,
                                                rambo[seed])
    md = open(study.write_report(spec, results,
                                 str(tmp_path / 'out'))['md']).read()
    assert '| CE | 0.02 | 3 | 60.0 ± 2.0 | 60.0, 58.0, 62.0 | - |' in md
    assert ('| RaMBO | 0.2 | 3 | 40.3 ± 27.2 (2 of 3 seeds trained) | '
            '55.0, 9.0, 57.0 |') in md
    assert ('| RaMBO vs CE (bimodal: RaMBO: 2 of 3 seeds trained; exact '
            'signed-rank p 0.2500) | two-sided | 3 |') in md
    assert '**Bimodal** (marked above)' in md
    # none trained: a collapsed row, not a bimodal one
    for seed in rambo:
        results[('rambo', 0.2, seed)]['test_ap50'] = 0.001
    md = open(study.write_report(spec, results,
                                 str(tmp_path / 'out2'))['md']).read()
    assert '| RaMBO | 0.2 | 3 | 0.1 ± 0.0 | 0.1, 0.1, 0.1 |' in md
    assert 'trained' not in md and 'bimodal' not in md.lower()


def test_the_fixed_dense_study_is_fair_and_planned(study, capsys):
    """The new dense study: 8 methods on one factor-2 grid of 6 lrs (ATSS
    aLRP's widened by two steps below), each selected in the study with seed
    5 (re-selection seed 11), six hypotheses against each detector's focal;
    its dry run plans 50 selection runs and 40 test runs."""
    path = osp.join(ROOT, 'lab', 'rankloss_lab', 'studies',
                    'digitsvoc_dense_fixed_16e.py')
    spec = study.load_spec(path)
    assert spec['fair_selection'] is True and spec['preregistered']
    assert (spec['select_seed'], spec['reselect_seed']) == (5, 11)
    # one factor-2 grid, widened where a best sat at its edge
    common = [0.005, 0.01, 0.02, 0.04, 0.08, 0.16]
    for name, m in spec['methods'].items():
        assert study.grid_step(m['lrs']) == pytest.approx(2.0), name
        assert set(common) <= set(m['lrs']), name
    assert spec['methods']['atss_alrp']['lrs'] == [0.00125, 0.0025] + common
    assert len(spec['methods']) == 8
    assert [(h['method'], h['baseline'], h['alternative'])
            for h in spec['hypotheses']] == [
        (f'{d}_{m}', f'{d}_focal', 'two-sided') for d in ('atss', 'retina')
        for m in ('rank_sort', 'alrp', 'rambo_focal')]
    assert study.fairness_problems(spec, {}) == []
    study.main([path, '--dry-run', '--work-dir', '/nonexistent/work',
                '--out-dir', '/nonexistent/out'])
    out = capsys.readouterr().out
    assert '[study] digitsvoc_dense_fixed_16e select: 50 runs' in out
    assert '8 methods x 5 seeds = 40 runs' in out
