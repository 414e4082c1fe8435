"""A port, for comparison only, of the optimal LRP of the official code:
kemaloksuz/LRP-Error, ``pycocotools/pycocotools/cocoeval.py`` (``_prepare``,
``computeIoU``, ``evaluateImg``, the oLRP part of ``accumulate``) and
``common/maskApi.c`` (``bbIou``), for boxes, one IoU threshold, the area
range 'all'. The same evaluator serves fiveai/detection_calibration
(``pycocotools_lrp``). Kept statement for statement where it decides a
value; the COCO objects are replaced by plain lists of dicts:

* ``gts``: ``image_id``, ``category_id``, ``bbox`` (x, y, w, h),
  ``iscrowd``;
* ``dts``: ``image_id``, ``category_id``, ``bbox``, ``score``.
"""
from collections import defaultdict

import numpy as np


def bb_iou(dt, gt, iscrowd):
    """maskApi.c ``bbIou``: (D, G); a crowd box's overlap is the
    intersection over the detection's area."""
    o = np.zeros((len(dt), len(gt)))
    for g, G in enumerate(gt):
        ga = G[2] * G[3]
        crowd = iscrowd[g]
        for d, D in enumerate(dt):
            da = D[2] * D[3]
            w = min(D[2] + D[0], G[2] + G[0]) - max(D[0], G[0])
            if w <= 0:
                continue
            h = min(D[3] + D[1], G[3] + G[1]) - max(D[1], G[1])
            if h <= 0:
                continue
            i = w * h
            u = da if crowd else da + ga - i
            o[d, g] = i / u
    return o


