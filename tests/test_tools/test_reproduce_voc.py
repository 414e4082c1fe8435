"""The Table 5 reproduction command, checked end to end on a tiny VOC-layout
copy for a few iterations (R50 from scratch, small images): it trains both
losses of a row through the runner, tests them and writes the table beside
the paper's numbers; a second call reuses the finished pairs."""
import json
import os.path as osp

import pytest

from rankloss_lab import reproduce_voc as tool
from rankloss_lab.datasets.toy_voc import make_toy_voc


@pytest.mark.slow
def test_reproduce_voc_row_on_tiny_copy(tmp_path, capsys):
    root = str(tmp_path / 'VOCdevkit') + '/'
    make_toy_voc(root, num_trainval=4, num_test=2, image_size=96,
                 with_voc2012=True)
    options = [
        f'train_dataloader.dataset.dataset.data_root={root}',
        f'val_dataloader.dataset.data_root={root}',
        f'test_dataloader.dataset.data_root={root}',
        'train_dataloader.dataset.times=1', 'train_dataloader.batch_size=2',
        'train_dataloader.num_workers=0',
        'train_dataloader.persistent_workers=False',
        'val_dataloader.num_workers=0',
        'val_dataloader.persistent_workers=False',
        'test_dataloader.num_workers=0',
        'test_dataloader.persistent_workers=False',
        'train_dataloader.dataset.dataset.pipeline.2.scale=(96,96)',
        'test_dataloader.dataset.pipeline.1.scale=(96,96)',
        'val_dataloader.dataset.pipeline.1.scale=(96,96)',
        'train_dataloader.dataset.dataset.filter_cfg.bbox_min_size=0',
        'model.backbone.init_cfg=None', 'train_cfg.max_epochs=1'
    ]
    args = ['--rows', 'r50_voc07', '--work-dir', str(tmp_path / 'work'),
            '--cfg-options'] + options
    path = tool.main(args)
    lines = open(path).read().splitlines()
    head = [c.strip() for c in lines[2].strip('|').split('|')]
    row = dict(zip(head, (c.strip() for c in lines[4].strip('|').split('|'))))
    # our cells are the AP50 of each run's result.json, in %
    ours = {loss: json.load(open(osp.join(
        str(tmp_path / 'work'), 'r50_voc07', loss, 'result.json')))['ap50']
        for loss in ('ce', 'rambo')}
    assert row['CE AP50, ours'] == f'{100 * ours["ce"]:.1f}'
    assert row['RaMBO AP50, ours'] == f'{100 * ours["rambo"]:.1f}'
    assert row['RaMBO - CE, ours'] == (
        f'{float(row["RaMBO AP50, ours"]) - float(row["CE AP50, ours"]):+.1f}')
    # the paper's numbers sit in columns labelled as the paper's
    assert (row['backbone'], row['training data']) == ('ResNet-50', 'VOC07')
    assert [k for k in head if k.endswith(', paper')] == [
        'CE AP50, paper', 'RaMBO AP50, paper', 'RaMBO - CE, paper']
    assert 'Paper numbers from' in lines[-1] or any(
        line.startswith('Paper numbers from') for line in lines)
    out = capsys.readouterr().out
    assert '2/2 r50_voc07 rambo: AP50' in out and 'ETA' in out
    tool.main(args)  # both pairs finished: nothing is trained again
    out = capsys.readouterr().out
    assert 'Epoch' not in out and '2 runs, 2 done, 0 to run' in out
