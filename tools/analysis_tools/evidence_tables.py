#!/usr/bin/env python
"""Markdown tables of the study reports, kept in the docs between markers.

    python tools/analysis_tools/evidence_tables.py [--write | --check]

A table ``NAME`` of ``TABLES`` lives in ``README.md`` or ``docs/*.md``
between ``<!-- evidence-table: NAME -->`` and ``<!-- /evidence-table -->``.
Without options it prints the tables; ``--write`` rewrites them, the
metafiles' ``Results``, the config READMEs and ``docs/images/
results_ap50.png`` with its JSON (the PNG's ``Comment`` holds the JSON's
SHA-256); ``--check`` prints a diff of each stale file and exits 1.
"""
import argparse
import difflib
import glob
import hashlib
import json
import os
import os.path as osp
import re
import sys
from typing import Callable, Dict, List, Optional, Tuple

from rankloss_lab import (claims, metafile_results, speed_tables, stats,
                          thresholds, verdict)
from rankloss_lab.results import (EVIDENCE, RESULTS, read_csv, study_rows,
                                  test_values)
from rankloss_lab.runner import read_json, read_text

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))

QUICKSTART_JSON = metafile_results.QUICKSTART_JSON
MARKER = re.compile(
    r'(<!-- evidence-table: (?P<name>[\w-]+) -->\n)(?P<body>.*?)'
    r'(<!-- /evidence-table -->)', re.S)


def _rel(path: str, doc_dir: str) -> str:
    """``path`` (from the repository root) as seen from ``doc_dir``."""
    return osp.relpath(osp.join(ROOT, path),
                       osp.join(ROOT, doc_dir)).replace(osp.sep, '/')


def _link(path: str, doc_dir: str) -> str:
    return f'[`{osp.basename(path)}`]({_rel(path, doc_dir)})'


def _shared_threshold(block: dict) -> Optional[float]:
    """The test score threshold of every row of a block, or None where
    the rows differ or record none."""
    thr = thresholds.test_thresholds(block['study'])
    values = {thr.get(method) for method, *_ in block['rows']}
    return None if len(values) != 1 else values.pop()


def _difference(block: dict, label: str, values: Dict[int, float],
                base: Dict[int, float]) -> str:
    """The paired difference cell of a row; no interval where a side is
    bimodal."""
    pair = stats.paired_difference(values, base)
    if pair is None:  # under two paired seeds: no difference yet
        return f'- vs {block["baseline_label"]}'
    mixed = stats.bimodal_texts({0: [values[s] for s in pair['seeds']],
                                 1: [base[s] for s in pair['seeds']]})
    if mixed:  # an interval over zeros and tens is no result
        names = (label, block['baseline_label'])
        rank = stats.signed_rank_test(pair['diffs'])
        return (f'{100 * pair["mean"]:+.1f} vs {block["baseline_label"]}, '
                'no interval: bimodal (' + '; '.join(
                    f'{names[side]}: {text}'
                    for side, text in mixed.items()) + '), exact '
                f'signed-rank p {rank:.4f} (two-sided)')
    return f'{stats.ci_text(pair)} vs {block["baseline_label"]}'


def _pre_registered(block: dict, method: str) -> Optional[dict]:
    """The study's pre-registered comparison of ``method`` against the
    block's baseline on the block's metric, or None."""
    path = osp.join(ROOT, EVIDENCE, f'{block["study"]}_comparisons.csv')
    if not osp.isfile(path):
        return None
    header = read_csv(osp.join(ROOT, EVIDENCE, f'{block["study"]}.csv'))[0]
    column = block['metric'] or 'test_ap50'
    for r in read_csv(path):
        # a hypothesis on the study's main metric has no column of its own
        own = f'test_{r.get("metric")}'
        if (r['family'] == 'pre-registered' and r['method'] == method
                and r['baseline'] == block['baseline']
                and (own if own in header else 'test_ap50') == column):
            return r
    return None


def _selected_and_tested(rows: List[dict], methods: List[str],
                         tested: Dict[int, float]) -> List[int]:
    """Test seeds that also ran the lr selection of one of ``methods``
    (a grid run at another lr)."""
    grid = {int(r['seed']) for r in rows
            if r['method'] in methods and r['selected_lr'] == 'False'}
    return sorted(grid & set(tested))


