"""The FCOS dense study (experiments/studies/digitsvoc_dense_fcos_16e.py):
its methods are the shipped FCOS DigitsVOC configs on the lr grids of the
ATSS methods of the fixed dense study, the protocol is that study's, and
its dry run plans the runs without writing anything."""
import os.path as osp

import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
STUDIES = osp.join(ROOT, 'experiments', 'studies')


@pytest.fixture(scope='module')
def study():
    from experiments import study
    return study


def test_the_fcos_methods_follow_the_atss_ones(study):
    spec = study.load_spec(osp.join(STUDIES, 'digitsvoc_dense_fcos_16e.py'))
    atss = study.load_spec(osp.join(STUDIES, 'digitsvoc_dense_fixed_16e.py'))
    methods = spec['methods']
    assert sorted(methods) == ['fcos_focal', 'fcos_rambo_focal',
                               'fcos_rank_sort']
    for name, m in methods.items():
        twin = atss['methods'][name.replace('fcos_', 'atss_')]
        assert m['lrs'] == twin['lrs'], name
        assert m['config'] == twin['config'].replace('atss', 'fcos'), name
        assert m['options'] == [], name  # the configs as they ship
    for key in ('select_seed', 'seeds', 'reselect_seed', 'fair_selection',
                'preregistered', 'options'):
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
    assert '[study] digitsvoc_dense_fcos_16e select: 18 runs' in out
    assert '3 methods x 5 seeds = 15 runs' in out
