"""The study-curves plot reads a study's finished runs: the lr selected on
val, every seed trained at it, val AP50 per epoch from ``result.json`` and
the training loss averaged per epoch from MMEngine's logs (a resumed run's
later log wins)."""
import json
import os
import os.path as osp

import numpy as np
import pytest

CE = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'
RAMBO = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_rambo_16e_digitsvoc.py'
SPEC = f"""
seeds = [0, 1]
select_seed = 0  # as the DigitsVOC studies: seed 0 selects the lr
baseline = 'ce'
methods = dict(
    ce=dict(config='{CE}', lrs=[0.01, 0.02]),
    rambo=dict(config='{RAMBO}', lrs=[0.1], label='RaMBO'))
"""


@pytest.fixture
def tool(load_tool):
    return load_tool('tools/analysis_tools/plot_study_curves.py')


def _run(work, method, lr, seed, val_curve, logs):
    d = work / 'mini' / method / f'lr{lr:g}_seed{seed}'
    for i, (stamp, records) in enumerate(logs):
        v = d / stamp / 'vis_data'
        v.mkdir(parents=True)
        path = v / f'{stamp}.json'
        path.write_text(''.join(json.dumps(r) + '\n' for r in records))
        os.utime(path, (1000 + i, 1000 + i))  # later log = newer
    (d / 'result.json').write_text(json.dumps(dict(
        study='mini', method=method, lr=lr, seed=seed,
        val_ap50=val_curve[-1], val_curve=val_curve)))


def test_curves_from_selected_runs(tool, tmp_path):
    spec = tmp_path / 'mini.py'
    spec.write_text(SPEC)
    work = tmp_path / 'studies'
    it = lambda i, e, loss: dict(iter=i, epoch=e, loss=loss)  # noqa: E731
    # ce: lr 0.02 wins on val (seed 0); lr 0.01 must not be drawn
    _run(work, 'ce', 0.01, 0, [0.1, 0.2], [('a', [it(1, 1, 9.0)])])
    _run(work, 'ce', 0.02, 0, [0.2, 0.4],
         [('a', [it(1, 1, 2.0), it(2, 1, 4.0), it(3, 2, 5.0)]),
          ('b', [it(3, 2, 1.0), it(4, 2, 3.0)])])  # resumed: iter 3 redone
    _run(work, 'ce', 0.02, 1, [0.3, 0.5],
         [('a', [it(1, 1, 1.0), it(2, 2, 1.0)])])
    _run(work, 'rambo', 0.1, 0, [0.0, 0.1],
         [('a', [it(1, 1, 0.9), it(2, 2, 0.8)])])
    curves = tool.collect_curves(str(spec), str(work))
    ce = curves['ce']
    assert ce['lr'] == 0.02 and ce['seeds'] == [0, 1]
    assert np.allclose(ce['ap50'], [[20, 40], [30, 50]])
    assert np.allclose(ce['loss'], [[3.0, 2.0], [1.0, 1.0]])
    assert np.allclose(curves['rambo']['loss'], [[0.9, 0.8]])
    drawn = []
    save = tool.save_figure
    tool.save_figure = lambda fig, path: drawn.append(fig) or save(fig, path)
    try:
        out = tool.main([str(spec), str(tmp_path / 'c.png'), '--work-dir',
                         str(work), '--methods', 'ce', 'rambo'])
    finally:
        tool.save_figure = save
    assert out == str(tmp_path / 'c.png') and osp.isfile(out)
    # the lines drawn are the seed means: AP50 left, epoch losses right
    ax_ap, ax_loss = drawn[0].axes
    assert [list(line.get_ydata()) for line in ax_ap.lines] == [[25, 45],
                                                              [0, 10]]
    assert [list(line.get_ydata()) for line in ax_loss.lines] == [
        [2.0, 1.5], [0.9, 0.8]]
    assert ax_ap.get_legend().get_texts()[0].get_text() == \
        'ce (lr 0.02, 2 seeds)'
    with pytest.raises(SystemExit, match='unknown methods'):
        tool.collect_curves(str(spec), str(work), ['nope'])
    with pytest.raises(SystemExit, match='no learning rate selected'):
        tool.collect_curves(str(spec), str(tmp_path / 'empty'))
