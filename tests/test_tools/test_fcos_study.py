"""The FCOS dense study (lab/rankloss_lab/studies/digitsvoc_dense_fcos_16e.py):
its methods are the shipped FCOS DigitsVOC configs, each on a factor-2
grid of four points around the lr its ATSS twin was selected at in the
fixed dense study, selected on two seeds; the rest of the protocol is that
study's, and its dry run plans the runs without writing anything."""
import os.path as osp

import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
STUDIES = osp.join(ROOT, 'lab', 'rankloss_lab', 'studies')


@pytest.fixture(scope='module')
def study():
    from rankloss_lab import study
    return study


def test_the_fcos_methods_follow_the_atss_ones(study):
    spec = study.load_spec(osp.join(STUDIES, 'digitsvoc_dense_fcos_16e.py'))
    atss = study.load_spec(osp.join(STUDIES, 'digitsvoc_dense_fixed_16e.py'))
    # the lrs the ATSS twins were selected at, from the fixed study's records
    chosen = study.selected_lrs(atss, study.collect_results(
        atss, '/nonexistent/work', osp.join(ROOT, 'docs', 'evidence',
                                            'runs')))
    methods = spec['methods']
    assert sorted(methods) == ['fcos_focal', 'fcos_rambo_focal',
                               'fcos_rank_sort']
    for name, m in methods.items():
        twin_name = name.replace('fcos_', 'atss_')
        twin = atss['methods'][twin_name]
        lr = chosen[twin_name]
        # factor 2, two steps below the twin's lr and one above; the mix's
        # grid grown by the steps beyond its edge best (fairness rule 3)
        grown = [4 * lr, 8 * lr] if name == 'fcos_rambo_focal' else []
        assert m['lrs'] == pytest.approx(
            [lr / 4, lr / 2, lr, 2 * lr] + grown), name
        assert m['config'] == twin['config'].replace('atss', 'fcos'), name
        assert m['options'] == [], name  # the configs as they ship
    assert spec['select_seeds'] == [5, 11] and spec['select_seed'] == 5
    assert spec['reselect_seed'] is None  # a mean over two seeds already
    for key in ('seeds', 'fair_selection', 'preregistered', 'options'):
        assert spec[key] == atss[key], key
    assert spec['baseline'] == 'fcos_focal'
    assert [(h['method'], h['alternative']) for h in spec['hypotheses']] == [
        ('fcos_rank_sort', 'two-sided'), ('fcos_rambo_focal', 'two-sided')]
    assert study.fairness_problems(spec, {}) == []


def test_dry_run_plans_the_study(study, capsys):
    study.main([osp.join(STUDIES, 'digitsvoc_dense_fcos_16e.py'),
                '--dry-run', '--work-dir', '/nonexistent/work', '--out-dir',
                '/nonexistent/out'])
    out = capsys.readouterr().out
    # (4 + 4 + 6 lrs) x 2 selection seeds
    assert '[study] digitsvoc_dense_fcos_16e select: 28 runs' in out
    assert '3 methods x 5 seeds = 15 runs' in out
