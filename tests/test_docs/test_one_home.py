"""Every number about results has one home: the report of its study.

The reports (``docs/evidence/<study>.md`` / ``.csv``, written by
``tools/study.py``; ``quickstart_results.json``; ``pooled_*``) are the
numbers. Their copies must agree with them, or not exist:

* the ``Results`` of ``configs/**/metafile.yml`` are what
  ``tools/analysis_tools/evidence_tables.py --write`` generates from the
  reports now, labelled by study and seeds, with the loss version where the
  loss changed since; the few hand-written ones (configs no report covers)
  name the document they copy, and agree with it;
* a config's comment quotes no result (``test AP50 8.6 +- 2.5``,
  ``16.6 ± 0.9``, ``val AP50 ... 9.9``, ``+2.3 [+1.0, +3.5]``): it points to
  the report (``docs/evidence/<study>.md``) instead; paper numbers
  (``... AP50 paper number``) are exempt;
* the results plot (``docs/images/results_ap50.png``) was drawn from the
  reports' numbers (its sidecar JSON), and docs/evidence.md shows it.

Fast: text and CSV only (no config is built, no matplotlib is imported).
"""
import csv
import glob
import hashlib
import os.path as osp
import re

import pytest
import yaml

from rankloss_lab import metafile_results as MR, results as R

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
EVIDENCE = osp.join(ROOT, 'docs', 'evidence')
ENTRIES = MR.metafile_entries(ROOT)
METAFILES = MR.metafile_paths(ROOT)


def _read(rel):
    with open(osp.join(ROOT, rel), encoding='utf-8') as f:
        return f.read()


def _models():
    """(metafile, model) of every model of every metafile."""
    return [(rel, m) for rel in METAFILES
            for m in yaml.safe_load(_read(rel))['Models']]


# --- metafile Results --------------------------------------------------------


@pytest.mark.parametrize('rel', METAFILES)
def test_metafile_results_are_the_generated_ones(rel):
    old, new = MR.metafile_updates(ROOT)[rel]
    assert old == new, (
        f'{rel}: its Results differ from the reports; run '
        '`python tools/analysis_tools/evidence_tables.py --write`')


def test_every_config_of_a_results_block_has_labelled_results():
    models = {m['Config']: m for _, m in _models()}
    for block in R.RESULTS + R.EXTRA:
        task = MR.METRICS[block['metric']][0]  # a study may give two
        for method, _, config, change in block['rows']:
            if change:
                continue  # a changed config: in the report, not here
            mine = [r for r in models[config].get('Results', [])
                    if f'(study {block["study"]}, seed' in r['Dataset']
                    and r['Task'] == task]
            assert len(mine) == 1, (config, block['study'],
                                    [r['Dataset'] for r in mine])
            (r, ) = mine
            assert r['Report'] == f'docs/evidence/{block["study"]}.md'
            assert osp.isfile(osp.join(ROOT, r['Report']))
            assert set(r['Metrics']) >= {'Seeds', 'lr'}, r
    # every config of the README's table got at least one result, but a
    # config whose lr moved after its tests (it says so)
    for block in R.RESULTS:
        for _, _, config, _ in block['rows']:
            if config in MR.LR_MOVED_AFTER_TEST:
                assert not models[config].get('Results'), config
                continue
            assert models[config].get('Results'), config


def test_a_metafile_result_matches_a_hand_computation():
    rows = list(csv.DictReader(open(
        osp.join(EVIDENCE, 'digitsvoc_dense_atss_16e.csv'),
        newline='', encoding='utf-8')))
    values = [float(r['test_ap50']) for r in rows
              if r['method'] == 'mix_logits' and r['selected_lr'] == 'True'
              and r['test_ap50'] != '']
    mean = 100 * sum(values) / len(values)
    sd = (sum((100 * v - mean)**2 for v in values) / (len(values) - 1))**.5
    models = {m['Config']: m for _, m in _models()}
    (r, ) = [r for r in models[
        'configs/dense/atss/atss_r18-w32_fpn_rambo-focal_16e_digitsvoc.py']
        ['Results'] if 'digitsvoc_dense_atss_16e,' in r['Dataset']]
    assert r['Dataset'] == ('DigitsVOC test (study digitsvoc_dense_atss_16e,'
                            ' seeds 0-4)')
    assert r['Metrics'] == {'AP50': round(mean, 1), 'AP50 sd': round(sd, 1),
                            'Seeds': len(values), 'lr': 0.01}


def test_unchanged_rows_ran_the_lr_their_config_ships():
    """A result without a change is the config as it ships: its run's lr is
    the config's (its ``# Batch:`` line, which the batch-and-lr test checks
    against the optimizer)."""
    for e in ENTRIES:
        lr = MR.config_lr(osp.join(ROOT, e['config']))
        assert lr is not None, e['config']
        assert dict(e['metrics'])['lr'] == pytest.approx(lr), (
            e['config'], e['study'], dict(e['metrics'])['lr'], lr)