class OfficialEval:
    """``COCOeval`` with ``iouThrs = [tau]``, ``areaRng = [all]`` and
    ``maxDets = [max_det]``, as fiveai/detection_calibration sets it;
    ``img_ids`` and ``cat_ids`` those of the ground truth file."""

    def __init__(self, img_ids, cat_ids, gts, dts, tau, max_det=100):
        self.tau = tau
        self.max_det = max_det
        self.img_ids = sorted(set(img_ids))  # the ground truth file's
        self.cat_ids = sorted(set(cat_ids))
        self._gts = defaultdict(list)
        self._dts = defaultdict(list)
        for i, g in enumerate(gts):
            g = dict(g, id=i + 1, ignore=int(bool(g['iscrowd'])))
            self._gts[g['image_id'], g['category_id']].append(g)
        for i, d in enumerate(dts):
            self._dts[d['image_id'], d['category_id']].append(
                dict(d, id=i + 1))
        self.ious = {(i, c): self.compute_iou(i, c) for i in self.img_ids
                     for c in self.cat_ids}
        self.eval_imgs = {(c, i): self.evaluate_img(i, c)
                          for c in self.cat_ids for i in self.img_ids}

    def compute_iou(self, img_id, cat_id):
        gt = self._gts[img_id, cat_id]
        dt = self._dts[img_id, cat_id]
        if len(gt) == 0 and len(dt) == 0:
            return []
        inds = np.argsort([-d['score'] for d in dt], kind='mergesort')
        dt = [dt[i] for i in inds][:self.max_det]
        return bb_iou([d['bbox'] for d in dt], [g['bbox'] for g in gt],
                      [int(o['iscrowd']) for o in gt])

    def evaluate_img(self, img_id, cat_id):
        gt = self._gts[img_id, cat_id]
        dt = self._dts[img_id, cat_id]
        if len(gt) == 0 and len(dt) == 0:
            return None
        for g in gt:
            g['_ignore'] = 1 if g['ignore'] else 0
        gtind = np.argsort([g['_ignore'] for g in gt], kind='mergesort')
        gt = [gt[i] for i in gtind]
        dtind = np.argsort([-d['score'] for d in dt], kind='mergesort')
        dt = [dt[i] for i in dtind[0:self.max_det]]
        iscrowd = [int(o['iscrowd']) for o in gt]
        ious = self.ious[img_id, cat_id][:, gtind] if len(
            self.ious[img_id, cat_id]) > 0 else self.ious[img_id, cat_id]
        G, D = len(gt), len(dt)
        gtm = np.zeros(G)
        dtm = np.zeros(D)
        gtIg = np.array([g['_ignore'] for g in gt])
        dtIg = np.zeros(D)
        dtIoU = np.zeros(D)
        if not len(ious) == 0:
            t = self.tau
            for dind, d in enumerate(dt):
                iou = min([t, 1 - 1e-10])
                m = -1
                for gind, g in enumerate(gt):
                    if gtm[gind] > 0 and not iscrowd[gind]:
                        continue
                    if m > -1 and gtIg[m] == 0 and gtIg[gind] == 1:
                        break
                    if ious[dind, gind] < iou:
                        continue
                    iou = ious[dind, gind]
                    m = gind
                if m == -1:
                    continue
                dtIg[dind] = gtIg[m]
                dtm[dind] = gt[m]['id']
                gtm[m] = d['id']
                dtIoU[dind] = iou
        return dict(dtMatches=dtm, dtScores=[d['score'] for d in dt],
                    gtIgnore=gtIg, dtIgnore=dtIg, dtIoUs=dtIoU)

    def class_arrays(self, cat_id):
        """``accumulate``'s per-class arrays: sorted scores, TP and FP
        flags, TP IoUs and the number of non-ignored objects; None where
        it ``continue``s (no image, or no such object)."""
        E = [self.eval_imgs[cat_id, i] for i in self.img_ids]
        E = [e for e in E if e is not None]
        if len(E) == 0:
            return None
        dtScores = np.concatenate([e['dtScores'][0:self.max_det] for e in E])
        inds = np.argsort(-dtScores, kind='mergesort')
        dtScoresSorted = dtScores[inds]
        dtm = np.concatenate([e['dtMatches'][0:self.max_det] for e in E])[inds]
        dtIg = np.concatenate([e['dtIgnore'][0:self.max_det] for e in E])[inds]
        dtIoU = np.concatenate([e['dtIoUs'][0:self.max_det] for e in E])[inds]
        gtIg = np.concatenate([e['gtIgnore'] for e in E])
        npig = np.count_nonzero(gtIg == 0)
        if npig == 0:
            return None
        tps = np.logical_and(dtm, np.logical_not(dtIg))
        fps = np.logical_and(np.logical_not(dtm), np.logical_not(dtIg))
        return dtScoresSorted, tps, fps, np.multiply(dtIoU, tps), npig

    def olrp(self):
        """Per category id: ``olrp``, ``olrp_loc``, ``olrp_fp``,
        ``olrp_fn``, ``lrp_opt_thr`` (NaN without a TP), for the classes
        ``accumulate`` fills."""
        out = {}
        for cat_id in self.cat_ids:
            arrays = self.class_arrays(cat_id)
            if arrays is None:
                continue
            dtScoresSorted, tps, fps, dtIoU, npig = arrays
            tp_num = np.cumsum(tps)
            fp_num = np.cumsum(fps)
            fn_num = npig - tp_num
            nan = float('nan')
            r = dict(olrp=1., olrp_loc=nan, olrp_fp=nan, olrp_fn=1.,
                     lrp_opt_thr=nan)
            if tp_num.shape[0] > 0 and tp_num[-1] > 0:
                total_loc = tp_num - np.cumsum(dtIoU)
                lrps = (total_loc / (1 - self.tau) + fp_num + fn_num) / (
                    tp_num + fp_num + fn_num)
                k = np.argmin(lrps)
                with np.errstate(invalid='ignore'):
                    r = dict(olrp=lrps[k], olrp_loc=total_loc[k] / tp_num[k],
                             olrp_fp=fp_num[k] / (tp_num[k] + fp_num[k]),
                             olrp_fn=fn_num[k] / npig,
                             lrp_opt_thr=dtScoresSorted[k])
            out[cat_id] = r
        return out
