"""The curves of a study: val AP50 per epoch of each method at its
selected learning rate, mean and band over the test seeds."""
from typing import Dict, Sequence, Tuple

from experiments import run_logs


def plot_curves(spec: dict, results: Dict[Tuple, dict],
                chosen: Dict[str, float], path: str,
                exploratory: Sequence[str] = ()) -> bool:
    """Val AP50 per epoch, mean and min-max band over the test seeds (a
    ``select_only`` study: its selection seeds); the ``exploratory`` methods
    (not pre-registered) dashed and so labelled."""
    import numpy as np
    curves = {}
    seeds = spec['select_seeds'] if spec.get('select_only') else spec['seeds']
    for mname in spec['methods']:
        if mname not in chosen:
            continue
        runs = [results[(mname, chosen[mname], s)]
                for s in seeds if (mname, chosen[mname], s) in results]
        # a run that diverged before its last epoch: no whole curve
        runs = [r['val_curve'] for r in runs
                if r['val_curve'] and r.get('val_ap50') is not None]
        if runs:
            length = min(len(r) for r in runs)
            curves[mname] = np.array([r[:length] for r in runs]) * 100
    # test runs that validated only after their last epoch: no curve
    if not curves or max(a.shape[1] for a in curves.values()) < 2:
        return False
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
    ax.set_title(f'{spec["name"]}: mean, band = min..max over seeds',
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    run_logs.save_figure(fig, path)
    return True
