"""lab/rankloss_lab/analysis/budget.py, the rule that picks the confirmation's
budget from focal's val curves, against hand computations and a brute
force; the budget study's spec (selection only, the 16-epoch lrs, a long
schedule at constant lr). No training."""
import argparse
import csv
import glob
import os
import os.path as osp
import random

import numpy as np
import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
SPEC = osp.join(ROOT, 'lab', 'rankloss_lab', 'studies', 'digitsvoc_dense_budget.py')


@pytest.fixture(scope='module')
def budget():
    from rankloss_lab.analysis import budget
    return budget


# val AP50 rising 2 points per epoch to 40 % at epoch 20, flat after
RAMP = [min(0.02 * e, 0.40) for e in range(1, 41)]


def test_smoothed_by_hand(budget):
    s = budget.smoothed([0.0, 0.3, 0.6, 0.3, 0.0])
    # epochs 3, 4, 5: (0 + .3 + .6) / 3, (.3 + .6 + .3) / 3, (.6 + .3) / 3
    assert s == pytest.approx([0.3, 0.4, 0.3])
    assert budget.mean_curve([[0.1, 0.2], [0.3, 0.6]]) == pytest.approx(
        [0.2, 0.4])
    with pytest.raises(ValueError, match='one length'):
        budget.mean_curve([[0.1, 0.2], [0.3]])


def test_the_flattening_epoch_by_hand(budget):
    # smoothed: 0.02 (e - 1) up to epoch 20 (0.38), (0.38 + 0.4 + 0.4) / 3 =
    # 0.3933 at 21, 0.40 after. Gains over the next 8 epochs: epoch 20:
    # 0.40 - 0.38 = 2 points; epoch 21: 0.67 point < 1: E = 21
    assert budget.flattening_epoch(RAMP) == 21
    # E = 21 -> 24 epochs (a multiple of 4), lr / 10 after 18
    sch = budget.confirmation_schedule([21, 13])
    assert sch == dict(max_epochs=24, milestone=18)
    assert budget.confirmation_schedule([16]) == dict(max_epochs=16,
                                                      milestone=12)
    assert budget.schedule_options(sch) == [
        'train_cfg.max_epochs=24', 'param_scheduler.1.end=24',
        'param_scheduler.1.milestones=[18]']


def test_a_curve_that_has_not_flattened_decides_nothing(budget):
    rising = [0.01 * e for e in range(1, 49)]
    assert budget.flattening_epoch(rising) is None
    assert budget.confirmation_schedule([21, None]) is None
    # flat only in its last 8 epochs: no epoch has 8 epochs after it
    late = [min(0.02 * e, 0.80) for e in range(1, 49)]  # flat from 40
    assert budget.flattening_epoch(late) is None
    assert budget.flattening_epoch(late + [0.80]) == 41


def test_a_curve_still_at_zero_has_not_begun(budget):
    # zero for 10 epochs (as RetinaNet focal from scratch), then the ramp
    curve = [0.0] * 10 + RAMP
    assert budget.flattening_epoch(curve) == 31
    assert budget.flattening_epoch([0.0] * 40) is None


def test_a_later_rise_within_the_look_ahead_counts(budget):
    # a plateau at 20 % for epochs 10-18, then 3.5 points more from 19
    curve = [0.02 * e for e in range(1, 11)] + [0.20] * 8 + [0.235] * 20
    # smoothed: 0.18 at epoch 10, 0.1933 at 11, 0.20 at 12-18, 0.2117 at
    # 19, 0.2233 at 20, 0.235 from 21. The gain over the next 8 epochs
    # (their largest minus now): 2.0 points at 10, 1.83 at 11, 2.33 at 12,
    # 3.5 at 13-18 (the rise lies within the look-ahead), 2.33 at 19, 1.17
    # at 20, 0 at 21: E = 21, not the plateau
    assert budget.flattening_epoch(curve) == 21
    # with a least gain of 2 points: 1.83 at epoch 11
    assert budget.flattening_epoch(curve, min_gain=0.02) == 11


