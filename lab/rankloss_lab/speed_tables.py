"""The GPU speed section of ``docs/losses.md``, generated from a JSON.

The section lies between ``<!-- speed-table: gpu -->`` and
``<!-- /speed-table -->`` and is what :func:`speed_section` makes of the
first JSON of :data:`SPEED_JSONS` that exists: a speed run
(``benchmark_rank_losses.py --speed-run``, format
:data:`rankloss_lab.speed_run.FORMAT`) or, before one exists, the earlier
``benchmark_rank_losses.py --devices cuda`` JSON (its AP-loss rows and
per-step rows). ``benchmark_rank_losses.py --docs write`` rewrites the
section, ``--docs check`` exits 1 when it is stale; a test compares them.
"""
import json
import os.path as osp
import re
from typing import Dict, List, Optional, Tuple

from rankloss_lab.paths import ROOT

DOC = 'docs/losses.md'
#: Candidates, the first that exists is the source: a speed run first.
SPEED_JSONS = ('docs/evidence/gpu/speed_run.json',
               'docs/evidence/gpu/benchmark_rank_losses_cuda_h200.json')
MARKER = re.compile(r'(<!-- speed-table: gpu -->\n)(?P<body>.*?)'
                    r'(<!-- /speed-table -->)', re.S)

__all__ = ['DOC', 'SPEED_JSONS', 'MARKER', 'source_json', 'speed_section',
           'render_doc', 'update_doc', 'paper_line']


def source_json(root: str = ROOT) -> Tuple[str, dict]:
    """(path from the root, content) of the section's JSON."""
    for rel in SPEED_JSONS:
        path = osp.join(root, rel)
        if osp.isfile(path):
            with open(path, encoding='utf-8') as f:
                return rel, json.load(f)
    raise FileNotFoundError(f'none of {SPEED_JSONS} exists')


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f'{ms:.2f} ms' if ms < 1 else f'{ms:.1f} ms'


def _pct(share: float) -> str:
    return f'{100 * share:.1f} %'


def _cell(text: str) -> str:
    return text.replace('|', '/').replace('\n', ' ')


def _failed(row: dict) -> Optional[str]:
    return _cell(f"failed: {row['error']}") if 'error' in row else None


def speed_section(result: dict, link: str) -> str:
    """The section's markdown for a speed run or an earlier benchmark JSON;
    ``link``: the JSON's path as the doc links it."""
    if str(result.get('format', '')).startswith('speed-run/'):
        return '\n'.join(_speed_run_lines(result, link)) + '\n'
    return '\n'.join(_benchmark_lines(result, link)) + '\n'


# --- an earlier ``--devices cuda`` benchmark JSON ----------------------------


def _benchmark_lines(result: dict, link: str) -> List[str]:
    settings = [k for k in result['ap'] if k.startswith('CUDA')] or \
        list(result['ap'])
    lines = []
    for setting in settings:
        rows = result['ap'][setting]
        runs = rows[0]['ours']['runs']
        lines += [
            f"On {result['machine']} ("
            f"{'' if setting.startswith('CUDA') else setting + '; '}"
            f'`benchmark_rank_losses.py --devices cuda`, medians of {runs}, '
            f'[JSON]({link})), the RaMBO AP loss (10 % positives, margin '
            '0.15, lambda 0.5), forward + backward:', '',
            '| length | torch.sort | ours | sort-equivalents | naive Alg. 1 '
            '| naive / ours |', '|---:|---:|---:|---:|---:|---:|']
        for r in rows:
            naive = _ms(r['naive']['median_s']) if 'naive' in r else 'not run'
            ratio = f"{r['naive_over_ours']:.2f}x" if 'naive' in r else '-'
            lines.append(
                f"| {r['length']:,} | {_ms(r['sort']['median_s'])} "
                f"| {_ms(r['ours']['median_s'])} | {r['ours_over_sort']:.1f} "
                f'| {naive} | {ratio} |')
        faster = [f"{r['length']:,}" for r in rows
                  if r.get('naive_over_ours', 1) < 1]
        lines += ['', 'Ours costs '
                  f"{min(r['ours_over_sort'] for r in rows):.0f} to "
                  f"{max(r['ours_over_sort'] for r in rows):.0f} "
                  '`torch.sort`s of the same length; the naive version is '
                  'faster than ours at ' +
                  (' and '.join(faster) or 'no length') + ' scores.', '']
    step_rows = result.get('detection', []) + result.get('retrieval', [])
    if step_rows:
        lines += ['Per training step on that GPU, forward + backward:', '',
                  '| loss | time |', '|---|---:|']
        lines += [f"| {r['name']} | {_ms(r['median_s'])} |"
                  for r in step_rows]
        lines.append('')
    return lines