def _label(block: dict, rows: List[dict], method: str,
           values: Dict[int, float], base: Dict[int, float],
           family: Dict[tuple, float]) -> str:
    """How a row's comparison stands: pre-registered (its corrected
    interval, Holm p within its study and over all, its verdict) or
    exploratory; and the test seeds that also selected the lr."""
    r = _pre_registered(block, method)
    if r is None:
        text = ('' if 'exploratory' in block['baseline_label']
                else '; exploratory')
    else:
        low, high = (float(r[k]) for k in ('bonferroni_low',
                                            'bonferroni_high'))
        p_all = family[block['study'], r['id']]
        passed = r['significant_holm'] == 'True'
        seeds = sorted(set(values) & set(base))
        verdict_word = (
            'bimodal: no finding from its t-test'
            if stats.bimodal_texts({0: [values[x] for x in seeds],
                                    1: [base[x] for x in seeds]}) else
            'confirmed' if passed and p_all <= 0.05 else
                        'confirmed within its study, failed the correction '
                        'over all' if passed else 'failed its correction')
        corrected = ('' if verdict_word.startswith('bimodal') else
                     f' corrected {stats.bounds_text(low, high)} '
                     f'({r["m"]} tests),')
        text = (f'; pre-registered {r["id"]},{corrected} Holm p '
                f'{float(r["p_holm"]):.4f}'
                f' within its study, {p_all:.4f} over all {len(family)}: '
                f'{verdict_word}')
    both = _selected_and_tested(rows, [method, block['baseline']], values)
    if both:
        text += (f'; seed{"s" if len(both) > 1 else ""} '
                 f'{", ".join(map(str, both))} both selected the lr and '
                 f'{"were" if len(both) > 1 else "was"} tested')
    return text


def results_table(doc_dir: str = '.') -> str:
    """The results of every study block; links relative to ``doc_dir``."""
    lines = ['| loss: config | data | protocol | seeds | AP50 / R@1 (%), '
             'mean ± sd | paired difference vs baseline [95 % CI] |',
             '|---|---|---|---|---|---|']
    family = claims.family_holm(osp.join(ROOT, EVIDENCE))
    for block in RESULTS:
        path = osp.join(ROOT, EVIDENCE, f'{block["study"]}.csv')
        rows = read_csv(path)
        base = test_values(rows, block['baseline'], block['metric'])
        if not base:
            raise ValueError(f'{path}: no test rows for the baseline '
                             f'{block["baseline"]!r}')
        report = _rel(f'{EVIDENCE}/{block["study"]}.md', doc_dir)
        protocol, shared = block['protocol'], _shared_threshold(block)
        if shared is not None:
            protocol += f', tested at score_thr {shared:g}'
        for method, label, config, change in block['rows']:
            values = test_values(rows, method, block['metric'])
            if not values:
                raise ValueError(f'{path}: no test rows for {method!r}')
            if method == block['baseline']:
                diff = 'baseline'
                floor = stats.collapse_floor(*(
                    list(test_values(rows, m, block['metric']).values())
                    for m, *_ in block['rows']))
            elif method in block.get('untuned', []):
                diff = ('no comparison: below raw pixels with its margin '
                        'not searched, a failed baseline setup')
                floor = stats.collapse_floor(list(values.values()))
            else:
                diff = _difference(block, label, values, base)
                diff += _label(block, rows, method, values, base, family)
                floor = stats.collapse_floor(list(values.values()),
                                             list(base.values()))
            if shared is None:
                thr = thresholds.thresholds_text(
                    block['study'], method, block['baseline'], labels={
                        method: _plain(label),
                        block['baseline']: block['baseline_label']})
                if method == block['baseline'] or ' and ' not in thr:
                    thr = thresholds.thresholds_text(block['study'], method)
                elif method not in block.get('untuned', []):
                    thr += f': {verdict.UNEQUAL}'
                diff += f'; {thr}' if thr else ''
            if (block['study'], method) in \
                    metafile_results.LOSS_VERSION_NOTES:
                label += ' (not the shipped loss)'
            cell = f'{label}: {_link(config, doc_dir)}' + (
                f' with {change}' if change else '')
            lines.append(
                f'| {cell} | {block["data"]} | {protocol} '
                f'([report]({report})) | '
                f'{len(values)} ({metafile_results.seeds_text(values)}) | '
                f'{stats.mean_std_trained_text(list(values.values()), floor)}'
                f' | {diff} |')
    return '\n'.join(lines) + '\n'


