"""The result tables in README.md and docs/*.md are the generator's output.

``tools/analysis_tools/evidence_tables.py`` writes every table between
``<!-- evidence-table: NAME -->`` markers from the study reports in
``docs/evidence/``: the README's "which loss" table, docs/evidence.md's
results, verdict and verdict test by test, docs/get_started.md's quickstart.
These tests fail when a marked table or a config folder's README.md differs
from what the tool writes now (run it with ``--write``), and check the
tool's numbers against a hand computation from the CSV. Its other outputs
(the metafiles' ``Results``, the results plot) are tested in
``test_one_home.py``; here, that ``--check`` covers them.
"""
import csv
import glob
import json
import os.path as osp
import re

import numpy as np
import pytest
from scipy import stats

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
MARK = re.compile(r'<!-- evidence-table: ([\w-]+) -->')
BODY = re.compile(r'<!-- evidence-table: (?P<name>[\w-]+) -->\n(?P<body>.*?)'
                  r'<!-- /evidence-table -->', re.S)


def _marked():
    """(file, table name) for every marker in README.md and docs/*.md."""
    out = []
    for rel in ['README.md'] + sorted(osp.relpath(p, ROOT) for p in glob.glob(
            osp.join(ROOT, 'docs', '*.md'))):
        with open(osp.join(ROOT, rel), encoding='utf-8') as f:
            out += [(rel, name) for name in MARK.findall(f.read())]
    return out


MARKED = _marked()


@pytest.fixture(scope='module', name='ET')
def evidence_tables(load_tool):
    return load_tool('tools/analysis_tools/evidence_tables.py')


def _read(rel):
    with open(osp.join(ROOT, rel), encoding='utf-8') as f:
        return f.read()


def _body(text, name):
    """What lies between the markers of table ``name`` in ``text``."""
    for m in BODY.finditer(text):
        if m.group('name') == name:
            return m.group('body')
    raise KeyError(name)


#: Each table's one home.
HOMES = {'which-loss': 'README.md', 'results': 'docs/evidence.md',
         'verdict': 'docs/evidence.md', 'verdict-tests': 'docs/evidence.md',
         'quickstart': 'docs/get_started.md'}


def test_each_table_is_in_its_one_home():
    for name, home in HOMES.items():
        assert [rel for rel, n in MARKED if n == name] == [home], name


def test_config_folder_readmes_are_the_generated_ones(ET):
    files = ET.generated_files(ROOT)
    readmes = {rel: v for rel, v in files.items()
               if rel.endswith('README.md')}
    assert len(readmes) == len(ET.metafile_results.metafile_paths(ROOT))
    for rel, (old, new) in readmes.items():
        assert old == new, (
            f'{rel} is stale; run '
            '`python tools/analysis_tools/evidence_tables.py --write`')
        assert ET.metafile_results.README_MARK in new


def test_a_config_folder_readme_shows_a_metafile_result(ET):
    """A number of a metafile's generated Results, with its sd and seeds,
    stands in the row of its config in the folder's README."""
    import yaml
    text = _read('configs/digitsvoc/metafile.yml')
    model = next(m for m in yaml.safe_load(text)['Models']
                 if m['Config'].endswith('_rambo-bce_16e_digitsvoc.py'))
    r = model['Results'][0]
    readme = _read('configs/digitsvoc/README.md')
    row = next(line for line in readme.splitlines()
               if f'[`{osp.basename(model["Config"])}`]' in line)
    m = r['Metrics']
    assert (f'{r["Dataset"]}: AP50 {m["AP50"]:.1f} ± {m["AP50 sd"]:.1f}, '
            f'{m["Seeds"]} seeds, lr {m["lr"]:g}') in row


@pytest.mark.parametrize('rel,name', MARKED,
                         ids=[f'{r}:{n}' for r, n in MARKED])
def test_marked_table_is_up_to_date(ET, rel, name):
    assert name in ET.TABLES, f'{rel}: unknown table {name!r}'
    table = ET.TABLES[name](osp.dirname(rel) or '.')
    if table is None:
        pytest.skip(f'{name}: its input does not exist yet')
    assert _body(_read(rel), name) == table, (
        f'{rel}: table {name!r} is stale; run '
        '`python tools/analysis_tools/evidence_tables.py --write`')


