"""The user documentation speaks of the project only, and of its present.

README.md, CHANGELOG.md and docs/*.md must not use words that only make
sense to the people who wrote them (work sessions, issue numbers, "this
VM", commit hashes, paths outside the repository); README.md and docs/*.md
tell no history (versions of the package and what changed between them
belong in CHANGELOG.md). Also checked: the README stays a short guide
(at most 150 lines) that links every docs page and keeps the test command
that CI runs, docs/*.md stay within 2,600 lines, the README states the
Python version setup.py requires, and every relative link points at a file
of the repository.
"""
import configparser
import glob
import os.path as osp
import re

import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DOCS = ['README.md', 'CHANGELOG.md'] + sorted(
    osp.relpath(p, ROOT) for p in glob.glob(osp.join(ROOT, 'docs', '*.md')))
README_MAX_LINES = 150
DOCS_MAX_LINES = 2600
CI_TEST_COMMAND = 'tools/install.sh && .venv/bin/python -m pytest tests -q'

# (what, pattern). Matched line by line after URLs are removed, so that a
# GitHub link such as .../issues/12 or a DOI is not flagged.
INTERNAL_WORDS = [
    ('"session"', re.compile(r'\bsessions?\b', re.I)),
    ('"issue"', re.compile(r'\bissues?\b', re.I)),
    ('"this VM"', re.compile(r'\bthis VM\b', re.I)),
    ('"lent"', re.compile(r'\blent\b', re.I)),
    ('"spec"', re.compile(r'\bspecs?\b', re.I)),
    ('"this round"', re.compile(r'\bthis round\b', re.I)),
    # 7 to 40 lower-case hex digits with at least one letter and one digit:
    # a commit hash, not a number or a word.
    ('a commit hash',
     re.compile(r'\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b')),
    ('a path outside the repository', re.compile(r'\.\./shared\b|/work/')),
]
# history: a version of this package (0.x.y; not mmengine's 0.10.7) and the
# phrases that tell what changed
HISTORY_WORDS = [
    ('a version of the package', re.compile(r'\b0\.[1-9]\.\d+\b')),
    ('"re-measured"', re.compile(r'\bre-?measured\b', re.I)),
    ('"the earlier ..."', re.compile(
        r'\b(the|an) earlier (\w+ )?(behaviou?r|version|study|run|loss|'
        r'default)',
        re.I)),
    ('"still works"', re.compile(r'\bstill works\b', re.I)),
    ('"used to"', re.compile(r'\bused to\b', re.I)),
]
URL = re.compile(r'https?://[^\s)>\]]+')
LINK = re.compile(r'\]\(([^)\s]+)\)')


def _lines(rel):
    path = osp.join(ROOT, rel)
    if not osp.isfile(path):
        pytest.skip(f'{rel} does not exist')
    with open(path, encoding='utf-8') as f:
        return f.read().splitlines()


def hits(lines, words=INTERNAL_WORDS):
    """(line number, what, matched text) of every internal word."""
    out = []
    for number, line in enumerate(lines, 1):
        text = URL.sub('', line)
        for what, pattern in words:
            for m in pattern.finditer(text):
                out.append((number, what, m.group(0)))
    return out


@pytest.mark.parametrize('rel', DOCS)
def test_no_internal_words(rel):
    found = hits(_lines(rel))
    assert not found, f'{rel}: ' + '; '.join(
        f'line {n}: {what} ({text!r})' for n, what, text in found)


@pytest.mark.parametrize('line,flagged', [
    ('measured in this session', True),
    ('the issue asked for two budgets', True),
    ('as the spec says', True),
    ('on this VM, idle', True),
    ('no GPU was lent to this task', True),
    ('before this round of changes', True),
    ('the code before b46befe changed it', True),
    ('papers in ../shared/papers/', True),
    ('see /work/main/README.md', True),
    ('see https://github.com/o/r/issues/12 for details', False),
    ('specification, respectively, 1234567 runs, deadbeef, facade', False),
    ('the project\'s 2-core machine, 10,000,000 scores', False),
])
def test_the_word_list_is_precise(line, flagged):
    assert bool(hits([line])) == flagged


@pytest.mark.parametrize('rel', [d for d in DOCS if d != 'CHANGELOG.md'])
def test_no_history(rel):
    found = hits(_lines(rel), HISTORY_WORDS)
    assert not found, f'{rel} (history goes to CHANGELOG.md): ' + '; '.join(
        f'line {n}: {what} ({text!r})' for n, what, text in found)