def _brute_force(curve, window=3, horizon=8, gain=0.01, floor=0.01):
    s = np.convolve(curve, np.ones(window) / window, mode='valid')
    for i in range(len(s)):
        ahead = s[i + 1:i + 1 + horizon]
        if len(ahead) == horizon and s[i] >= floor and \
                ahead.max() - s[i] < gain:
            return i + window
    return None


def test_against_a_brute_force(budget):
    rng = random.Random(0)
    for _ in range(300):
        top, rate = rng.uniform(0.05, 0.6), rng.uniform(0.005, 0.05)
        curve = [min(top, rate * e) + rng.gauss(0, 0.008)
                 for e in range(1, rng.randint(10, 50))]
        assert budget.flattening_epoch(curve) == _brute_force(curve)


def test_the_16_epoch_focal_curves_had_not_flattened(budget):
    """The reviewer's reading of `digitsvoc_dense_fixed_16e`: both focal
    curves, mean over the five test seeds, still rise at epoch 16."""
    with open(osp.join(ROOT, 'docs', 'evidence',
                       'digitsvoc_dense_fixed_16e.csv')) as f:
        rows = [r for r in csv.DictReader(f) if r['selected_lr'] == 'True'
                and r['test_ap50']]
    for method in ('retina_focal', 'atss_focal'):
        curves = [[float(r[f'val_ap50_epoch{e}']) for e in range(1, 17)]
                  for r in rows if r['method'] == method]
        assert len(curves) == 5
        assert budget.flattening_epoch(budget.mean_curve(curves)) is None


def _run(method, lr, seed, curve):
    return dict(study='digitsvoc_dense_budget', method=method, lr=lr,
                seed=seed, val_ap50=curve[-1], val_curve=curve)


def test_the_budget_of_a_study(budget):
    from rankloss_lab import study
    spec = study.load_spec(SPEC)
    late = [0.0] * 10 + RAMP[:38]  # flattens at 31
    results = {('retina_focal', 0.04, 5): _run('retina_focal', 0.04, 5,
                                               [v + 0.01 for v in late]),
               ('retina_focal', 0.04, 11): _run('retina_focal', 0.04, 11,
                                                [v - 0.01 for v in late]),
               ('atss_focal', 0.02, 5): _run('atss_focal', 0.02, 5,
                                             RAMP + RAMP[-8:])}
    with pytest.raises(ValueError, match='atss_focal has no finished run'):
        budget.study_budget(spec, results)
    results[('atss_focal', 0.02, 11)] = _run('atss_focal', 0.02, 11,
                                             RAMP + RAMP[-8:])
    out = budget.study_budget(spec, results)
    assert out['methods']['retina_focal']['epoch'] == 31
    assert out['methods']['atss_focal']['epoch'] == 21
    assert out['schedule'] == dict(max_epochs=32, milestone=24)
    md = budget.budget_markdown(spec, out)
    assert '- RetinaNet, focal loss (`retina_focal`, lr 0.04): flattens at ' \
        'epoch 31' in md
    assert ('Budget: 32 epochs, lr / 10 after 24: `train_cfg.max_epochs=32` '
            '`param_scheduler.1.end=32` `param_scheduler.1.milestones=[24]`'
            ) in md
    assert '| 3 | 0.0 | 0.0 | 6.0 | 4.0 |' in md


