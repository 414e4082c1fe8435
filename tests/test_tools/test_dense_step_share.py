"""lab/rankloss_lab/analysis/dense_step_share.py and the shared step timing: the
loss is timed on the scores a real forward pass hands it, the share is the
ratio of the two measured times, and the shipped R50 configs it names
exist for every loss."""
import os.path as osp

import pytest

pytestmark = pytest.mark.usefixtures('one_torch_thread')

SMALL = 'configs/dense/retinanet/retinanet_r18-w32_fpn_{}_16e_digitsvoc.py'


@pytest.fixture(scope='module')
def tool():
    from rankloss_lab.analysis import dense_step_share
    return dense_step_share


def test_the_r50_configs_exist(tool):
    for loss in tool.LOSSES:
        assert osp.isfile(osp.join(tool.ROOT, SMALL.format(loss)))
        assert osp.isfile(osp.join(tool.ROOT, tool.CONFIG.format(loss)))


@pytest.mark.parametrize('loss', ['focal', 'rank-sort', 'alrp'])
def test_measure_on_a_small_retinanet(tool, loss):
    r = tool.measure(loss, steps=1, size=(64, 64), config=SMALL, repeats=1)
    # all anchors of both images, whether the head calls the loss once or
    # per level: 9 anchors per cell over P3-P7 (strides 8 to 128) of a
    # 64 x 64 input (8x8 + 4x4 + 2x2 + 1x1 + 1x1 cells), x 10 classes
    cells = 8 * 8 + 4 * 4 + 2 * 2 + 1 + 1
    n = 2 * 9 * cells
    # (the rank losses take a zero background column beside the 10)
    assert r['scores_shape'] == [n, 10 if loss == 'focal' else 11]
    assert r['step_s'] > 0 and r['loss_cls_s'] > 0
    assert r['share_of_step'] == pytest.approx(r['loss_cls_s'] / r['step_s'])


def test_main_writes_the_ratio_to_focal(tool, tmp_path):
    out = tmp_path / 'share.json'
    result = tool.main([
        '--steps', '1', '--config', SMALL, '--size', '64', '64', '--batch',
        '1', '--losses', 'focal', 'rank-sort', '--out', str(out)])
    import json
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    rs = result['losses']['rank-sort']
    assert rs['step_over_focal'] == pytest.approx(
        rs['step_s'] / result['losses']['focal']['step_s'])
    assert result['losses']['focal']['step_over_focal'] == 1.0
    assert rs['scores_shape'][0] == 9 * 86  # one 64 x 64 image


def test_config_without_a_loss_slot_is_refused(tool, capsys):
    with pytest.raises(SystemExit):
        tool.main(['--config', 'configs/x.py'])
    assert 'needs a {}' in capsys.readouterr().err
