"""Per-class thresholds and calibrations applied to predictions: boxes kept
by hand, the maps against the numpy fits they store, the hook on a model's
predict, and bad settings named."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from mmengine.structures import InstanceData

from mmdet.structures import DetDataSample
from mmdet_rankloss.engine import (ClassScoreThresholdHook, filter_instances,
                                   wrap_predict)
from mmdet_rankloss.evaluation import apply_isotonic, apply_platt, fit_isotonic


def _instances():
    return InstanceData(
        bboxes=torch.arange(20, dtype=torch.float32).reshape(5, 4),
        scores=torch.tensor([0.9, 0.2, 0.5, 0.45, 0.1]),
        labels=torch.tensor([0, 0, 1, 1, 2]))


def test_each_class_has_its_threshold():
    kept = filter_instances(_instances(),
                            torch.tensor([0.3, 0.45, float('inf')]))
    assert kept.scores.tolist() == pytest.approx([0.9, 0.5, 0.45])
    assert kept.labels.tolist() == [0, 1, 1]
    assert kept.bboxes[:, 0].tolist() == [0.0, 8.0, 12.0]
    everything = filter_instances(_instances(),
                                  torch.full((3, ), float('-inf')))
    assert len(everything) == 5


def test_calibrations_equal_the_numpy_maps():
    scores = np.array([0.9, 0.2, 0.5, 0.45, 0.1])
    inst = _instances()
    inst.scores = torch.as_tensor(scores)
    keep_all = torch.full((3, ), float('-inf'))
    platt = filter_instances(inst, keep_all,
                             dict(type='platt', a=1.7, b=-0.3))
    np.testing.assert_allclose(platt.scores.numpy(),
                               apply_platt(scores, 1.7, -0.3), atol=1e-12)
    x, y = fit_isotonic([0.1, 0.3, 0.6, 0.8], [0.0, 0.4, 0.2, 0.9])
    iso = filter_instances(inst, keep_all,
                           dict(type='isotonic', x=x.tolist(),
                                y=y.tolist()))
    np.testing.assert_allclose(iso.scores.numpy(),
                               apply_isotonic(scores, x, y), atol=1e-12)
    one = filter_instances(inst, keep_all,
                           dict(type='isotonic', x=[0.5], y=[0.25]))
    assert one.scores.tolist() == [0.25] * 5


def _model():
    class Detector(torch.nn.Module):
        def predict(self, inputs, data_samples):
            sample = DetDataSample()
            sample.pred_instances = _instances()
            return [sample]
    return Detector()


def test_the_hook_filters_what_the_loop_predicts():
    model = _model()
    dataset = SimpleNamespace(metainfo=dict(classes=('a', 'b', 'c')))
    loop = SimpleNamespace(dataloader=SimpleNamespace(dataset=dataset))
    runner = SimpleNamespace(model=model, test_loop=loop, val_loop=loop)
    hook = ClassScoreThresholdHook(thresholds=dict(a=0.3, c=0.05),
                                   calibration=dict(type='platt', a=1.0,
                                                    b=0.0))
    hook.before_test(runner)
    out, = model.predict(None, None)
    # b is not named: all its boxes kept; the identity Platt map
    assert out.pred_instances.labels.tolist() == [0, 1, 1, 2]
    assert out.pred_instances.scores.tolist() == pytest.approx(
        [0.9, 0.5, 0.45, 0.1])
    # again (val after test): the model's own predict, wrapped once
    ClassScoreThresholdHook(thresholds=dict(b=0.6), default=0.95)\
        .before_val(runner)
    out, = model.predict(None, None)
    assert out.pred_instances.labels.tolist() == []
    wrap_predict(model, torch.full((3, ), float('-inf')))
    assert len(model.predict(None, None)[0].pred_instances) == 5


def test_a_calibration_per_class_then_thresholds_on_it():
    """Class a: Platt (identity), b: isotonic to a constant 0.3, c: not
    named (kept); then a second threshold on the calibrated scores."""
    model = _model()
    dataset = SimpleNamespace(metainfo=dict(classes=('a', 'b', 'c')))
    loop = SimpleNamespace(dataloader=SimpleNamespace(dataset=dataset))
    runner = SimpleNamespace(model=model, test_loop=loop)
    hook = ClassScoreThresholdHook(
        thresholds=dict(a=0.3), calibrated_thresholds=dict(b=0.3, c=0.2),
        calibration=dict(a=dict(type='platt', a=1.0, b=0.0),
                         b=dict(type='isotonic', x=[0.5], y=[0.3])))
    hook.before_test(runner)
    out, = model.predict(None, None)
    # a: 0.9 kept (0.2 cut); b: 0.5 and 0.45 -> 0.3, both >= 0.3; c: 0.1
    # < 0.2 cut after its (absent) calibration
    assert out.pred_instances.labels.tolist() == [0, 1, 1]
    assert out.pred_instances.scores.tolist() == pytest.approx(
        [0.9, 0.3, 0.3])
    with pytest.raises(ValueError, match=r"calibration name classes .*"
                       r"\['zebra'\]"):
        ClassScoreThresholdHook(
            thresholds={}, calibration=dict(zebra=None)).before_test(runner)


def test_the_hook_is_registered_and_built_from_a_config():
    import mmdet_rankloss  # noqa: F401
    from mmdet.registry import HOOKS
    hook = HOOKS.build(dict(type='ClassScoreThresholdHook',
                            thresholds=dict(a=0.5)))
    assert isinstance(hook, ClassScoreThresholdHook)


@pytest.mark.parametrize('kwargs, message', [
    (dict(thresholds=[0.1]), 'thresholds must be a dict'),
    (dict(thresholds={}, calibrated_thresholds=0.5),
     'calibrated_thresholds must be a dict'),
    (dict(thresholds={}, calibration=dict(a=dict(type='platt', a=0, b=0))),
     'calibration.a must be > 0'),
    (dict(thresholds=dict(a=0.1), calibration=dict(type='platt', a=-1,
                                                   b=0)),
     'calibration.a must be > 0'),
    (dict(thresholds=dict(a=0.1), calibration=dict(type='isotonic',
                                                   x=[0.5, 0.4],
                                                   y=[0.1, 0.2])),
     'calibration.x must increase'),
    (dict(thresholds=dict(a=0.1), calibration=dict(type='temperature')),
     'calibration must be None'),
])
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ClassScoreThresholdHook(**kwargs)


def test_a_class_the_dataset_lacks_is_named():
    dataset = SimpleNamespace(metainfo=dict(classes=('a', 'b')))
    loop = SimpleNamespace(dataloader=SimpleNamespace(dataset=dataset))
    runner = SimpleNamespace(model=_model(), test_loop=loop)
    with pytest.raises(ValueError, match=r"not have: \['zebra'\]"):
        ClassScoreThresholdHook(thresholds=dict(zebra=0.5)).before_test(
            runner)


def test_the_documented_wrap_predict_snippet(tmp_path, monkeypatch):
    """docs/thresholds.md's snippet for DetInferencer / own loops, run as
    written on a config the way fit_class_thresholds.py writes it."""
    import os.path as osp
    import re
    root = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
    with open(osp.join(root, 'docs', 'thresholds.md'), encoding='utf-8') as f:
        code = re.search(r'<!-- thresholds-wrap-predict -->\n```python\n'
                         r'(.*?)```', f.read(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'OUT.py').write_text(
        "custom_hooks = [dict(type='RandomStateHook'), dict(type="
        "'ClassScoreThresholdHook', thresholds={'a': 0.3, 'c': 0.05}, "
        "calibration={'b': {'type': 'isotonic', 'x': [0.5], 'y': [0.4]}}, "
        "calibrated_thresholds={'b': 0.4})]\n")
    model = _model()
    model.dataset_meta = dict(classes=('a', 'b', 'c'))
    exec(code, dict(model=model))
    out, = model.predict(None, None)
    assert out.pred_instances.labels.tolist() == [0, 1, 1, 2]
    assert out.pred_instances.scores.tolist() == pytest.approx(
        [0.9, 0.4, 0.4, 0.1])