def test_a_val_not_logged_is_interpolated_and_named(budget):
    """A run stopped during a val and resumed after it has a gap in its
    curve: the rule reads it as the line between its neighbours, and the
    decision says so."""
    from rankloss_lab import study
    spec = study.load_spec(SPEC)
    curve = RAMP[:36]
    results = {}
    for method, lr in (('retina_focal', 0.04), ('atss_focal', 0.02)):
        for seed in (5, 11):
            results[(method, lr, seed)] = _run(method, lr, seed, curve)
    gap = dict(results[('atss_focal', 0.02, 11)])
    gap['val_epochs'] = [e for e in range(1, 37) if e not in (11, 12)]
    gap['val_curve'] = [curve[e - 1] for e in gap['val_epochs']]
    gap['val_curve'][9] = 0.0  # epoch 10; 11 and 12 on the line to 13
    results[('atss_focal', 0.02, 11)] = gap
    filled, epochs = budget.gaps_filled(gap)
    assert epochs == [11, 12] and len(filled) == 36
    assert filled[9:13] == pytest.approx([0.0, 0.26 / 3, 0.52 / 3, 0.26])
    out = budget.study_budget(spec, results)
    assert out['methods']['atss_focal']['filled'] == {11: [11, 12]}
    assert out['methods']['retina_focal']['filled'] == {}
    assert ("seed 11's val at epoch 11, 12 not logged"
            in budget.budget_markdown(spec, out))
    with pytest.raises(ValueError, match='no val at epoch 1'):
        budget.gaps_filled(dict(gap, val_epochs=gap['val_epochs'][1:],
                                val_curve=gap['val_curve'][1:]))


def test_the_budget_study_spec():
    """Selection only, seeds 5 and 11, focal at the lrs the 16-epoch study
    selected (read from its report), 48 epochs at constant lr."""
    from mmengine.config import Config, DictAction

    from rankloss_lab import study
    spec = study.load_spec(SPEC)
    assert spec['select_only'] and spec['seeds'] == []
    assert spec['select_seeds'] == [5, 11]
    with open(osp.join(ROOT, 'docs', 'evidence',
                       'digitsvoc_dense_fixed_16e.csv')) as f:
        selected = {r['method']: float(r['lr']) for r in csv.DictReader(f)
                    if r['selected_lr'] == 'True'}
    assert {n: m['lrs'] for n, m in spec['methods'].items()} == {
        n: [selected[n]] for n in ('retina_focal', 'atss_focal')}
    parser = argparse.ArgumentParser()  # as tools/train.py reads them
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    for m in spec['methods'].values():
        cfg = Config.fromfile(osp.join(ROOT, m['config']))
        cfg.merge_from_dict(parser.parse_args(
            ['--cfg-options'] + spec['options'] + m['options']).cfg_options)
        assert cfg.train_cfg.max_epochs == 48
        warmup, steps = cfg.param_scheduler
        assert warmup.type == 'LinearLR' and steps.type == 'MultiStepLR'
        assert steps.end == 48 and steps.gamma == 1.0  # no drop
        assert cfg.model.test_cfg.score_thr == 0.0


def test_the_command_reads_the_records(budget, tmp_path, capsys):
    """``python -m rankloss_lab.analysis.budget STUDY.py``, on records."""
    from rankloss_lab import study
    spec = study.load_spec(SPEC)
    records = str(tmp_path / 'runs')
    for method, lr in (('retina_focal', 0.04), ('atss_focal', 0.02)):
        for seed in (5, 11):
            path = study.record_path(records, spec, method, lr, seed)
            os.makedirs(osp.dirname(path), exist_ok=True)
            study.write_json(path, _run(method, lr, seed, RAMP))
    out = str(tmp_path / 'budget.md')
    result = budget.main([SPEC, '--records-dir', records, '--work-dir',
                          str(tmp_path / 'work'), '--out', out])
    assert result['schedule'] == dict(max_epochs=24, milestone=18)
    printed = capsys.readouterr().out
    assert 'Budget: 24 epochs, lr / 10 after 18' in printed
    assert open(out).read() == printed


CONFIRM = osp.join(ROOT, 'lab', 'rankloss_lab', 'studies', 'confirm_dense_long.py')


def _other_specs():
    from rankloss_lab import study
    for path in sorted(glob.glob(osp.join(ROOT, 'lab', 'rankloss_lab', 'studies',
                                          '*.py'))):
        if path not in (CONFIRM, SPEC):
            yield study.load_spec(path)


