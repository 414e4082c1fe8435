"""A port, for comparison only, of the calibration pipeline and LaECE of
the official code of Kuzucu et al. (ECCV 2024), fiveai/detection_calibration:
``coco_calibration.py`` (``CalibrationCOCO``: ``prepare_input``,
``compute_single_errors`` and ``accumulate_errors`` for LaECE, ``fit``,
``calibrate``, ``transform``, ``compute_LRP``) and ``utils.py``
(``get_detection_thresholds``, ``threshold_detections``,
``isotonic_regression``), with its defaults: IoU threshold 0, 25 bins, 100
detections, LRP-optimal thresholds before and after the calibration,
class-wise calibrators. The evaluator is the port of ``_official_lrp.py``
(the same ``cocoeval``); the isotonic regression is scikit-learn's, as
there. Detections are lists of dicts as in ``_official_lrp.py``.
"""
import copy

import numpy as np
from _official_lrp import OfficialEval  # tests/test_evaluation on sys.path
from sklearn.isotonic import IsotonicRegression


def calibration_info(img_ids, cat_ids, gts, dts, tau):
    """``prepare_input``: per class index the sorted scores, TP / FP
    flags, IoUs of TPs and ``npig``; an empty dict where it skips."""
    ev = OfficialEval(img_ids, cat_ids, gts, dts, tau)
    info = {}
    for k, cat_id in enumerate(ev.cat_ids):
        arrays = ev.class_arrays(cat_id)
        info[k] = {} if arrays is None else dict(zip(
            ('scores', 'tps', 'fps', 'iou', 'npig'), arrays))
    return info


def laece(img_ids, cat_ids, gts, dts, tau=0.0, bin_count=25):
    """``compute_single_errors`` (class-wise LaECE) and
    ``accumulate_errors``."""
    info = calibration_info(img_ids, cat_ids, gts, dts, tau)
    bins = np.linspace(0.0, 1.0, bin_count + 1, endpoint=True)
    errors = np.zeros([len(info), bin_count])
    weights_per_bin = np.zeros([len(info), bin_count])
    for cl, cl_input in info.items():
        if 'tps' not in cl_input.keys():
            continue
        total_det = cl_input['tps'].sum() + cl_input['fps'].sum()
        if total_det == 0:
            continue
        for i in range(bin_count):
            if i == 0:
                bin_all_det = np.logical_and(bins[i] <= cl_input['scores'],
                                             cl_input['scores'] <= bins[i + 1])
            else:
                bin_all_det = np.logical_and(bins[i] < cl_input['scores'],
                                             cl_input['scores'] <= bins[i + 1])
            bin_tps = np.logical_and(cl_input['tps'], bin_all_det)
            bin_fps = np.logical_and(cl_input['fps'], bin_all_det)
            bin_det = np.logical_or(bin_tps, bin_fps)
            bin_scores = cl_input['scores'][bin_det]
            bin_ious = cl_input['iou'][bin_tps]
            num_det = bin_tps.sum() + bin_fps.sum()
            if num_det == 0:
                errors[cl, i] = np.nan
                weights_per_bin[cl, i] = 0
                continue
            norm_total_iou = bin_ious.sum() if len(bin_ious) > 0 else 0
            prec_iou = norm_total_iou / num_det
            errors[cl, i] = np.abs(prec_iou - bin_scores.mean())
            weights_per_bin[cl, i] = num_det / total_det
    bin_sum = np.nansum(weights_per_bin * errors, axis=1)
    bin_sum[bin_sum == 0] = np.nan
    with np.errstate(invalid='ignore'):
        return float(np.nanmean(bin_sum)) if (~np.isnan(bin_sum)).any() \
            else float('nan')


