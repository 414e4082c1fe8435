"""The GPU speed section of ``docs/losses.md`` (the evidence table
``speed`` of ``tools/analysis_tools/evidence_tables.py``): what
:func:`speed_section` makes of the speed run's JSON at :data:`SPEED_JSON`
(``tools/analysis_tools/benchmark_rank_losses.py``), or a paragraph saying
that none exists; each table's header names the GPU, date and version.
"""
import json
import os.path as osp
from typing import Dict, List, Optional

from rankloss_lab.paths import ROOT

#: The GPU speed run the docs show.
SPEED_JSON = 'docs/evidence/gpu/speed_run.json'
#: The command that writes it, on a machine with a GPU.
SPEED_RUN_COMMAND = ('python tools/analysis_tools/benchmark_rank_losses.py '
                     '--out docs/evidence/gpu/speed_run')

__all__ = ['SPEED_JSON', 'SPEED_RUN_COMMAND', 'speed_table',
           'speed_section', 'paper_line']


def speed_table(doc_dir: str = '.', root: str = ROOT) -> str:
    """The section for a doc in ``doc_dir`` (links relative to it)."""
    path = osp.join(root, SPEED_JSON)
    if not osp.isfile(path):
        return ('No speed run on a GPU is recorded '
                f'(`{SPEED_JSON}` does not exist), so this section shows no '
                'GPU times. On a machine with a GPU, '
                f'`{SPEED_RUN_COMMAND}` writes it and '
                '`python tools/analysis_tools/evidence_tables.py --write` '
                'puts its tables here.\n')
    with open(path, encoding='utf-8') as f:
        result = json.load(f)
    return speed_section(result, osp.relpath(path, osp.join(root, doc_dir)))


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f'{ms:.2f} ms' if ms < 1 else f'{ms:.1f} ms'


def _pct(share: float) -> str:
    return f'{100 * share:.1f} %'


def _cell(text: str) -> str:
    return text.replace('|', '/').replace('\n', ' ')


def _failed(row: dict) -> Optional[str]:
    """A row's failure or why its time does not count; None if valid."""
    if 'error' in row:
        where = f" ({row['where'][-1]})" if row.get('where') else ''
        return _cell(f"failed: {row['error']}{where}")
    if 'invalid' in row:
        return _cell(f"invalid: {row['invalid']}")
    return None


def _stamp(result: dict) -> str:
    return (f"{result['device_name']}, {result['date'][:10]}, "
            f"mmdet_rankloss {result['version']}")


def speed_section(result: dict, link: str) -> str:
    """The section's markdown; ``link``: the JSON's path from the doc."""
    return '\n'.join(_speed_run_lines(result, link)) + '\n'


def _speed_run_lines(result: dict, link: str) -> List[str]:
    lines = [
        f"Speed run on {result['device_name']} (mmdet_rankloss "
        f"{result['version']}, torch {result['torch']}, CUDA "
        f"{result.get('cuda') or 'none'}, {result['threads']} CPU threads, "
        f"{result['date']}; `benchmark_rank_losses.py`, medians of "
        f"{result['repeats']}, [JSON]({link})), "
        'forward + backward, each item in a worker process of its own '
        'or shared. Lengths: N(0, 1) fp32 scores; the RaMBO AP '
        'loss and naive Algorithm 1 with 10 % positives, the error-driven '
        'losses and the bucketed peers with 500.', '']
    lines += _target_lines(result)
    ran = result.get('sections') or ('lengths', 'per_step', 'step_share',
                                     'amp')  # the sections asked for
    for section, table in (('lengths', _length_lines),
                           ('per_step', _per_step_lines),
                           ('step_share', _share_lines), ('amp', _amp_lines)):
        if section in ran:
            lines += table(result)
    return lines + _skipped_lines(result)


def _target_lines(result: dict) -> List[str]:
    lines = [f'| target ({_stamp(result)}) | rows | passed | verdict |',
             '|---|---:|---:|---|']
    lines += [f"| {t['text']} | {t['rows']} | {t['passed']} "
              f"| {t['verdict']} |" for t in result.get('targets', [])]
    return lines + ['']


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
    lines = [f'| loss ({_stamp(result)}) | ' +
             ' | '.join(f'{n:,}' for n in lengths) + ' |',
             '|---|' + '---:|' * len(lengths)]
    for key, label in result['length_losses'].items():
        cells = []
        for n in lengths:
            r = by_key.get(key, {}).get(n)
            cells.append(_time(r))
            if (r and not _failed(r) and key != 'sort' and
                    'median_s' in sort.get(n, {})):
                cells[-1] += (f" ({r['median_s'] / sort[n]['median_s']:.1f}"
                              ' sorts)')
        lines.append(f'| {label} | ' + ' | '.join(cells) + ' |')
    return lines + ['', _bucketed_line(by_key, lengths), '',
                    paper_line(result['paper_numbers']), '']


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
    """The bucketed paper's numbers (``paper_numbers``), labelled so."""
    label = paper.get('label', 'paper numbers')
    return (label[0].upper() + label[1:] + ' (' + paper['source'] + '), '
            'training seconds per iteration, unbucketed -> bucketed: ' +
            '; '.join(f'{k} {a:.2f} -> {b:.2f}' for k, (a, b) in
                      paper['seconds_per_iter'].items()) + '.')