def test_the_long_confirmation_spec():
    """Two hypotheses, two-sided; every lr selected here on the mean of
    seeds 5 and 11 on a factor-2 grid of four points around the 16-epoch
    best (widened upwards where selection reached its edge); test seeds and a fresh split no other study used."""
    from rankloss_lab import study
    spec = study.load_spec(CONFIRM)
    assert spec['fair_selection'] is True and spec['preregistered']
    assert spec['select_seeds'] == [5, 11]
    assert [(h['method'], h['baseline'], h['alternative'])
            for h in spec['hypotheses']] == [
        ('retina_rank_sort', 'retina_focal', 'two-sided'),
        ('atss_rambo_focal', 'atss_focal', 'two-sided')]
    with open(osp.join(ROOT, 'docs', 'evidence',
                       'digitsvoc_dense_fixed_16e.csv')) as f:
        best16 = {r['method']: float(r['lr']) for r in csv.DictReader(f)
                  if r['selected_lr'] == 'True'}
    for name, m in spec['methods'].items():
        assert m['lrs'][:4] == pytest.approx(
            [best16[name] / 4, best16[name] / 2, best16[name],
             2 * best16[name]]), name
        # a grid widened during selection goes on by factors of 2
        for lower, upper in zip(m['lrs'][3:], m['lrs'][4:]):
            assert upper == pytest.approx(2 * lower), name
    widened = {n for n, m in spec['methods'].items() if len(m['lrs']) > 4}
    assert widened == {'retina_focal', 'atss_rambo_focal'}
    assert study.fairness_problems(spec, {}, new=True) == []  # none run
    # seeds and split: fresh
    others = list(_other_specs())
    used = set()
    for other in others:
        used |= set(other['seeds']) | set(other['select_seeds'])
        if other.get('reselect_seed') is not None:
            used.add(other['reselect_seed'])
    assert not set(spec['seeds']) & used
    make = spec['data']['make_test']
    name, seed = (make[make.index(k) + 1] for k in ('--fresh-test',
                                                    '--fresh-test-seed'))
    assert name == spec['test_split'] == 'confirm_long'
    for other in others:
        theirs = (other.get('data') or {}).get('make_test', [])
        assert other['test_split'] != name
        if '--fresh-test-seed' in theirs:
            assert theirs[theirs.index('--fresh-test-seed') + 1] != seed


def test_the_budget_is_one_value_at_the_top(tmp_path):
    """The budget the budget phase decided (56 epochs: RetinaNet focal
    flattened at epoch 56, ATSS focal at 37) is one value at the top; it is
    the schedule of every run."""
    from mmengine.config import Config, DictAction

    from rankloss_lab import study
    text = open(CONFIRM).read()
    assert text.count('_epochs = 56') == 1
    spec = study.load_spec(CONFIRM)
    assert spec['options'][1:] == budget_options(56)
    assert '56 epochs (lr / 10 after 42' in spec['description']
    from rankloss_lab.analysis.budget import confirmation_schedule
    assert confirmation_schedule([56, 37]) == dict(max_epochs=56,
                                                   milestone=42)
    path = tmp_path / 'confirm_dense_long.py'
    path.write_text(text.replace('_epochs = 56', '_epochs = 32'))
    spec = study.load_spec(str(path))
    assert spec['options'][1:] == budget_options(32)
    assert '32 epochs (lr / 10 after 24' in spec['description']
    parser = argparse.ArgumentParser()
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    m = spec['methods']['atss_rambo_focal']
    cfg = Config.fromfile(osp.join(ROOT, m['config']))
    cfg.merge_from_dict(parser.parse_args(
        ['--cfg-options'] + spec['options'] + m['options']).cfg_options)
    assert cfg.train_cfg.max_epochs == 32
    assert cfg.param_scheduler[1].milestones == [24]
    assert cfg.param_scheduler[1].end == 32
    assert cfg.param_scheduler[1].gamma == 0.1


def budget_options(epochs):
    """The options rankloss_lab.analysis.budget prints for a budget."""
    from rankloss_lab.analysis import budget
    return budget.schedule_options(budget.confirmation_schedule([epochs]))
