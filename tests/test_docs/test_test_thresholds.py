"""The test score thresholds the reports state (``rankloss_lab.thresholds``):
the recorded ones agree with the configs and study options wherever no
config has changed since, the reports and the results table say where a
comparison crossed thresholds, and the budget sentence matches the curves.
"""
import csv
import json
import os.path as osp

import pytest

from rankloss_lab import thresholds
from rankloss_lab.study.spec import load_spec

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
EVIDENCE = osp.join(ROOT, 'docs', 'evidence')


@pytest.mark.parametrize('study', ['digitsvoc_scratch_16e',
                                   'digitsvoc_dense_fixed_16e',
                                   'confirm_digitsvoc',
                                   'digitsvoc_rank_sort_frcnn_16e'])
def test_recorded_thresholds_follow_the_configs_and_options(study):
    spec = load_spec(osp.join(ROOT, 'lab', 'rankloss_lab', 'studies',
                              f'{study}.py'))
    recorded = thresholds.test_thresholds(study)
    assert set(recorded) == set(spec['methods'])
    for method in spec['methods']:
        now = thresholds.resolve(spec, method)
        if thresholds.config_change(spec['methods'][method]['config']) \
                and not any(
                'score_thr' in o for o in spec['options']):
            # tested before the mix configs took CE's threshold
            assert (recorded[method], now) == (0.0, 0.05)
        else:
            assert recorded[method] == now, method


def test_the_dense_study_tested_every_method_at_one_threshold():
    thr = thresholds.test_thresholds('digitsvoc_dense_fixed_16e')
    assert set(thr.values()) == {0.0}


def test_thresholds_text_names_each_side_where_they_differ():
    text = thresholds.thresholds_text('digitsvoc_scratch_16e', 'rambo_bce',
                                      'ce', labels=dict(ce='CE'))
    assert text == 'tested at score_thr 0 (rambo_bce) and 0.05 (CE)'
    assert thresholds.thresholds_text('digitsvoc_dense_fixed_16e',
                                      'retina_rank_sort', 'retina_focal') \
        == 'tested at score_thr 0'
    assert thresholds.thresholds_text('digit_instances_losses', 'rambo',
                                      'fastap') == ''


def test_a_report_says_which_comparisons_crossed_thresholds():
    with open(osp.join(EVIDENCE, 'digitsvoc_pretrained_12e.md'),
              encoding='utf-8') as f:
        report = f.read()
    assert '`rambo_bce` vs `ce` (0 vs 0.05)' in report
    assert 'cannot be re-scored at one threshold' in report
    with open(osp.join(EVIDENCE, 'digitsvoc_dense_fixed_16e.md'),
              encoding='utf-8') as f:
        assert 'Compared across thresholds' not in f.read()


def test_budget_gains_are_the_mean_gain_over_the_last_epochs():
    study = 'digitsvoc_dense_fixed_16e'
    with open(osp.join(EVIDENCE, f'{study}.csv'), newline='',
              encoding='utf-8') as f:
        rows = [r for r in csv.DictReader(f) if r['method'] == 'retina_focal'
                and r['selected_lr'] == 'True' and r['test_ap50']]
    last = 16
    gains = [float(r[f'val_ap50_epoch{last}']) -
             float(r[f'val_ap50_epoch{last - thresholds.LAST_EPOCHS}'])
             for r in rows]
    assert len(gains) == 5
    assert thresholds.budget_gains(study)['retina_focal'] == pytest.approx(
        sum(gains) / len(gains))
    assert 'still learning at the end' in thresholds.budget_text(study)


def test_budget_of_test_runs_without_curves_is_the_selection_runs(tmp_path):
    """Test runs that validated after their last epoch alone (one column
    filled): the budget comes from the selection runs at the selected lr,
    and the sentence says so; a run at another lr counts nowhere."""
    head = ['study', 'method', 'lr', 'seed', 'selected_lr', 'test_ap50'] + [
        f'val_ap50_epoch{e}' for e in range(1, 6)]
    rows = [['s', 'ce', '0.04', '5', 'True', '', 0.1, 0.2, 0.3, 0.35, 0.4],
            ['s', 'ce', '0.04', '11', 'True', '', 0.1, 0.2, 0.3, 0.3, 0.3],
            ['s', 'ce', '0.08', '5', 'False', '', 0.1, 0.9, 0.1, 0.1, 0.1],
            ['s', 'ce', '0.04', '6', 'True', '0.5', '', '', '', '', 0.5]]
    with open(tmp_path / 's.csv', 'w', newline='', encoding='utf-8') as f:
        csv.writer(f).writerows([head] + rows)
    gains, whose = thresholds.budget_runs('s', str(tmp_path))
    # seed 5: 0.4 - 0.2; seed 11: 0.3 - 0.2
    assert whose == 'selection seeds'
    assert gains == {'ce': pytest.approx(0.15)}
    text = thresholds.budget_text('s', str(tmp_path))
    assert '(selection seeds, selected lr): `ce` +15.0 points' in text
    # test runs with whole curves come first
    rows[-1][-5:] = [0.1, 0.1, 0.1, 0.1, 0.2]
    with open(tmp_path / 's.csv', 'w', newline='', encoding='utf-8') as f:
        csv.writer(f).writerows([head] + rows)
    assert thresholds.budget_runs('s', str(tmp_path)) == (
        {'ce': pytest.approx(0.1)}, 'test seeds')
    # test runs on a schedule of their own, validated at the end only: the
    # selection's curves say nothing of their budget
    rows[-1][-5:] = ['', '', '', '', 0.5]
    with open(tmp_path / 's.csv', 'w', newline='', encoding='utf-8') as f:
        csv.writer(f).writerows([head] + rows)
    options = ['train_cfg.max_epochs=36', 'train_cfg.val_interval=36']
    (tmp_path / 's_preregistration.json').write_text(json.dumps(
        dict(settings=dict(test_phase_options=options))))
    assert thresholds.test_schedule('s', str(tmp_path)) == options[:1]
    assert thresholds.budget_runs('s', str(tmp_path)) == ({}, 'test seeds')
    text = thresholds.budget_text('s', str(tmp_path))
    assert '(`train_cfg.max_epochs=36`)' in text
    assert 'still learning' not in text
    # val_interval alone keeps the selection's schedule
    (tmp_path / 's_preregistration.json').write_text(json.dumps(
        dict(settings=dict(test_phase_options=options[1:]))))
    assert thresholds.budget_runs('s', str(tmp_path))[1] == 'selection seeds'


@pytest.mark.slow  # reads every study's records (about 15 s)
def test_the_writer_reproduces_the_committed_thresholds():
    # selection-only studies (the budget phases) were never tested
    import json
    with open(thresholds.PATH, encoding='utf-8') as f:
        committed = json.load(f)
    collected = thresholds.collect()
    assert 'digitsvoc_dense_budget' not in collected
    assert collected == committed