def test_check_mode_agrees(ET, capsys):
    """``--check`` exits 0 exactly when no marked table, no metafile's
    Results and not the results plot is stale."""
    files, _ = ET.update(ROOT)
    files.update(ET.generated_files(ROOT))
    stale = [rel for rel, (old, new) in files.items() if old != new]
    old_json, new_json, png_current = ET.plot_status(ROOT)
    plot_stale = old_json != new_json or not png_current
    assert ET.main(['--check']) == (1 if stale or plot_stale else 0)
    out = capsys.readouterr().out
    for rel in stale:
        assert f'{rel} (generated)' in out


def test_check_mode_fails_on_a_stale_metafile_or_plot(ET, capsys,
                                                      monkeypatch):
    """A metafile whose Results differ from the reports, or a plot whose
    data differ, makes ``--check`` fail (and writes nothing)."""
    real = ET.metafile_results.metafile_updates

    def stale_metafile(root=ROOT):
        out = real(root)
        rel = next(iter(out))
        out[rel] = (out[rel][0] + '# hand edit\n', out[rel][1])
        return out

    monkeypatch.setattr(ET.metafile_results, 'metafile_updates',
                        stale_metafile)
    assert ET.main(['--check']) == 1
    assert '# hand edit' in capsys.readouterr().out
    monkeypatch.setattr(ET.metafile_results, 'metafile_updates', real)
    real_plot = ET.plot_status
    monkeypatch.setattr(ET, 'plot_status', lambda root=ROOT: (
        real_plot(root)[0], real_plot(root)[1] + ' ', True))
    assert ET.main(['--check']) == 1


def _csv_rows(study):
    path = osp.join(ROOT, 'docs', 'evidence', f'{study}.csv')
    with open(path, newline='', encoding='utf-8') as f:
        return list(csv.DictReader(f))


def _test_values(rows, method, metric):
    """By hand: {seed: value} of the rows at the selected lr with a test
    value."""
    return {
        int(r['seed']): float(r[metric])
        for r in rows if r['method'] == method and r['selected_lr'] == 'True'
        and r[metric] != ''
    }


def _row_of(table, config_name, change='', study=''):
    """The row of a config (and of its study's report: one config can be a
    row of two studies)."""
    rows = [
        line for line in table.splitlines()
        if f'[`{config_name}`]' in line and (change in line)
        and f'/{study}.md)' in line
    ]
    if not change:
        rows = [r for r in rows if ' with `' not in r.split('|')[1]]
    assert len(rows) == 1, (config_name, rows)
    return [cell.strip() for cell in rows[0].strip('|').split('|')]


