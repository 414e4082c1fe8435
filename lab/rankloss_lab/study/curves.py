"""The curves of a study: val AP50 per epoch of each method at its
selected learning rate, mean and band over seeds."""
import math
from typing import Dict, Sequence, Tuple

from rankloss_lab import run_logs
from .common import val_by_epoch


def curve_runs(spec: dict, results: Dict[Tuple, dict],
               chosen: Dict[str, float]) -> Tuple[Dict[str, list], str]:
    """``({method: [per-epoch val curve of each run]}, whose)``: the runs at
    each selected lr of the test seeds, or of the selection seeds
    (``select_only``, or where the test runs validated only at the end);
    ``whose`` names them. A curve lists epochs 1, 2, ..., NaN where no val
    was logged; a diverged run is left out."""
    def gather(seeds):
        out = {}
        for mname in spec['methods']:
            if mname not in chosen:
                continue
            runs = [val_by_epoch(results[(mname, chosen[mname], s)])
                    for s in seeds if (mname, chosen[mname], s) in results
                    and results[(mname, chosen[mname], s)].get(
                        'val_ap50') is not None]
            # by epoch, NaN where a run logged no val (stopped during it)
            runs = [[c.get(e, math.nan) for e in range(1, max(c) + 1)]
                    for c in runs if len(c) > 1]
            if runs:
                out[mname] = runs
        return out
    curves = {} if spec.get('select_only') else gather(spec['seeds'])
    if curves:
        return curves, 'test seeds'
    return gather(spec['select_seeds']), 'selection seeds ' + ', '.join(
        map(str, spec['select_seeds']))


def plot_curves(spec: dict, results: Dict[Tuple, dict],
                chosen: Dict[str, float], path: str,
                exploratory: Sequence[str] = ()) -> str:
    """Val AP50 per epoch, mean and min-max band over the runs of
    :func:`curve_runs`, the ``exploratory`` methods dashed; returns
    ``whose`` of :func:`curve_runs`, or '' (no figure) without a curve."""
    import numpy as np
    runs, whose = curve_runs(spec, results, chosen)
    curves = {}
    for mname, rs in runs.items():
        length = min(len(r) for r in rs)
        curves[mname] = np.array([r[:length] for r in rs]) * 100
    if not curves:
        return ''
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    # one colour and marker per method: the default cycle repeats after 10
    colours = plt.cm.tab20(np.linspace(0, 1, 20))[::2].tolist() + \
        plt.cm.tab20(np.linspace(0, 1, 20))[1::2].tolist()
    markers = 'osD^v<>ph*'
    for i, (mname, arr) in enumerate(curves.items()):
        label = f'{spec["methods"][mname]["label"]} (lr {chosen[mname]:g}, ' \
            f'{arr.shape[0]} seeds)'
        if mname in exploratory:
            label += ', exploratory'
        run_logs.plot_mean_band(ax, arr, label, colours[i % 20],
                                markers[i % 10],
                                linestyle='--' if mname in exploratory
                                else '-')
    ax.set_xlabel('epoch')
    ax.set_ylabel('val AP50 (%)')
    ax.set_title(f'{spec["name"]}: mean, band = min..max over {whose}',
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    run_logs.save_figure(fig, path)
    return whose