def _cell(value, fmt: str) -> str:
    return '-' if value is None else format(value, fmt)


def quickstart_table(doc_dir: str = '.',
                     path: Optional[str] = None) -> Optional[str]:
    """The quickstart's results, or None while its JSON does not exist."""
    path = path or osp.join(ROOT, QUICKSTART_JSON)
    data = read_json(path)
    if data is None:
        return None
    lines = ['| model | loss | config | lr | AP50 (%) | train time (s) | '
             'boxes per image at score 0.3 | objects per image |',
             '|---|---|---|---|---|---|---|---|']
    for row in data['rows']:
        config = '-' if not row.get('config') else _link(
            row['config'], doc_dir)
        lines.append(
            f'| {row["model"]} | {row["loss"]} | {config} | '
            f'{_cell(row.get("lr"), "g")} | {100 * row["ap50"]:.1f} | '
            f'{_cell(row.get("train_seconds"), ".0f")} | '
            f'{_cell(row.get("boxes_per_image_at_0.3"), ".1f")} | '
            f'{_cell(row.get("objects_per_image"), ".1f")} |')
    total, jobs = data.get('total_seconds'), data.get('jobs') or 1
    load = data.get('load_average')
    lines += [
        '', f'Measured on {data["machine"]}, {data["date"]}'
        + f', seed {metafile_results.QUICKSTART_SEED} for every run'
        + ('' if jobs == 1 else f', {jobs} runs at a time')
        + ('' if total is None else
           f'; the whole command took {total / 60:.1f} min')
        + ('' if not load else
           f' (load average {load[0]:g} at the start, {load[1]:g} at the '
           'end: the times grow with other work on the machine)') + '.']
    return '\n'.join(lines) + '\n'


#: The generated tables by name; the verdict's from
#: :mod:`rankloss_lab.verdict`.
TABLES: Dict[str, Callable[..., Optional[str]]] = {
    'results': results_table, 'quickstart': quickstart_table,
    'verdict': verdict.verdict_markdown,
    'verdict-tests': verdict.verdict_tests_markdown,
    'which-loss': verdict.choices_markdown,
    'speed': speed_tables.speed_table}


def generated_files(root: str = ROOT) -> Dict[str, Tuple[str, str]]:
    """``{file: (old, new)}`` of every metafile, every config folder's
    README.md and the report of every pre-registered test corrected twice
    (:func:`rankloss_lab.claims.family_markdown`)."""
    metafiles = metafile_results.metafile_updates(root)
    readmes = metafile_results.readme_updates(root, metafiles)
    family = osp.join(EVIDENCE, claims.FAMILY_REPORT)
    return {**metafiles, **readmes, family: (
        read_text(osp.join(root, family)) or '',
        claims.family_markdown(osp.join(root, EVIDENCE)))}


#: Tables named after a study: ``conditions-<study>``.
STUDY_TABLES: Dict[str, Callable[[str], str]] = dict(
    conditions=thresholds.conditions_block)


def _table(name: str) -> Optional[Callable[..., Optional[str]]]:
    if name in TABLES:
        return TABLES[name]
    kind, _, study = name.partition('-')
    if kind in STUDY_TABLES and study:
        return lambda doc_dir: STUDY_TABLES[kind](study)
    return None


def doc_files(root: str = ROOT) -> List[str]:
    """README.md, docs/*.md and the reports docs/evidence/*.md, relative
    to ``root``."""
    files = ['README.md'] + sorted(
        osp.relpath(p, root) for pattern in ('*.md', 'evidence/*.md')
        for p in glob.glob(osp.join(root, 'docs', pattern)))
    return [f for f in files if osp.isfile(osp.join(root, f))]


def markers(text: str) -> List[str]:
    """Names of the tables marked in ``text``, in order."""
    return [m.group('name') for m in MARKER.finditer(text)]


def render(text: str, doc_dir: str,
           skipped: Optional[List[str]] = None) -> str:
    """``text`` with every marked table regenerated; the names of tables
    that cannot be generated yet (no input) are appended to ``skipped``."""
    unknown = {n for n in markers(text) if _table(n) is None}
    if unknown:
        raise KeyError(f'unknown evidence tables {sorted(unknown)}; known: '
                       f'{sorted(TABLES)} and '
                       f'{[k + "-<study>" for k in STUDY_TABLES]}')
    cache: Dict[str, Optional[str]] = {}

    def replace(m):
        name = m.group('name')
        if name not in cache:
            cache[name] = _table(name)(doc_dir)
        table = cache[name]
        if table is None:
            if skipped is not None:
                skipped.append(name)
            return m.group(0)
        return m.group(1) + table + m.group(4)

    return MARKER.sub(replace, text)