# --- a speed run -------------------------------------------------------------


def _speed_run_lines(result: dict, link: str) -> List[str]:
    lines = [
        f"Speed run on {result['device_name']} (mmdet_rankloss "
        f"{result['version']}, torch {result['torch']}, CUDA "
        f"{result.get('cuda') or 'none'}, {result['date']}; "
        "`benchmark_rank_losses.py "
        f"--speed-run`, medians of {result['repeats']}, [JSON]({link})), "
        'forward + backward. Lengths: N(0, 1) fp32 scores; the RaMBO AP '
        'loss and naive Algorithm 1 with 10 % positives, the error-driven '
        'losses and the bucketed peers with 500.', '']
    lines += _length_lines(result)
    lines += _per_step_lines(result)
    lines += _share_lines(result)
    lines += _amp_lines(result)
    lines += _skipped_lines(result)
    return lines


def _length_lines(result: dict) -> List[str]:
    rows = result.get('lengths', [])
    by_key: Dict[str, Dict[int, dict]] = {}
    for r in rows:
        if 'loss' in r:
            by_key.setdefault(r['loss'], {})[r['length']] = r
    lengths = sorted({r['length'] for r in rows if 'length' in r})
    if not lengths:
        return ['No length was timed.', '']
    sort = by_key.get('sort', {})
    lines = ['| loss | ' + ' | '.join(f'{n:,}' for n in lengths) + ' |',
             '|---|' + '---:|' * len(lengths),
             ]
    for key, label in result['length_losses'].items():
        cells = []
        for n in lengths:
            r = by_key.get(key, {}).get(n)
            if r is None:
                cells.append('not run')
            elif 'error' in r:
                cells.append(_failed(r))
            elif key != 'sort' and n in sort and 'median_s' in sort[n]:
                cells.append(f"{_ms(r['median_s'])} "
                             f"({r['median_s'] / sort[n]['median_s']:.1f} "
                             'sorts)')
            else:
                cells.append(_ms(r['median_s']))
        lines.append(f'| {label} | ' + ' | '.join(cells) + ' |')
    lines += ['', _bucketed_line(by_key, lengths), '',
              paper_line(result['paper_numbers']), '']
    return lines


def _ratio(by_key, a: str, b: str, n: int) -> str:
    ra, rb = by_key.get(a, {}).get(n, {}), by_key.get(b, {}).get(n, {})
    if 'median_s' not in ra or 'median_s' not in rb:
        return 'not run'
    return f"{ra['median_s'] / rb['median_s']:.2f}"


def _bucketed_line(by_key, lengths: List[int]) -> str:
    at = ' / '.join(f'{n:,}' for n in lengths)
    return (f'Bucketed peer over ours at {at} scores: Rank & Sort ' +
            ' / '.join(_ratio(by_key, 'rs_bucketed', 'rs', n)
                       for n in lengths) + '; AP-Loss ' +
            ' / '.join(_ratio(by_key, 'ap_loss_bucketed', 'ap_loss', n)
                       for n in lengths) + ' (below 1: the peer is faster).')


def paper_line(paper: dict) -> str:
    """The bucketed paper's numbers (a speed run's ``paper_numbers``),
    labelled as paper numbers."""
    label = paper.get('label', 'paper numbers')
    return (label[0].upper() + label[1:] + ' (' + paper['source'] + '), '
            'training seconds per iteration, unbucketed -> bucketed: ' +
            '; '.join(f'{k} {a:.2f} -> {b:.2f}' for k, (a, b) in
                      paper['seconds_per_iter'].items()) + '.')


