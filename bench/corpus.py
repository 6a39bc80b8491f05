"Find or build the Debian Reference benchmark corpus (never committed): ../shared/tools/debian_reference_corpus.py."
import os, pathlib, subprocess, sys

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
