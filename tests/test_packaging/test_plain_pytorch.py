"""The losses without MMDetection: README's "Plain PyTorch" snippet runs.

One subprocess runs the snippet, extracted from README.md, with a
``sys.meta_path`` finder installed first that refuses ``mmdet``, ``mmcv``
and ``mmengine`` (installed in this environment), then reports what was
imported and what the training did. The same snippet with its loops cut
to no step, from the same seed, gives the untrained models: the trained
ones must rank better, by a brute-force AP and Recall@1 (independent of
the losses). The report also carries what registers without MMDetection,
compared here with what registers in MMDetection's registries.
"""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import mmdet_rankloss  # noqa: F401  (registers in MMDetection's registries)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BLOCKED = ('mmdet', 'mmcv', 'mmengine')
BLOCK = re.compile(r'```python\n(.*?)```', re.S)


def readme_snippet():
    """The first Python block after README's "Plain PyTorch" lead-in."""
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        text = f.read()
    start = text.find('**Plain PyTorch.**')
    assert start >= 0, 'README.md has no "**Plain PyTorch.**" paragraph'
    match = BLOCK.search(text, start)
    assert match, 'no Python block after "**Plain PyTorch.**"'
    return match.group(1)


PRELUDE = textwrap.dedent('''
    import sys

    BLOCKED = {blocked!r}
    assert not [m for m in sys.modules if m.split('.')[0] in BLOCKED]


    class Refuse:
        """Every import of a blocked top-level name fails, as if it were
        not installed."""

        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] in BLOCKED:
                raise ModuleNotFoundError(
                    f'No module named {{name!r}} (blocked)', name=name)
            return None


    sys.meta_path.insert(0, Refuse())
''')

EPILOGUE = textwrap.dedent('''
    import json

    import torch
    import torch.nn.functional as F

    import mmdet_rankloss
    from mmdet_rankloss.losses import MixedRankLoss, RaMBOAPLoss
    from mmdet_rankloss.losses import SoftRankThresholdLoss
    from mmdet_rankloss.optional_mmdet import HOOKS, MODELS
    # the torch-only parts: losses and ops above, the metric functions
    from mmdet_rankloss.evaluation import (
        fit_platt, localisation_aware_ece, lrp_match, lrp_optimal_thresholds,
        map_at_r, optimal_lrp, recall_at_k)

    report = dict(has_mmdet=mmdet_rankloss.HAS_MMDET)
    report['loaded'] = sorted(
        m for m in sys.modules if m.split('.')[0] in BLOCKED)
    report['refused'] = []
    for name in BLOCKED:
        try:
            __import__(name)
        except ModuleNotFoundError:
            report['refused'].append(name)


    def run_snippet(code):
        torch.manual_seed(0)
        scope = {}
        exec(compile(code, 'README.md', 'exec'), scope)
        return scope


    def mean_ap(scores, relevant):
        """Brute force: mean over queries of the precision at each
        relevant item's place in the descending order."""
        aps = []
        for row, rel in zip(scores.tolist(), relevant.tolist()):
            order = sorted(range(len(row)), key=lambda i: -row[i])
            hits, precisions = 0, []
            for place, i in enumerate(order, 1):
                if rel[i]:
                    hits += 1
                    precisions.append(hits / place)
            if precisions:
                aps.append(sum(precisions) / len(precisions))
        return sum(aps) / len(aps)


    def recall_at_1(embeddings, classes):
        """Brute force: the share of items whose most similar other item
        has their class."""
        x, y = embeddings.tolist(), classes.tolist()
        hits = 0
        for i in range(len(x)):
            sims = [(sum(a * b for a, b in zip(x[i], x[j])), j)
                    for j in range(len(x)) if j != i]
            hits += y[max(sims)[1]] == y[i]
        return hits / len(x)


    def quality(scope):
        with torch.no_grad():
            scores = scope['scorer'](scope['items']).squeeze(-1)
            embeddings = F.normalize(scope['embedder'](scope['images']), dim=1)
        return dict(ap=mean_ap(scores, scope['relevant']),
                    r1=recall_at_1(embeddings, scope['classes']))


    trained = run_snippet(SNIPPET)
    untrained = run_snippet(UNTRAINED)
    report['same_data'] = all(
        torch.equal(trained[k], untrained[k])
        for k in ('items', 'relevant', 'images', 'classes'))
    report['trained'], report['untrained'] = quality(trained), quality(
        untrained)
    report['loss_is_finite'] = bool(torch.isfinite(trained['loss']))

    # Without MMDetection: the losses' own registry builds a ranker by
    # name; the SRT loss counts its own calls (no runner); MixedRankLoss
    # (an MMDetection loss inside) names the install.
    report['models'], report['hooks'] = sorted(MODELS._module_dict), sorted(
        HOOKS._module_dict)
    ranker = RaMBOAPLoss(ranker=dict(type='SigmoidRanker')).ranker
    report['ranker'] = type(ranker).__name__
    srt = SoftRankThresholdLoss(hard_weight=0.5, hard_warmup_iters=2)
    report['srt_iters'] = []
    for _ in range(3):
        report['srt_iters'].append(srt.current_iter())
        srt(F.normalize(torch.randn(8, 4), dim=1), torch.arange(4).repeat(2))
    try:
        MixedRankLoss(rank_loss=dict(type='RaMBOAPLoss'))
    except ImportError as error:
        report['mixed_error'] = str(error)
    report['loaded_at_end'] = sorted(
        m for m in sys.modules if m.split('.')[0] in BLOCKED)
    print(json.dumps(report))
''')


@pytest.fixture(scope='module')
def report(tmp_path_factory):
    snippet = readme_snippet()
    untrained, cuts = re.subn(r'\brange\(\d+\)', 'range(0)', snippet)
    assert cuts == 2, 'the snippet should have two training loops'
    code = (PRELUDE.format(blocked=BLOCKED) +
            f'SNIPPET = {snippet!r}\nUNTRAINED = {untrained!r}\n' + EPILOGUE)
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONNOUSERSITE='1')
    proc = subprocess.run([sys.executable, '-c', code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_nothing_of_mmdetection_is_imported(report):
    assert report['refused'] == list(BLOCKED)  # the finder does refuse
    assert report['loaded'] == [] and report['loaded_at_end'] == []
    assert report['has_mmdet'] is False


@pytest.mark.slow
def test_the_snippet_trains_both_models(report):
    assert report['same_data'] and report['loss_is_finite']
    trained, untrained = report['trained'], report['untrained']
    assert trained['ap'] > untrained['ap'] + 0.05, report
    assert trained['r1'] > untrained['r1'] + 0.1, report


@pytest.mark.slow
def test_the_same_losses_register_without_mmdetection(report):
    from mmdet.registry import HOOKS, MODELS

    def ours(registry):
        return sorted(
            name for name, cls in registry.module_dict.items()
            if cls.__module__.startswith('mmdet_rankloss.losses.'))

    assert report['models'] == ours(MODELS)
    assert report['hooks'] == ours(HOOKS) == ['ALRPSelfBalanceHook']


@pytest.mark.slow
def test_the_losses_work_without_a_runner(report):
    assert report['ranker'] == 'SigmoidRanker'
    assert report['srt_iters'] == [0, 1, 2]


@pytest.mark.slow
def test_an_mmdetection_bound_loss_names_the_install(report):
    assert 'MixedRankLoss needs MMDetection' in report['mixed_error']
    assert "pip install '.[mmdet]'" in report['mixed_error']
