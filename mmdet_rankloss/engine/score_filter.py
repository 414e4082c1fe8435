"""Per-class score thresholds and a score calibration applied to a detector's
predictions (docs/thresholds.md).

The thresholds (LRP-optimal, one per class) and the Platt or isotonic
calibration that ``tools/analysis_tools/fit_class_thresholds.py`` fits on val
are applied after ``predict``: :func:`filter_instances` on one image,
:func:`wrap_predict` on a built detector, :class:`ClassScoreThresholdHook` from
a config. A box is kept if its score reaches its class's threshold; the kept
scores are calibrated, and a second threshold on the calibrated scores may
follow (Kuzucu et al., ECCV 2024). All are monotone per class."""
from typing import Dict, Optional, Sequence, Union

import torch
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper
from torch import Tensor

from mmdet.registry import HOOKS

__all__ = [
    'ClassScoreThresholdHook', 'filter_instances', 'wrap_predict',
    'check_calibration', 'thresholds_by_label', 'calibration_by_label'
]

OWNER = 'ClassScoreThresholdHook'


def check_calibration(calibration: Optional[dict]) -> Optional[dict]:
    """A checked calibration: None, ``dict(type='platt', a=A, b=B)`` with
    ``A > 0`` (``sigmoid(A * logit(p) + B)``) or ``dict(type='isotonic',
    x=[...], y=[...])``, knots with increasing ``x`` and non-decreasing
    ``y`` in [0, 1] (linear between them, the end values outside); or a
    dict of class name: one of those (one calibration per class).

    Raises:
        ValueError: Naming the field and the value.
    """
    if calibration is None:
        return None
    if isinstance(calibration, dict) and 'type' not in calibration and \
            all(v is None or isinstance(v, dict)
                for v in calibration.values()):
        return {str(k): check_calibration(v) for k, v in calibration.items()}
    kind = dict(calibration).get('type') if isinstance(
        calibration, dict) else None
    if kind == 'platt':
        a, b = float(calibration['a']), float(calibration['b'])
        if not a > 0:
            raise ValueError(f'{OWNER}: calibration.a must be > 0 (a '
                             f'monotone map), got {a!r}')
        return dict(type='platt', a=a, b=b)
    if kind == 'isotonic':
        x = torch.as_tensor(calibration['x'], dtype=torch.float64)
        y = torch.as_tensor(calibration['y'], dtype=torch.float64)
        if x.ndim != 1 or x.shape != y.shape or x.numel() == 0:
            raise ValueError(f'{OWNER}: calibration.x and .y must be two '
                             'non-empty lists of one length, got '
                             f'{len(calibration["x"])} and '
                             f'{len(calibration["y"])}')
        if (x.diff() <= 0).any() or (y.diff() < 0).any() or \
                (y < 0).any() or (y > 1).any():
            raise ValueError(f'{OWNER}: calibration.x must increase and .y '
                             'must not decrease, within [0, 1], got x='
                             f'{x.tolist()}, y={y.tolist()}')
        return dict(type='isotonic', x=x.tolist(), y=y.tolist())
    raise ValueError(f'{OWNER}: calibration must be None, dict(type='
                     "'platt', a=..., b=...), dict(type='isotonic', "
                     'x=[...], y=[...]) or a dict of class name: one of '
                     f'those, got {calibration!r}')


def _calibrate(scores: Tensor, calibration: dict) -> Tensor:
    """The calibration at ``scores`` (N,), on their device and dtype."""
    if calibration['type'] == 'platt':
        p = scores.clamp(1e-7, 1 - 1e-7)
        return torch.sigmoid(calibration['a'] * torch.logit(p) +
                             calibration['b'])
    x = torch.as_tensor(calibration['x'], dtype=scores.dtype,
                        device=scores.device)
    y = torch.as_tensor(calibration['y'], dtype=scores.dtype,
                        device=scores.device)
    if x.numel() == 1:
        return y.expand_as(scores).clone()
    s = scores.clamp(x[0], x[-1])
    right = torch.searchsorted(x, s).clamp(1, x.numel() - 1)
    x0, x1, y0, y1 = x[right - 1], x[right], y[right - 1], y[right]
    return y0 + (s - x0) / (x1 - x0) * (y1 - y0)


Calibration = Union[None, dict, Sequence[Optional[dict]]]


def filter_instances(instances, thresholds: Tensor,
                     calibration: Calibration = None,
                     calibrated_thresholds: Optional[Tensor] = None):
    """One image's predictions with each box kept if ``score >=
    thresholds[label]``, the kept scores calibrated, and then kept if
    ``calibrated score >= calibrated_thresholds[label]``.

    Args:
        instances (InstanceData): ``scores`` (N,), ``labels`` (N,) and any
            other per-box fields (``bboxes``, ``masks``), all indexed alike.
        thresholds (Tensor): (C,) one per class (``-inf``: keep all,
            ``inf``: keep none).
        calibration (dict or sequence, optional): One checked calibration
            (:func:`check_calibration`) for all classes, or one (or None)
            per class (:func:`calibration_by_label`).
        calibrated_thresholds (Tensor, optional): (C,) on the calibrated
            scores. Defaults to None (none).

    Returns:
        InstanceData: The kept boxes (a new object).
    """
    def keep(inst, thr):
        thr = thr.to(device=inst.scores.device, dtype=inst.scores.dtype)
        return inst[inst.scores >= thr[inst.labels]]

    kept = keep(instances, thresholds)
    if calibration is not None and len(kept):
        per_label = [calibration] * (int(kept.labels.max()) + 1) \
            if isinstance(calibration, dict) else calibration
        scores = kept.scores.clone()
        for c in kept.labels.unique().tolist():
            if per_label[c] is not None:
                sel = kept.labels == c
                scores[sel] = _calibrate(kept.scores[sel], per_label[c])
        kept.scores = scores
    if calibrated_thresholds is not None:
        kept = keep(kept, calibrated_thresholds)
    return kept