@pytest.mark.parametrize('study', [
    'digitsvoc_dense_atss_rank_sort_16e',
    'digitsvoc_dense_retinanet_rank_sort_16e',
    'digitsvoc_rank_sort_frcnn_16e'
])
def test_rs_and_alrp_results_say_their_loss_version(study):
    rs = [(rel, m, r) for rel, m in _models() for r in m.get('Results', [])
          if f'(study {study},' in r['Dataset']
          and m['In Collection'] in ('Rank & Sort', 'aLRP')]
    assert rs, study
    for rel, m, r in rs:
        assert "measured with 0.2.0's RS / aLRP" in r.get('Notes', ''), (
            rel, m['Name'])


def test_undeclared_rows_of_a_preregistered_study_say_exploratory():
    notes = {(e['study'], e['method']): ' '.join(e['notes'])
             for e in ENTRIES}
    # CE at 0.04 was added to the glyph study after its test results
    assert 'exploratory' in notes['digitsvoc_pretrained_12e', 'ce_lr004']
    assert 'exploratory' not in notes['digitsvoc_pretrained_12e', 'rambo']
    # a study without a pre-registration: nothing to be exploratory against
    assert 'exploratory' not in notes['digitsvoc_scratch_16e', 'ce']


def test_results_keys_and_hand_written_results_have_a_home():
    generated = set(MR.results_by_config(ENTRIES))
    for rel, m in _models():
        for r in m.get('Results', []):
            assert set(r) <= {'Task', 'Dataset', 'Metrics', 'Report',
                              'Notes'}, (rel, m['Name'], set(r))
            # each copy names its home
            assert osp.isfile(osp.join(ROOT, r['Report'])), (m['Name'], r)
            if m['Config'] in generated:
                continue
            # hand-written (no study report covers this config): every
            # number stands in the document it names
            home = _read(r['Report'])
            for name, value in r['Metrics'].items():
                assert re.search(rf'(?<![\d.]){value:.1f}(?![\d])', home), (
                    m['Name'], name, value, r['Report'])
    text = ''.join(_read(rel) for rel in METAFILES)
    # hand-written Results only where no report covers the config
    assert text.count(MR.MARK_BEGIN) == len(generated)


def test_render_metafile_keeps_everything_else():
    text = ('# a comment\nModels:\n'
            '  - Name: a\n    Config: configs/a.py\n    Metadata:\n'
            '      Epochs: 1\n    Results:\n      - Task: T\n'
            '        Metrics:\n          AP50: 1.0\n\n'
            '  - Name: b\n    Config: configs/b.py\n    # kept\n'
            '    Results:\n      - Task: T\n        Dataset: D\n'
            '        Metrics:\n          AP50: 2.0\n')
    entry = dict(config='configs/a.py', task='Object Detection',
                 dataset='DigitsVOC test (study s, seeds 0-4)',
                 metrics=[('AP50', 44.8), ('AP50 sd', 1.5), ('Seeds', 5),
                          ('lr', 0.04)],
                 report='docs/evidence/s.md', notes=['x: y'])
    by_config = MR.results_by_config([entry])
    out = MR.render_metafile(text, by_config)
    assert MR.render_metafile(out, by_config) == out  # idempotent
    assert out.startswith('# a comment\nModels:\n  - Name: a\n')
    assert 'AP50: 1.0' not in out  # the hand-written copy is gone
    assert '    # kept\n    Results:\n' in out and 'AP50: 2.0' in out
    data = yaml.safe_load(out)['Models']
    assert data[0]['Results'] == [dict(
        Task='Object Detection',
        Dataset='DigitsVOC test (study s, seeds 0-4)',
        Metrics={'AP50': 44.8, 'AP50 sd': 1.5, 'Seeds': 5, 'lr': 0.04},
        Report='docs/evidence/s.md', Notes='x: y')]
    assert out.index('\n\n  - Name: b') > out.index(MR.MARK_END)
    assert MR.seeds_text([6, 7, 8, 9, 10]) == 'seeds 6-10'
    assert MR.seeds_text([0, 2]) == 'seeds 0, 2'


# --- numbers quoted in config comments ---------------------------------------

_POINTER = re.compile(r'docs/evidence/[\w./-]*\w')
_RESULT = re.compile(r'AP50|R@\d|MAP@R|\+-|±|\[[+-]\d')
_DECIMAL = re.compile(r'(?<![\w.])[+-]?\d+\.\d+(?![\w]|\.\d)')
# hyper-parameters, grids and citations, not results
_PARAM = re.compile(
    r'\b(?:lr|learning rate|margin|lambda|tau|delta|beta|Sec\.|Eq\.|Table|'
    r'stds|score threshold)\s*[=:]?\s*[\[(]?\s*[+-]?\d+(?:\.\d+)?'
    r'(?:\s*[,/]\s*[+-]?\d+(?:\.\d+)?)*')
