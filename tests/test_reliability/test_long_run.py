"""lab/rankloss_lab/analysis/long_run.py: the slopes it reports, and a short run."""
import json

import numpy as np
import pytest

from rankloss_lab.analysis import long_run


def test_block_median_slope_ignores_step_peaks():
    """A 2 MiB / 1,000 iterations trend under 30 MiB peaks every 8th
    iteration: the per-iteration fit is swayed, the block medians not."""
    it = np.arange(2000)
    rss = 600 + 0.002 * it + 30.0 * (it % 8 == 7) * (it > 1400)
    assert abs(long_run.slope_per_1000(rss, 1000, 8) - 2.0) < 1e-6
    assert long_run.slope_per_1000(rss, 1000) > 5  # 7.5


@pytest.mark.slow
def test_short_run_and_analyse(tmp_path):
    out = tmp_path / 'run.json'
    result = long_run.main([
        '--iters', '8', '--num-trainval', '8', '--data-root',
        str(tmp_path / 'VOCdevkit'), '--work-dir',
        str(tmp_path / 'work'), '--out',
        str(out), '--block', '2'
    ])
    assert result['iterations'] == 8
    saved = json.loads(out.read_text())
    assert len(saved['rss_mib']) == len(saved['step_ms']) == 8
    assert all(v > 100 for v in saved['rss_mib'])  # MiB of a real process
    again = long_run.main(['--analyse', str(out), '--block', '2'])
    assert again['rss_block_median_slope_mib_per_1000_iters'] == result[
        'rss_block_median_slope_mib_per_1000_iters']