def thresholds_by_label(thresholds: Dict[str, float],
                        classes: Sequence[str],
                        default: Optional[float] = None) -> Tensor:
    """``thresholds`` (class name: threshold) as a (C,) tensor in the order
    of ``classes``; a class not named gets ``default`` (None: keep all).

    Raises:
        ValueError: Naming the names that are not classes of the model.
    """
    _check_names(thresholds, classes, 'thresholds')
    fill = float('-inf') if default is None else float(default)
    return torch.tensor([float(thresholds.get(c, fill)) for c in classes],
                        dtype=torch.float64)


def calibration_by_label(calibration: Optional[dict],
                         classes: Sequence[str]) -> Calibration:
    """A checked calibration for :func:`filter_instances`: one for all
    classes as it is, one per class name as a list in the order of
    ``classes`` (None for a class not named).

    Raises:
        ValueError: Naming the names that are not classes of the model.
    """
    calibration = check_calibration(calibration)
    if calibration is None or 'type' in calibration:
        return calibration
    _check_names(calibration, classes, 'calibration')
    return [calibration.get(c) for c in classes]


def _check_names(by_name: dict, classes: Sequence[str], what: str) -> None:
    unknown = sorted(set(by_name) - set(classes))
    if unknown:
        raise ValueError(f'{OWNER}: {what} name classes the dataset does '
                         f'not have: {unknown} (its classes: '
                         f'{list(classes)})')


def wrap_predict(model, thresholds: Tensor,
                 calibration: Calibration = None,
                 calibrated_thresholds: Optional[Tensor] = None) -> None:
    """Makes ``model.predict`` return its predictions through
    :func:`filter_instances`; a second call replaces the first one's
    settings (the wrapped method is the model's own).

    Args:
        model (nn.Module): A built MMDetection detector (not a DDP
            wrapper: pass ``runner.model.module`` then).
        thresholds (Tensor): (C,) per class, e.g. from
            :func:`thresholds_by_label`.
        calibration (dict or list, optional): One calibration for all
            classes or a list per label (:func:`calibration_by_label`).
        calibrated_thresholds (Tensor, optional): (C,) on the calibrated
            scores.
    """
    if isinstance(calibration, dict):
        calibration = check_calibration(calibration)
    own = getattr(model.predict, '__wrapped_predict__', model.predict)

    def predict(*args, **kwargs):
        samples = own(*args, **kwargs)
        for sample in samples:
            sample.pred_instances = filter_instances(
                sample.pred_instances, thresholds, calibration,
                calibrated_thresholds)
        return samples

    predict.__wrapped_predict__ = own
    model.predict = predict


@HOOKS.register_module()
class ClassScoreThresholdHook(Hook):
    """Applies per-class score thresholds, a calibration and thresholds on the
    calibrated scores to every prediction of the val and test loops
    (:func:`wrap_predict`); ``tools/analysis_tools/fit_class_thresholds.py
    --write-config`` writes it into ``custom_hooks``.

    Args:
        thresholds (dict): Class name: threshold on the model's own scores.
            Each name must be a class of the loop's dataset.
        calibration (dict, optional): One :func:`check_calibration` form for
            every class, or class name: one (a class not named keeps its
            scores). Defaults to None.
        default (float, optional): Threshold of the classes ``thresholds`` does
            not name. Defaults to None (keep their boxes).
        calibrated_thresholds (dict, optional): Class name: threshold on the
            calibrated scores (a class not named: none). Defaults to None.
    """
    priority = 'NORMAL'

    def __init__(self,
                 thresholds: Dict[str, float],
                 calibration: Optional[dict] = None,
                 default: Optional[float] = None,
                 calibrated_thresholds: Optional[Dict[str, float]] = None
                 ) -> None:
        for name, value in (('thresholds', thresholds),
                            ('calibrated_thresholds',
                             calibrated_thresholds or {})):
            if not isinstance(value, dict):
                raise ValueError(f'{OWNER}: {name} must be a dict of class '
                                 f'name: threshold, got {value!r}')
        self.thresholds = {str(k): float(v) for k, v in thresholds.items()}
        self.calibration = check_calibration(calibration)
        self.default = default
        self.calibrated_thresholds = {
            str(k): float(v)
            for k, v in (calibrated_thresholds or {}).items()}

    def wrap(self, model, classes: Sequence[str]) -> None:
        """Makes ``model.predict`` (a built detector, not a DDP wrapper)
        apply this hook's settings for a model of ``classes``."""
        after: Optional[Tensor] = None
        if self.calibrated_thresholds:
            after = thresholds_by_label(self.calibrated_thresholds, classes)
        wrap_predict(model,
                     thresholds_by_label(self.thresholds, classes,
                                         self.default),
                     calibration_by_label(self.calibration, classes), after)

    def _apply(self, runner, loop) -> None:
        model = runner.model.module if is_model_wrapper(runner.model) \
            else runner.model
        self.wrap(model, loop.dataloader.dataset.metainfo['classes'])

    def before_val(self, runner) -> None:
        self._apply(runner, runner.val_loop)

    def before_test(self, runner) -> None:
        self._apply(runner, runner.test_loop)