@pytest.mark.parametrize('study,method,baseline,metric,config,change', [
    ('digitsvoc_scratch_16e', 'rambo_bce', 'ce', 'test_ap50',
     'faster-rcnn_r18-w32_fpn_rambo-bce_16e_digitsvoc.py', ''),
    ('digitsvoc_scratch_16e', 'rambo', 'ce', 'test_ap50',
     'faster-rcnn_r18-w32_fpn_rambo_16e_digitsvoc.py', 'margin=0.15'),
    ('digitsvoc_dense_fixed_16e', 'atss_rambo_focal', 'atss_focal',
     'test_ap50', 'atss_r18-w32_fpn_rambo-focal_16e_digitsvoc.py', ''),
    ('digitsvoc_dense_fixed_16e', 'atss_rank_sort', 'atss_focal',
     'test_ap50', 'atss_r18-w32_fpn_rank-sort_16e_digitsvoc.py', ''),
    ('digitsvoc_dense_fixed_16e', 'atss_alrp', 'atss_focal', 'test_ap50',
     'atss_r18-w32_fpn_alrp_16e_digitsvoc.py', ''),
    ('digitsvoc_dense_fixed_16e', 'retina_rank_sort', 'retina_focal',
     'test_ap50', 'retinanet_r18-w32_fpn_rank-sort_16e_digitsvoc.py',
     'lr=0.08'),
    ('digitsvoc_dense_fixed_16e', 'retina_alrp', 'retina_focal',
     'test_ap50', 'retinanet_r18-w32_fpn_alrp_16e_digitsvoc.py', ''),
    ('digitsvoc_dense_fixed_16e', 'retina_rambo_focal', 'retina_focal',
     'test_ap50', 'retinanet_r18-w32_fpn_rambo-focal_16e_digitsvoc.py', ''),
    ('digitsvoc_rank_sort_frcnn_16e', 'rank_sort', 'ce', 'test_ap50',
     'faster-rcnn_r18-w32_fpn_rank-sort_16e_digitsvoc.py', ''),
    ('digitsvoc_rank_sort_frcnn_16e', 'rambo_bce', 'ce', 'test_ap50',
     'faster-rcnn_r18-w32_fpn_rambo-bce_16e_digitsvoc.py', ''),
    ('digitsvoc_pretrained_12e', 'rambo_bce', 'ce_lr004', 'test_ap50',
     'faster-rcnn_r18-w32-glyphs_fpn_rambo-bce_12e_digitsvoc.py', ''),
    ('digitsvoc_pretrained_12e', 'margin0', 'ce_lr004', 'test_ap50',
     'faster-rcnn_r18-w32-glyphs_fpn_rambo_12e_digitsvoc.py', 'margin=0'),
    ('digit_instances_losses', 'fastap', 'rambo', 'test_r1',
     'retrieval_r18-w16_rambo-log_20e_digit-instances.py', 'fastap'),
])
def test_numbers_match_a_hand_computation(study, method, baseline, metric,
                                          config, change):
    rows = _csv_rows(study)
    values = _test_values(rows, method, metric)
    base = _test_values(rows, baseline, metric)
    assert len(values) >= 3
    x = 100 * np.array([values[s] for s in sorted(values)])
    seeds = sorted(set(values) & set(base))
    d = 100 * np.array([values[s] - base[s] for s in seeds])
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    expected_pm = f'{x.mean():.1f} ± {x.std(ddof=1):.1f}'
    expected_diff = (f'{d.mean():+.1f} [{d.mean() - half:+.1f}, '
                     f'{d.mean() + half:+.1f}]')

    table = _body(_read('docs/evidence.md'), 'results')
    cells = _row_of(table, config, change, study)
    # the count and the seeds themselves: rows of one config from two
    # studies differ by their seeds
    count, _, seeds_cell = cells[3].partition(' ')
    assert count == str(len(values))
    listed = seeds_cell.strip('()').replace('seeds ', '').replace('seed ', '')
    named = set()
    for part in listed.split(', '):
        lo, _, hi = part.partition('-')
        named |= set(range(int(lo), int(hi or lo) + 1))
    assert named == set(values)
    trained = [int((100 * np.array(list(v.values())) >= 1).sum())
               for v in (values, base)]
    if trained[0] < len(values):
        expected_pm += f', {trained[0]} of {len(values)} seeds trained'
    assert cells[4] == expected_pm
    if any(0 < k < len(values) for k in trained):
        # some seeds trained and some collapsed: the mean, no interval
        assert cells[5].startswith(f'{d.mean():+.1f} vs ')
        assert 'no interval: bimodal' in cells[5] and '[' not in cells[5]
    else:
        assert cells[5].startswith(expected_diff + ' vs ')


def test_baseline_rows_say_baseline(ET):
    table = ET.results_table('docs')
    for block in ET.RESULTS:
        base = [row for row in block['rows'] if row[0] == block['baseline']]
        assert len(base) == 1, block['study']
    # a block whose rows were tested at different score thresholds gives
    # the baseline's beside the word
    assert table.count('| baseline |') + table.count(
        '| baseline; tested at score_thr') == len(ET.RESULTS)


def test_only_test_rows_at_the_selected_lr_count(ET):
    rows = [
        dict(method='a', seed='0', selected_lr='True', test_ap50='0.5'),
        dict(method='a', seed='1', selected_lr='True', test_ap50=''),
        dict(method='a', seed='0', selected_lr='False', test_ap50='0.9'),
        dict(method='b', seed='0', selected_lr='True', test_ap50='0.1'),
    ]
    assert ET.test_values(rows, 'a', 'test_ap50') == {0: 0.5}


