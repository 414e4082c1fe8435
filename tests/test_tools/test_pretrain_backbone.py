"""tools/misc/pretrain_backbone.py writes a
weights-only checkpoint whose keys are the DigitsVOC detectors' backbone,
and the glyph-pretrained configs load exactly those weights through
MMEngine's ``Pretrained`` init."""
import json
import os.path as osp

import pytest
import torch
from mmengine.config import Config

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
PRETRAINED = [
    f'configs/digitsvoc/faster-rcnn_r18-w32-glyphs_fpn_{loss}_12e_digitsvoc.py'
    for loss in ('ce', 'rambo', 'rambo-bce')
]

pytestmark = pytest.mark.usefixtures('one_torch_thread')


@pytest.fixture(scope='module')
def tool():
    from tests.conftest import _load_tool
    return _load_tool('tools/misc/pretrain_backbone.py')


@pytest.fixture(scope='module')
def checkpoint(tool, tmp_path_factory):
    out = str(tmp_path_factory.mktemp('pretrain') / 'glyphs.pth')
    meta = tool.main([out, '--epochs', '2', '--images-per-epoch', '128',
                      '--held-out', '62', '--batch-size', '32', '--size',
                      '32', '--lr', '0.05', '--log-interval', '4',
                      '--preview', out[:-4] + '_preview.png'])
    return out, meta


def test_checkpoint_is_weights_only_with_the_log(checkpoint):
    out, meta = checkpoint
    ckpt = torch.load(out, weights_only=True)
    assert set(ckpt) == {'state_dict', 'meta'}
    assert 'fc.weight' not in ckpt['state_dict']  # the classifier is dropped
    with open(out[:-4] + '.json') as f:
        log = json.load(f)
    assert log == ckpt['meta'] == json.loads(json.dumps(meta))
    assert [e['epoch'] for e in log['epochs']] == [1, 2]
    assert 0.0 <= log['top1'] <= 1.0 and log['classes'][:3] == '012'
    assert set(log['render']) == {'numpy', 'pillow', 'matplotlib'}
    assert all(torch.isfinite(torch.tensor(e['loss'])) for e in log['epochs'])
    from PIL import Image
    # 62 held-out renders of 32 px: 4 rows of up to 16
    assert Image.open(out[:-4] + '_preview.png').size == (16 * 32, 4 * 32)


def test_the_configs_load_exactly_these_weights(checkpoint):
    from mmengine.registry import init_default_scope
    from mmdet.registry import MODELS
    import mmdet_rankloss  # noqa: F401
    out, _ = checkpoint
    state = torch.load(out, weights_only=True)['state_dict']
    for name in PRETRAINED:
        cfg = Config.fromfile(osp.join(ROOT, name))
        assert cfg.model.backbone.init_cfg == dict(
            type='Pretrained', checkpoint='checkpoints/r18-w32_glyphs.pth')
        assert (cfg.model.backbone.frozen_stages,
                cfg.model.backbone.norm_eval) == (1, True)
        assert cfg.train_cfg.max_epochs == 12
        assert cfg.param_scheduler[1].milestones == [9]
        cfg.model.backbone.init_cfg.checkpoint = out
        init_default_scope('mmdet')
        model = MODELS.build(cfg.model)
        model.init_weights()
        got = model.backbone.state_dict()
        assert set(got) == set(state)
        for key, value in state.items():
            assert torch.equal(got[key], value), (name, key)


def test_bad_output_name_is_refused(tool, capsys):
    with pytest.raises(SystemExit):
        tool.main(['weights.bin'])
    assert 'must end in .pth' in capsys.readouterr().err


def test_lr_schedule_warms_up_then_anneals(tool):
    lrs = [tool.lr_at(s, 10, 50, 0.2) for s in range(50)]
    assert lrs[0] == pytest.approx(0.02) and lrs[9] == pytest.approx(0.2)
    assert lrs[10] == pytest.approx(0.2)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:]))
    assert lrs[-1] < 0.001
