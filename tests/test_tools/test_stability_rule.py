"""The stability rule of the lr selection (``rankloss_lab.study.
selection``): where the next larger grid lr collapsed on any selection
seed, the more conservative neighbour is selected, unless it collapsed too;
studies selected before the rule keep their selections, and the rule, run
on their recorded grids, moves the lrs their configs were moved to."""
import math
import os.path as osp

import pytest

from rankloss_lab import study
from rankloss_lab.results import frozen_settings
from rankloss_lab.study import selection

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def _recorded(name):
    """A shipped study's spec and its committed run records."""
    spec = study.load_spec(osp.join(ROOT, 'lab', 'rankloss_lab', 'studies',
                                    f'{name}.py'))
    return spec, study.collect_results(
        spec, osp.join(ROOT, 'work_dirs', 'no_such_dir'),
        osp.join(ROOT, 'docs', 'evidence', 'runs'))


def test_the_neighbour_below_replaces_an_lr_next_to_a_collapse():
    grid = {0.02: 0.30, 0.04: 0.32, 0.08: 0.33}
    # the next larger lr collapsed on one seed of two: 0.04 -> 0.02
    assert selection.stable_lr(0.04, [
        {**grid, 0.08: 0.005}, grid]) == 0.02
    # a diverged run (-inf) collapsed too
    assert selection.stable_lr(0.04, [{**grid, 0.08: -math.inf}]) == 0.02
    # a quarter of the selected lr's median is the floor, not 1 point
    assert selection.stable_lr(0.04, [{**grid, 0.08: 0.07}]) == 0.02
    assert selection.stable_lr(0.04, [{**grid, 0.08: 0.09}]) == 0.04
    # no collapse beside it, the top of the grid, the bottom of the grid
    assert selection.stable_lr(0.04, [grid]) == 0.04
    assert selection.stable_lr(0.08, [grid]) == 0.08
    assert selection.stable_lr(0.02, [{**grid, 0.04: 0.0}]) == 0.02
    # both neighbours collapsed: no stable lr is known, the best stays
    assert selection.stable_lr(0.04, [{0.02: 0.0, 0.04: 0.3,
                                       0.08: 0.0}]) == 0.04


def test_the_rule_applies_to_every_study_selected_after_it():
    grid = {0.02: 0.30, 0.04: 0.32, 0.08: 0.001}
    spec = dict(name='a_new_study', select_seed=5, select_seeds=[5, 11],
                methods=dict(m=dict(lrs=list(grid))))
    results = {('m', lr, s): dict(val_ap50=v) for lr, v in grid.items()
               for s in (5, 11)}
    sel = selection.grid_selection(spec, results, 'm')
    assert (sel['lr'], sel['unstable_lr']) == (0.02, 0.04)
    # the frozen 'how' of the lr says so
    assert selection.selection_note(spec, 'm', results).endswith(
        '; the stability rule took it over the best, lr 0.04, whose next '
        'larger grid lr collapsed on a selection seed')
    spec['name'] = 'digitsvoc_dense_fixed_16e'  # selected before the rule
    assert selection.grid_selection(spec, results, 'm')['lr'] == 0.04


@pytest.mark.parametrize('name,method,before,after', [
    ('confirm_dense_long', 'retina_focal', 0.08, 0.04),
    ('digitsvoc_dense_fixed_16e', 'retina_rank_sort', 0.08, 0.04),
    ('digitsvoc_dense_fixed_16e', 'retina_rambo_focal', 0.08, 0.08),
])
def test_the_rule_on_the_recorded_grids(name, method, before, after):
    """The shipped RetinaNet lrs: the rule moves Rank & Sort's 16-epoch and
    focal's 56-epoch lr to 0.04 (the configs ship it), and keeps the logits
    mix's, whose neighbours both collapsed (its config warns)."""
    spec, results = _recorded(name)
    assert name in selection.BEFORE_THE_RULE
    assert study.selected_lrs(spec, results)[method] == before
    assert study.selected_lrs(dict(spec, name='after_the_rule'),
                              results)[method] == after


def test_every_shipped_lr_of_the_one_seed_study_follows_the_rule():
    """The 16-epoch ATSS and RetinaNet configs carry lrs one seed (5)
    selected: each ships the lr the stability rule gives on that study's
    recorded grids, and says so."""
    from mmengine.config import Config
    spec, results = _recorded('digitsvoc_dense_fixed_16e')
    assert spec['select_seeds'] == [5]
    stable = study.selected_lrs(dict(spec, name='after_the_rule'), results)
    for method, m in spec['methods'].items():
        path = osp.join(ROOT, m['config'])
        assert Config.fromfile(path).optim_wrapper.optimizer.lr == \
            stable[method], (method, m['config'])
        with open(path, encoding='utf-8') as f:
            assert 'stability rule' in ' '.join(f.read().split()), path


def test_the_digitsvoc_dino_configs_ship_their_selected_lrs():
    """Each DigitsVOC DINO config carries the lr `digitsvoc_dino_long`
    selected on val (RaMBO + focal's moved by the rule from 0.0008) and
    froze before its test runs."""
    from mmengine.config import Config
    spec, results = _recorded('digitsvoc_dino_long')
    chosen = study.selected_lrs(spec, results)
    assert chosen == dict(focal=0.0004, quality_focal=0.0004,
                          rank_sort=0.0008, rambo_focal=0.0004)
    assert selection.grid_selection(
        spec, results, 'rambo_focal')['unstable_lr'] == 0.0008
    frozen = frozen_settings('digitsvoc_dino_long',
                             osp.join(ROOT, 'docs', 'evidence'))['methods']
    for method, m in spec['methods'].items():
        lr = Config.fromfile(osp.join(ROOT, m['config'])).optim_wrapper\
            .optimizer.lr
        assert lr == chosen[method] == frozen[method]['lr'], method