def _per_step_lines(result: dict) -> List[str]:
    amp = {r['name'][:-len(', AMP')]: r for r in result.get('amp', [])
           if r['name'].endswith(', AMP')}
    lines = ['Per training step, one call of each loss:', '',
             '| loss | forward + backward | under AMP (fp16 autocast, '
             'GradScaler) | AMP gradient finite |', '|---|---:|---:|---|']
    for r in result.get('per_step', []):
        a = amp.get(r['name'], {})
        lines.append(
            f"| {r['name']} | {_failed(r) or _ms(r['median_s'])} "
            f"| {_failed(a) or (_ms(a['median_s']) if a else 'not run')} "
            f"| {a.get('grad_finite', '-') if 'error' not in a else '-'} |")
    return lines + ['']


def _shares(row: dict) -> str:
    return ', '.join(f'`{name}` {_pct(share)}'
                     for name, share in row['share_of_step'].items())


def _share_lines(result: dict) -> List[str]:
    compiled = {(r.get('detector'), r.get('loss')): r
                for r in result.get('step_share_compile', [])}
    lines = [
        'Share of a training step (2 random images, SGD; random weights) '
        'spent in the classification losses, forward + backward on the '
        "step's own scores; compiled: the losses' `forward` under "
        '`torch.compile` (the rest eager):', '',
        '| detector | loss | step | loss shares | step, losses compiled '
        '| loss shares, compiled |', '|---|---|---:|---|---:|---|']
    for r in result.get('step_share', []):
        c = compiled.get((r.get('detector'), r.get('loss')))
        if c is None:
            c_step, c_share = 'not run', '-'
        elif 'error' in c:
            c_step, c_share = _failed(c), '-'
        else:
            c_step, c_share = _ms(c['step_s']), _shares(c)
        if 'error' in r:
            lines.append(f"| {r['detector']} | {r['loss']} | {_failed(r)} "
                         f'| - | {c_step} | {c_share} |')
            continue
        lines.append(f"| {r['detector']} | {r['loss']} | {_ms(r['step_s'])} "
                     f'| {_shares(r)} | {c_step} | {c_share} |')
    return lines + ['']


def _amp_lines(result: dict) -> List[str]:
    rows = [r for r in result.get('amp', []) if r['name'].endswith('step')]
    lines = ['Training steps under AMP (fp16 autocast, GradScaler, as '
             '`--amp`), with the configs\' `RankLogitsFp32Hook`:', '',
             '| detector | loss | AMP step | losses finite | final scale |',
             '|---|---|---:|---|---:|']
    for r in rows:
        if 'error' in r:
            lines.append(f"| {r['detector']} | {r['loss']} | {_failed(r)} "
                         '| - | - |')
            continue
        lines.append(f"| {r['detector']} | {r['loss']} | {_ms(r['step_s'])} "
                     f"| {r['loss_finite']} | {r['grad_scale']:g} |")
    return lines + ['']


def _skipped_lines(result: dict) -> List[str]:
    skipped = result.get('skipped', [])
    spent = (f"{result.get('elapsed_s', 0):.0f} s of a "
             f"{result['budget_s']:.0f} s budget")
    if not skipped:
        return [f'Everything ran ({spent}).', '']
    return [f'Not run, past the time budget ({spent}): ' + '; '.join(
        f"{s['section']}: {s['name']}" for s in skipped) + '.', '']


# --- the doc -----------------------------------------------------------------


def render_doc(text: str, section: str) -> str:
    """``text`` with the marked section replaced by ``section``."""
    if not MARKER.search(text):
        raise ValueError(f'{DOC} has no <!-- speed-table: gpu --> marker')
    return MARKER.sub(lambda m: m.group(1) + section + m.group(3), text)


def update_doc(root: str = ROOT, write: bool = False) -> bool:
    """Whether the doc's section is what the JSON gives; with ``write``,
    makes it so. Returns True when it was already up to date."""
    rel, result = source_json(root)
    link = osp.relpath(osp.join(root, rel), osp.join(root, osp.dirname(DOC)))
    path = osp.join(root, DOC)
    with open(path, encoding='utf-8') as f:
        old = f.read()
    new = render_doc(old, speed_section(result, link))
    if new != old and write:
        with open(path, 'w', encoding='utf-8') as f:
            f.write(new)
    return new == old