@pytest.mark.parametrize('line,flagged', [
    ('measured with the loss of 0.2.0', True),
    ('not re-measured since', True),
    ('the earlier behaviour, as an option', True),
    ('an earlier RetinaNet study ran it', True),
    ('mmengine 0.10.7 and mmcv 2.1.0', False),
    ('earlier batches\' embeddings', False),
])
def test_the_history_list_is_precise(line, flagged):
    assert bool(hits([line], HISTORY_WORDS)) == flagged


def test_docs_are_short():
    total = sum(len(_lines(rel)) for rel in DOCS[2:])
    assert total <= DOCS_MAX_LINES, total


def test_readme_states_the_python_version_setup_requires():
    readme = '\n'.join(_lines('README.md'))
    stated = re.findall(r'\bPython (\d+\.\d+) or later\b', readme)
    with open(osp.join(ROOT, 'setup.py'), encoding='utf-8') as f:
        required = re.findall(r"python_requires='>=(\d+\.\d+)'", f.read())
    assert len(stated) == 1 and required == stated, (stated, required)
    # stated once: no docs page names a minimum Python version
    for rel in DOCS[2:]:
        text = '\n'.join(_lines(rel))
        assert not re.search(r'Python (>= ?)?3\.\d+( or later|\+)', text), rel


def test_readme_is_a_short_guide():
    lines = _lines('README.md')
    assert len(lines) <= README_MAX_LINES, len(lines)
    # .ci/run executes this line of the README verbatim.
    assert CI_TEST_COMMAND in lines


def test_the_test_commands_of_get_started_are_the_suites():
    """The fast set deselects a marker that pytest.ini registers (and
    --strict-markers refuses any other); the full command is CI's."""
    text = '\n'.join(_lines('docs/get_started.md'))
    fast = re.search(r'\.venv/bin/python -m pytest tests -m "not (\w+)" -q',
                     text)
    assert fast, 'docs/get_started.md gives no fast test command'
    ini = configparser.ConfigParser()
    ini.read(osp.join(ROOT, 'pytest.ini'))
    markers = [line.split(':')[0].strip()
               for line in ini['pytest']['markers'].strip().splitlines()]
    assert fast.group(1) in markers
    assert '--strict-markers' in ini['pytest']['addopts'].split()
    assert CI_TEST_COMMAND.split(' && ')[1] in text


def test_readme_links_every_docs_page_and_the_project_files():
    text = '\n'.join(_lines('README.md'))
    targets = set(LINK.findall(text))
    for rel in DOCS[2:] + ['LICENSE', 'CHANGELOG.md']:
        assert rel in targets, f'README.md does not link {rel}'


def anchors(path):
    """GitHub's anchors of the headings of a markdown file."""
    with open(path, encoding='utf-8') as f:
        headings = [line.lstrip('#').strip() for line in f
                    if re.match(r'#{1,6} ', line)]
    return {
        re.sub(r'[^\w\- ]', '', h.lower()).replace(' ', '-')
        for h in headings
    }


@pytest.mark.parametrize('rel', DOCS)
def test_relative_links_exist(rel):
    """Every relative link names a file of the repository, and a link to a
    heading of a markdown page names one that exists."""
    missing = []
    for number, line in enumerate(_lines(rel), 1):
        for target in LINK.findall(line):
            if re.match(r'[a-z]+:', target):
                continue  # a URL or mail address
            file, _, anchor = target.partition('#')
            path = osp.normpath(
                osp.join(ROOT, osp.dirname(rel), file) if file else
                osp.join(ROOT, rel))  # '#anchor': a heading of this page
            if not osp.exists(path):
                missing.append(f'line {number}: {target}')
            elif anchor and path.endswith('.md') and (
                    anchor not in anchors(path)):
                missing.append(f'line {number}: {target} (no such heading)')
    assert not missing, f'{rel}: ' + '; '.join(missing)


def test_citation_file_is_current():
    """CITATION.bib, which the README points to, cites the package at the
    installed version and has one entry per paper named in the README."""
    with open(osp.join(ROOT, 'CITATION.bib'), encoding='utf-8') as f:
        bib = f.read()
    from mmdet_rankloss.version import __version__
    assert f'Version {__version__}' in bib
    keys = re.findall(r'^@\w+\{(\w+),', bib, re.M)
    assert len(keys) == len(set(keys)), keys
    # "the rank losses of eight papers" in the README's first paragraph
    assert len([k for k in keys if k != 'mmdet_rankloss']) == 8, keys
    assert 'eight papers' in '\n'.join(_lines('README.md')[:10])