def _time(row: Optional[dict], key: str = 'median_s') -> str:
    return 'not run' if not row else _failed(row) or _ms(row[key])


def _per_step_lines(result: dict) -> List[str]:
    amp = {r['case']: r for r in result.get('amp', []) if 'case' in r}
    compiled = {r['case']: r for r in result.get('per_step_compile', [])}
    lines = ['Per training step, one call of each loss:', '',
             f'| loss ({_stamp(result)}) | forward + backward | compiled '
             '| under AMP (fp16 autocast, GradScaler) '
             '| AMP gradient finite |', '|---|---:|---:|---:|---|']
    for r in result.get('per_step', []):
        a, c = amp.get(r['case']), compiled.get(r['case'])
        lines.append(
            f"| {r['name']} | {_time(r)} | {_time(c) if c else '-'} "
            f"| {_time(a) if a else '-'} "
            f"| {a.get('grad_finite', '-') if a else '-'} |")
    roi = amp.get('roi_align')
    if roi and not _failed(roi):
        lines += ['', f"mmcv `RoIAlign` under fp16 autocast ({roi['rois']} "
                  f"fp16 RoIs, fp16 features {roi['feature_shape']}): "
                  f"{_ms(roi['median_s'])} forward + backward, output "
                  f"{roi['out_dtype']}, largest difference to float32 "
                  f"{roi['max_rel_diff']:.1e} of the largest output, "
                  f"gradient finite: {roi['grad_finite']}."]
    elif roi:
        lines += ['', f'mmcv `RoIAlign` under fp16 autocast: {_failed(roi)}.']
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
        '`torch.compile` (the rest eager), timed after the calls that '
        'compile:', '',
        f'| detector ({_stamp(result)}) | loss | step | loss shares '
        '| step, losses compiled | loss shares, compiled |',
        '|---|---|---:|---|---:|---|']
    for r in result.get('step_share', []):
        c = compiled.get((r.get('detector'), r.get('loss')))
        c_step = _time(c, 'step_s') if c is not None else '-'
        c_share = _shares(c) if c is not None and not _failed(c) else '-'
        share = '-' if _failed(r) else _shares(r)
        lines.append(f"| {r['detector']} | {r['loss']} "
                     f"| {_time(r, 'step_s')} | {share} | {c_step} "
                     f'| {c_share} |')
    return lines + ['']


def _amp_lines(result: dict) -> List[str]:
    rows = [r for r in result.get('amp', []) if 'detector' in r]
    lines = ['Training steps under AMP (fp16 autocast, GradScaler, as '
             "`--amp`), with the configs' `RankLogitsFp32Hook`; RoIAlign: "
             "the dtypes of the features / RoIs that mmcv's `RoIAlign` got:",
             '', f'| detector ({_stamp(result)}) | loss | AMP step '
             '| losses finite | final scale | RoIAlign |',
             '|---|---|---:|---|---:|---|']
    for r in rows:
        if _failed(r):
            lines.append(f"| {r['detector']} | {r['loss']} | {_failed(r)} "
                         '| - | - | - |')
            continue
        lines.append(f"| {r['detector']} | {r['loss']} | {_ms(r['step_s'])} "
                     f"| {r['loss_finite']} | {r['grad_scale']:g} "
                     f"| {', '.join(r.get('roi_align_inputs', [])) or '-'} |")
    return lines + ['']


def _skipped_lines(result: dict) -> List[str]:
    skipped = result.get('skipped', [])
    spent = (f"{result.get('elapsed_s', 0):.0f} s of a "
             f"{result['budget_s']:.0f} s budget")
    if not skipped:
        return [f'Everything ran ({spent}).', '']
    return [f'Not run, past the time budget ({spent}): ' + '; '.join(
        f"{s['section']}: {s['name']}" for s in skipped) + '.', '']