def update(root: str = ROOT) -> Tuple[Dict[str, Tuple[str, str]], List[str]]:
    """``{file: (old, new)}`` for every doc with markers, and the skipped
    table names."""
    out, skipped = {}, []
    for rel in doc_files(root):
        old = read_text(osp.join(root, rel))
        if not markers(old):
            continue
        out[rel] = (old, render(old, osp.dirname(rel) or '.', skipped))
    return out, sorted(set(skipped))


# --- results plot ------------------------------------------------------------

PLOT_PNG = 'docs/images/results_ap50.png'
PLOT_JSON = 'docs/images/results_ap50.json'
_DIGEST = 'plotted data sha256 '
#: The tasks of the blocks the plot shows.
PLOTTED_TASKS = ('Object Detection', 'Instance Segmentation')


def _plain(label: str) -> str:
    return label.replace('**', '').replace('`', '')


def plot_data(root: str = ROOT) -> dict:
    """What the results plot shows: per detection or segmentation block of
    ``RESULTS``, each row's per-seed test AP50 (percent) and mean."""
    studies = []
    for block in RESULTS:
        if metafile_results.METRICS[block['metric']][0] not in PLOTTED_TASKS:
            continue
        rows = study_rows(block['study'], root)
        ordered = sorted(block['rows'],
                         key=lambda r: r[0] != block['baseline'])
        methods = []
        for method, label, config, change in ordered:
            values = test_values(rows, method, block['metric'])
            seeds = sorted(values)
            label = _plain(label) + (f' ({_plain(change)})' if change else '')
            if (block['study'], method) in \
                    metafile_results.LOSS_VERSION_NOTES:
                label += ' [0.2.0 loss]'
            methods.append(dict(
                method=method, label=label, config=config,
                baseline=method == block['baseline'], seeds=seeds,
                ap50=[round(100 * values[s], 2) for s in seeds],
                mean=round(100 * stats.mean_std(
                    [values[s] for s in seeds])[0], 2)))
        studies.append(dict(study=block['study'],
                            title=f'{block["protocol"]}',
                            report=f'{EVIDENCE}/{block["study"]}.md',
                            methods=methods))
    return dict(metric='test AP50 (%)', source=EVIDENCE, studies=studies)


def plot_json(root: str = ROOT) -> str:
    """``plot_data`` as JSON, lists of numbers on one line."""
    text = json.dumps(plot_data(root), indent=1, ensure_ascii=False)
    return re.sub(r'\[\s+([^\[\]{}"]*?)\s+\]',
                  lambda m: '[' + ' '.join(m.group(1).split()) + ']',
                  text) + '\n'


def png_digest(path: str) -> Optional[str]:
    """The data digest stored in a results plot, or None."""
    if not osp.isfile(path):
        return None
    from PIL import Image
    with Image.open(path) as im:
        comment = getattr(im, 'text', {}).get('Comment', '')
    return comment[len(_DIGEST):] if comment.startswith(_DIGEST) else None


