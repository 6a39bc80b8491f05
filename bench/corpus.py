"Find or build the Debian Reference benchmark corpus (never committed): ../shared/tools/debian_reference_corpus.py."
import os, pathlib, shutil, subprocess, sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOL = ROOT.parent / 'shared' / 'tools' / 'debian_reference_corpus.py'
CACHE = pathlib.Path(os.environ.get('RAGNB_BENCH_CORPUS', ROOT / 'bench' / 'out' / 'debian_reference'))


def corpus_dir() -> pathlib.Path:
    "The folder with es/*.md and en/*.md, built on first use (needs debian-reference-es/-en installed)."
    if not any(CACHE.glob('*/*.md')):
        if not TOOL.exists(): sys.exit(f'benchmark corpus tool not found: {TOOL} (it lives in ../shared)')
        subprocess.run([sys.executable, str(TOOL), str(CACHE)], check=True)
    return CACHE


def corpus_files():
    return sorted(corpus_dir().glob('*/*.md'))


def corpus_text() -> str:
    return '\n\n'.join(p.read_text(encoding='utf-8') for p in corpus_files())


HANDBOOK = pathlib.Path('/usr/share/doc/debian-handbook/html/es-ES')
PYDOC = pathlib.Path('/usr/share/doc/python3/html')
PY_LIBRARY = ('pathlib', 'json', 're', 'datetime', 'collections', 'itertools', 'functools', 'argparse', 'logging',
              'subprocess', 'shutil', 'csv')
HTML_CACHE = CACHE.parent / 'html_es_en'


def html_corpus_dir() -> pathlib.Path:
    """Real HTML as installed, in both languages (the quality issue's second set): the Spanish Debian Handbook
    (`debian-handbook`) and Python's tutorial with 12 library pages (`python3-doc`), copied into one folder (ragnb does not follow links that leave it)."""
    if not HANDBOOK.is_dir() or not (PYDOC / 'tutorial').is_dir():
        sys.exit('apt-get install -y debian-handbook python3-doc')
    pages = {f'es/{p.name}': p for p in HANDBOOK.glob('*.html')}
    pages |= {f'en/tutorial/{p.name}': p for p in (PYDOC / 'tutorial').glob('*.html')}
    pages |= {f'en/library/{n}.html': PYDOC / 'library' / f'{n}.html' for n in PY_LIBRARY}
    for name, src in pages.items():
        dst = HTML_CACHE / name
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
    return HTML_CACHE