def lrp(img_ids, cat_ids, gts, dts, tau=0.0):
    """``compute_LRP``: per class index LRP, loc, FP, FN of all the
    detections (NaN for a class it skips)."""
    info = calibration_info(img_ids, cat_ids, gts, dts, tau)
    nan = float('nan')
    out = {}
    for cl, cl_input in info.items():
        if 'tps' not in cl_input.keys():
            out[cl] = dict(lrp=nan, lrp_loc=nan, lrp_fp=nan, lrp_fn=nan)
            continue
        tp_num = cl_input['tps'].sum()
        fp_num = cl_input['fps'].sum()
        fn_num = cl_input['npig'] - tp_num
        if tp_num + fp_num > 0 and tp_num > 0:
            total_loc = tp_num - cl_input['iou'].sum()
            out[cl] = dict(
                lrp=(total_loc / (1 - tau) + fp_num + fn_num) /
                (tp_num + fp_num + fn_num),
                lrp_loc=total_loc / tp_num,
                lrp_fp=fp_num / (tp_num + fp_num),
                lrp_fn=fn_num / cl_input['npig'])
        else:
            out[cl] = dict(lrp=1., lrp_loc=nan, lrp_fp=nan, lrp_fn=1.)
    return out


def get_detection_thresholds(img_ids, cat_ids, gts, dts, tau):
    """``lrp_opt_thr`` per class index: -1 where ``accumulate`` skips,
    NaN without a TP."""
    ev = OfficialEval(img_ids, cat_ids, gts, dts, tau)
    res = ev.olrp()
    return np.array([res[c]['lrp_opt_thr'] if c in res else -1.0
                     for c in ev.cat_ids])


def threshold_detections(detections, thresholds, dataset_classes):
    """Deletes, in place, each detection scoring below its class's
    threshold (a NaN threshold deletes nothing)."""
    del_items = []
    for idx, detection in enumerate(detections):
        if detection['score'] < thresholds[dataset_classes.index(
                detection['category_id'])]:
            del_items.append(idx)
    for idx in sorted(del_items, reverse=True):
        del detections[idx]
    return detections


def isotonic_regression(classagnostic, info):
    """``utils.isotonic_regression`` with IoU targets."""
    def fit(cl_input):
        if 'tps' not in cl_input:
            return np.zeros(0)
        valid = np.logical_or(cl_input['tps'], cl_input['fps'])
        if valid.sum() == 0:
            return np.zeros(0)
        return IsotonicRegression(y_min=0., y_max=1., out_of_bounds='clip') \
            .fit(cl_input['scores'][valid].reshape(-1, 1),
                 cl_input['iou'][valid])
    if classagnostic:
        joined = {key: np.concatenate([v[key] for v in info.values()
                                       if 'tps' in v] or [np.zeros(0)])
                  for key in ('scores', 'tps', 'fps', 'iou')}
        order = (-joined['scores']).argsort()
        return fit({k: v[order] for k, v in joined.items()})
    return {cl: fit(cl_input) for cl, cl_input in info.items()}


def calibrate(detections, model, classes, classagnostic):
    """``CalibrationCOCO.calibrate`` for the isotonic regression (in
    place)."""
    for detection in detections:
        m = model if classagnostic else model[
            classes.index(detection['category_id'])]
        if type(m) is not np.ndarray:
            detection['score'] = np.clip(m.predict(
                np.array(detection['score']).reshape(-1, 1)), 0, 1)[0]
    return detections


def fit(img_ids, cat_ids, gts, val_dts, tau=0.0, classagnostic=False):
    """``CalibrationCOCO.fit(..., 'isotonic_regression')`` with LRP-
    optimal thresholds: the calibrators and ``[pre, operating]``
    thresholds."""
    classes = sorted(set(cat_ids))
    val_dts = copy.deepcopy(val_dts)
    pre = get_detection_thresholds(img_ids, cat_ids, gts, val_dts, tau)
    kept = threshold_detections(val_dts, pre, classes)
    info = calibration_info(img_ids, cat_ids, gts, kept, tau)
    model = isotonic_regression(classagnostic, info)
    calibrated = calibrate(kept, model, classes, classagnostic)
    operating = get_detection_thresholds(img_ids, cat_ids, gts, calibrated,
                                         tau)
    return model, [pre, operating]


def transform(test_dts, model, thresholds, cat_ids, classagnostic=False):
    """``CalibrationCOCO.transform``: threshold, calibrate, threshold."""
    classes = sorted(set(cat_ids))
    dts = threshold_detections(copy.deepcopy(test_dts), thresholds[0],
                               classes)
    dts = calibrate(dts, model, classes, classagnostic)
    return threshold_detections(dts, thresholds[1], classes)