def draw_plot(data: dict, path: str, digest: str) -> None:
    """Draws ``plot_data``'s dict into ``path`` (PNG, Agg, fixed size, no
    timestamp); ``digest`` goes into its ``Comment`` text chunk."""
    import textwrap

    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    studies = data['studies']
    heights = [len(s['methods']) + 1.2 for s in studies]
    fig, axes = plt.subplots(
        len(studies), 1, figsize=(9, 0.42 * sum(heights) + 0.6), dpi=100,
        sharex=True, gridspec_kw=dict(height_ratios=heights))
    axes = list(axes) if len(studies) > 1 else [axes]
    top = max(v for s in studies for m in s['methods'] for v in m['ap50'])
    for ax, study in zip(axes, studies):
        n = len(study['methods'])
        for i, m in enumerate(study['methods']):
            y = n - 1 - i
            color = '0.45' if m['baseline'] else f'C{i}'
            k = len(m['ap50'])
            jitter = [0.0] if k == 1 else [
                -0.18 + 0.36 * j / (k - 1) for j in range(k)]
            ax.scatter(m['ap50'], [y + d for d in jitter], s=18,
                       color=color, alpha=0.8, zorder=3, linewidths=0)
            ax.plot([m['mean'], m['mean']], [y - 0.32, y + 0.32],
                    color=color, lw=2.2, zorder=4)
            ax.text(m['mean'], y + 0.36, f'{m["mean"]:.1f}', fontsize=7,
                    ha='center', va='bottom', color=color)
        ax.set_yticks(range(n))
        ax.set_yticklabels([
            textwrap.fill(m['label'] + (' [baseline]' if m['baseline']
                                        else ''), 42)
            for m in reversed(study['methods'])], fontsize=7.5)
        ax.set_ylim(-0.6, n - 0.1)
        ax.set_title(f'{study["title"]}  ({study["study"]})', fontsize=8.5,
                     loc='left')
        ax.grid(axis='x', color='0.9', zorder=0)
        ax.set_xlim(-1, 5 * (int(top) // 5 + 1) + 1)
    axes[-1].set_xlabel(textwrap.fill(
        'test AP50 (%) on DigitsVOC, of boxes (of masks where the title '
        'says mask AP50): dots are seeds, bars are means (from '
        'docs/evidence/); [0.2.0 loss]: measured with 0.2.0\'s RS / aLRP',
        110), fontsize=8)
    fig.tight_layout()
    os.makedirs(osp.dirname(path), exist_ok=True)
    fig.savefig(path, format='png', metadata={
        'Software': None, 'Comment': _DIGEST + digest})
    plt.close(fig)


def plot_status(root: str = ROOT) -> Tuple[Optional[str], str, bool]:
    """(the JSON in the repository or None, the JSON generated now, whether
    the PNG was drawn from the generated JSON)."""
    new = plot_json(root)
    digest = hashlib.sha256(new.encode('utf-8')).hexdigest()
    return (read_text(osp.join(root, PLOT_JSON)), new,
            png_digest(osp.join(root, PLOT_PNG)) == digest)


def _diff(rel: str, old: str, new: str) -> None:
    sys.stdout.writelines(difflib.unified_diff(
        old.splitlines(True), new.splitlines(True),
        f'{rel} (in the repository)', f'{rel} (generated)'))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument('--write', action='store_true',
                      help='rewrite the marked tables, the metafile Results '
                      'and the results plot in place')
    mode.add_argument('--check', action='store_true',
                      help='print a diff and exit 1 if a table, a metafile '
                      'or the results plot is stale')
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        for name, make in TABLES.items():
            table = make('.')
            print(f'<!-- evidence-table: {name} -->')
            print(table if table is not None else
                  f'(skipped: {QUICKSTART_JSON} does not exist yet)\n')
        return 0
    files, skipped = update()
    for name in skipped:
        print(f'evidence_tables: skipped table {name!r}: its input '
              f'({QUICKSTART_JSON}) does not exist yet')
    stale = 0
    metafiles = generated_files()
    for rel, (old, new) in list(files.items()) + list(metafiles.items()):
        if old == new:
            continue
        if args.write:
            with open(osp.join(ROOT, rel), 'w', encoding='utf-8') as f:
                f.write(new)
            print(f'evidence_tables: rewrote {rel}')
        else:
            stale += 1
            _diff(rel, old, new)
    old_json, new_json, png_current = plot_status()
    plot_stale = old_json != new_json or not png_current
    if args.write and plot_stale:
        with open(osp.join(ROOT, PLOT_JSON), 'w', encoding='utf-8') as f:
            f.write(new_json)
        draw_plot(json.loads(new_json), osp.join(ROOT, PLOT_PNG),
                  hashlib.sha256(new_json.encode('utf-8')).hexdigest())
        print(f'evidence_tables: rewrote {PLOT_JSON} and {PLOT_PNG}')
    elif args.check and plot_stale:
        stale += 1
        if old_json != new_json:
            _diff(PLOT_JSON, old_json or '', new_json)
        if not png_current:
            print(f'{PLOT_PNG}: not drawn from the generated {PLOT_JSON} '
                  '(its Comment digest differs)')
    if args.check:
        print(f'evidence_tables: {stale} stale file(s) of '
              f'{len(files) + len(metafiles) + 1} (docs with tables, '
              'metafiles and config READMEs, results plot)' +
              ('; run with --write' if stale else ''))
    return 1 if stale else 0

if __name__ == '__main__':
    sys.exit(main())