_GRID = re.compile(r'\{[^}]*\}')


def comment_blocks(text):
    """(first line, text) of each run of full-line comments."""
    out, cur, start = [], [], 0
    for i, line in enumerate(text.splitlines() + [''], 1):
        s = line.strip()
        if s.startswith('#'):
            start = start if cur else i
            cur.append(s.lstrip('#').strip())
        elif cur:
            out.append((start, ' '.join(cur)))
            cur = []
    return out


def quoted_results(text):
    """(sentence, numbers) of each result-like sentence of a comment block
    that quotes numbers (paper numbers aside)."""
    out = []
    for sentence in re.split(r'(?<=[.;])\s+(?=[A-Z(`])', text):
        if not _RESULT.search(sentence) or 'paper number' in sentence:
            continue
        numbers = _DECIMAL.findall(_PARAM.sub(' ', _GRID.sub(' ', sentence)))
        if numbers:
            out.append((sentence, numbers))
    return out


CONFIGS = sorted(
    osp.relpath(p, ROOT)
    for p in glob.glob(osp.join(ROOT, 'configs', '**', '*.py'),
                       recursive=True))


@pytest.mark.parametrize('rel', CONFIGS)
def test_config_comments_quote_no_results(rel):
    bad = [(line, sentence, numbers)
           for line, text in comment_blocks(_read(rel))
           for sentence, numbers in quoted_results(text)]
    assert not bad, (
        f'{rel}: a comment copies results (point to the report, '
        f'docs/evidence/<study>.md, instead): {bad}')


@pytest.mark.parametrize('rel', CONFIGS)
def test_config_comments_point_to_reports_that_exist(rel):
    missing = [path for _, text in comment_blocks(_read(rel))
               for path in _POINTER.findall(text)
               if not osp.exists(osp.join(ROOT, path))]
    assert not missing, f'{rel}: a comment points to no report: {missing}'


def test_the_comment_check_catches_a_copied_result():
    pointer = ('lr: selected on val by '
               'lab/rankloss_lab/studies/digitsvoc_dense_atss_16e.py from {0.005, '
               '0.01}; val and test results: '
               'docs/evidence/digitsvoc_dense_atss_16e.md.')
    assert quoted_results(pointer) == []
    copied = pointer.replace('0.01}', '0.01} (val AP50 21.2 / 24.7)')
    assert quoted_results(copied)[0][1] == ['21.2', '24.7']
    homeless = 'test AP50 23.1 +- 1.4 over 5 seeds (docs/dense.md).'
    assert quoted_results(homeless)[0][1] == ['23.1', '1.4']
    paper = 'RaMBO paper, Table 5: 81.4 AP50 paper number.'
    assert quoted_results(paper) == []


# --- the results plot --------------------------------------------------------


@pytest.fixture(scope='module', name='ET')
def evidence_tables(load_tool):
    return load_tool('tools/analysis_tools/evidence_tables.py')


def test_results_plot_is_drawn_from_the_reports(ET):
    old, new, png_current = ET.plot_status(ROOT)
    assert old == new, (f'{ET.PLOT_JSON} differs from the reports; run '
                        'evidence_tables.py --write')
    assert png_current, (f'{ET.PLOT_PNG} was not drawn from {ET.PLOT_JSON}; '
                         'run evidence_tables.py --write')
    assert ET.png_digest(osp.join(ROOT, ET.PLOT_PNG)) == hashlib.sha256(
        new.encode('utf-8')).hexdigest()


def test_plotted_numbers_are_the_report_rows(ET):
    data = yaml.safe_load(_read(ET.PLOT_JSON))  # JSON is YAML
    # every detection and segmentation block (box or mask AP50), in order
    blocks = [b for b in R.RESULTS if b['metric'] != 'test_r1']
    assert [s['study'] for s in data['studies']] == [b['study']
                                                     for b in blocks]
    for study, block in zip(data['studies'], blocks):
        assert study['methods'][0]['method'] == block['baseline']
        assert study['methods'][0]['baseline']
        report = _read(study['report'])
        for m in study['methods']:
            # the per-seed column of the report's test table
            per_seed = ', '.join(f'{v:.1f}' for v in m['ap50'])
            assert f'| {per_seed} |' in report, (study['study'], m['method'])
            assert len(m['seeds']) == len(m['ap50'])


def test_the_evidence_page_shows_the_plot_under_results():
    page = _read('docs/evidence.md')
    section = page.split('\n## Results\n', 1)[1].split('\n## ', 1)[0]
    first_paragraph_end = section.index('\n\n', 1)
    image = ('![Test AP50 per seed, from the reports]'
             '(images/results_ap50.png)')
    assert section[first_paragraph_end:].lstrip('\n').startswith(image)