QUICKSTART = dict(
    machine='2-core x86-64 CPU, torch 2.13.0+cpu', date='2026-11-25',
    total_seconds=400.0,
    rows=[
        dict(model='Faster R-CNN R18-w32 FPN', loss='none (untrained)',
             config=None, lr=None, ap50=0.001, train_seconds=None,
             **{'boxes_per_image_at_0.3': None}, objects_per_image=2.5),
        dict(model='Faster R-CNN R18-w32 FPN', loss='RaMBO + sigmoid CE',
             config='configs/quickstart/'
             'faster-rcnn_r18-w32_fpn_rambo-bce_toyvoc.py', lr=0.04,
             ap50=0.8766, train_seconds=121.4,
             **{'boxes_per_image_at_0.3': 3.14}, objects_per_image=2.5),
    ])


def test_quickstart_table_from_its_json(ET, tmp_path):
    path = tmp_path / 'quickstart_results.json'
    path.write_text(json.dumps(QUICKSTART))
    table = ET.quickstart_table('docs', str(path))
    lines = table.splitlines()
    assert lines[0].startswith('| model | loss | config | lr | AP50 (%)')
    assert lines[2] == ('| Faster R-CNN R18-w32 FPN | none (untrained) | - '
                        '| - | 0.1 | - | - | 2.5 |')
    assert lines[3] == (
        '| Faster R-CNN R18-w32 FPN | RaMBO + sigmoid CE | '
        '[`faster-rcnn_r18-w32_fpn_rambo-bce_toyvoc.py`]'
        '(../configs/quickstart/faster-rcnn_r18-w32_fpn_rambo-bce_toyvoc.py)'
        ' | 0.04 | 87.7 | 121 | 3.1 | 2.5 |')
    assert '2026-11-25' in table and '6.7 min' in table


def test_quickstart_table_is_skipped_without_its_json(ET, tmp_path):
    assert ET.quickstart_table('.', str(tmp_path / 'missing.json')) is None
    text = ('a\n<!-- evidence-table: quickstart -->\nold\n'
            '<!-- /evidence-table -->\nb\n')
    skipped = []
    orig = ET.TABLES['quickstart']
    ET.TABLES['quickstart'] = lambda doc_dir: None
    try:
        assert ET.render(text, '.', skipped) == text
    finally:
        ET.TABLES['quickstart'] = orig
    assert skipped == ['quickstart']


def test_render_replaces_only_the_marked_body(ET):
    text = ('before\n<!-- evidence-table: results -->\nstale\n'
            '<!-- /evidence-table -->\nafter\n')
    out = ET.render(text, '.')
    assert out.startswith('before\n<!-- evidence-table: results -->\n| ')
    assert out.endswith('|\n<!-- /evidence-table -->\nafter\n')
    assert 'stale' not in out
    with pytest.raises(KeyError, match='unknown'):
        ET.render('<!-- evidence-table: nope -->\n<!-- /evidence-table -->',
                  '.')


def test_a_study_with_one_test_seed_has_no_sd_and_no_difference(ET,
                                                                 tmp_path):
    """A test phase under way (one seed per method) renders: no paired
    difference and no sd, where both need two seeds."""
    from rankloss_lab import metafile_results as MR
    evidence = tmp_path / 'docs' / 'evidence'
    evidence.mkdir(parents=True)
    (evidence / 'partial.csv').write_text(
        'method,seed,lr,selected_lr,test_ap50\n'
        'focal,6,0.0004,True,0.481\nrank_sort,6,0.0008,True,0.543\n')
    block = dict(study='partial', metric='test_ap50', baseline='focal',
                 baseline_label='focal', data='DigitsVOC',
                 rows=[('focal', 'focal', 'a.py', ''),
                       ('rank_sort', 'Rank & Sort', 'b.py', '')])
    assert ET._difference(block, 'Rank & Sort', {6: 0.543},
                          {6: 0.481}) == '- vs focal'
    out = MR.results([block], str(tmp_path))
    assert [r['metrics'] for r in out] == [
        [('AP50', 48.1), ('Seeds', 1), ('lr', 0.0004)],
        [('AP50', 54.3), ('Seeds', 1), ('lr', 0.0008)]]
    assert MR._metrics_text(dict(out[1]['metrics'])) == (
        'AP50 54.3, 1 seed, lr 0.0008')
    assert MR._metrics_text({'AP50': 47.9, 'AP50 sd': 1.9, 'Seeds': 3}) == (
        'AP50 47.9 ± 1.9, 3 seeds')
