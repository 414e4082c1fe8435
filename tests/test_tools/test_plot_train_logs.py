"""The training-log plot reads MMEngine's JSON logs (a resumed run's later
log wins) and draws one panel per key."""
import json
import os.path as osp

import pytest


@pytest.fixture
def tool(load_tool):
    return load_tool('tools/analysis_tools/plot_train_logs.py')


def _log(run, stamp, records):
    d = run / stamp / 'vis_data'
    d.mkdir(parents=True)
    (d / f'{stamp}.json').write_text(
        ''.join(json.dumps(r) + '\n' for r in records))


def test_reads_resumed_logs_and_plots(tmp_path, tool):
    run = tmp_path / 'rambo'
    _log(run, 'a', [dict(iter=10, rambo_ap=0.1), dict(iter=20, rambo_ap=0.2),
                    dict(epoch=1, step=1, **{'pascal_voc/AP50': 0.3})])
    import os
    import time
    time.sleep(0.01)
    _log(run, 'b', [dict(iter=20, rambo_ap=0.25), dict(iter=30,
                                                        rambo_ap=0.3)])
    os.utime(run / 'a' / 'vis_data' / 'a.json', (1, 1))
    recs = tool.read_train_scalars(str(run))
    assert [(r['iter'], r['rambo_ap']) for r in recs] == [(10, 0.1),
                                                         (20, 0.25),
                                                         (30, 0.3)]
    ce = tmp_path / 'ce'
    _log(ce, 'a', [dict(iter=10, acc=90.0)])
    drawn = []
    save = tool.save_figure
    tool.save_figure = lambda fig, path: drawn.append(fig) or save(fig, path)
    try:
        out = tool.main([str(tmp_path / 'p.png'), str(run), str(ce),
                         '--keys', 'rambo_ap', 'acc'])
    finally:
        tool.save_figure = save
    assert osp.isfile(out)
    # one panel per key; each run drawn where it logged the key
    ap, acc = drawn[0].axes
    assert [a.get_title() for a in (ap, acc)] == ['rambo_ap', 'acc']
    assert [(line.get_label(), list(line.get_xdata()),
             list(line.get_ydata())) for line in ap.lines] == [
        ('rambo', [10, 20, 30], [0.1, 0.25, 0.3])]
    assert [(line.get_label(), list(line.get_ydata()))
            for line in acc.lines] == [('ce', [90.0])]
    with pytest.raises(FileNotFoundError, match='no training log'):
        tool.read_train_scalars(str(tmp_path / 'empty'))
