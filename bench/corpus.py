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


def copied_corpus(dst: pathlib.Path, copies: int) -> pathlib.Path:
    """The corpus `copies` times under `dst/copy{k}`, each page's title followed by `(copy k)`. Every chunk carries
    its page's title, so no chunk of one copy has the text of another's: indexing copies k costs k times the model's
    work, as a corpus k times larger would, and a store's lookup of earlier chunks' vectors finds none."""
    for k in range(copies):
        for f in corpus_files():
            out = dst / f'copy{k}' / f.parent.name / f.name
            out.parent.mkdir(parents=True, exist_ok=True)
            title, rest = f.read_text(encoding='utf-8').split('\n', 1)
            out.write_text(f'{title} (copy {k})\n{rest}', encoding='utf-8')
    return dst


HANDBOOK = pathlib.Path('/usr/share/doc/debian-handbook/html/es-ES')
PYDOC = pathlib.Path('/usr/share/doc/python3/html')
PY_LIBRARY = ('pathlib', 'json', 're', 'datetime', 'collections', 'itertools', 'functools', 'argparse', 'logging',
              'subprocess', 'shutil', 'csv')
HTML_CACHE = CACHE.parent / 'html_es_en'


def html_corpus_dir() -> pathlib.Path:
    """Real HTML as installed, in both languages (the quality issue's second set): the Spanish Debian Handbook
    (`debian-handbook`) and Python's tutorial with 12 library pages (`python3-doc`), copied into one folder (ragnb
    does not follow links that leave it)."""
    if not HANDBOOK.is_dir() or not (PYDOC / 'tutorial').is_dir():
        sys.exit('apt-get install -y debian-handbook python3-doc')
    pages = {f'es/{p.name}': p for p in HANDBOOK.glob('*.html')}
    pages |= {f'en/tutorial/{p.name}': p for p in (PYDOC / 'tutorial').glob('*.html')}
    pages |= {f'en/library/{n}.html': PYDOC / 'library' / f'{n}.html' for n in PY_LIBRARY}
    return copied(pages, HTML_CACHE)


def copied(pages:dict, folder:pathlib.Path) -> pathlib.Path:
    "`folder`, with each `{name: installed file}` of `pages` copied to `folder / name` unless it is there already."
    for name, src in pages.items():
        dst = folder / name
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
    return folder


HANDBOOK_LONG = ('advanced-administration', 'network-services', 'sect.virtualization', 'sect.debian-internals',
                 'sect.installation-steps', 'sect.package-meta-information', 'sect.apt-get', 'unix-services',
                 'sect.selinux', 'apt', 'sect.manipulating-packages-with-dpkg', 'sect.supervision')
PY_LONG = ('os', 'stdtypes', 'datetime', 'argparse', 're', 'subprocess', 'logging', 'sqlite3')
NETTLE_PDF = pathlib.Path('/usr/share/doc/nettle-dev/nettle.pdf.gz')
LONG_CACHE = CACHE.parent / 'long_docs'


def long_docs_dir() -> pathlib.Path:
    """Long documents as installed (issue 36): es/ the 12 longest pages of the Spanish Debian Handbook (22k-59k
    characters of text each), en/ 8 long pages of Python's library reference (36k-166k) and Nettle's manual as a PDF
    (235k characters, 100 pages; shipped gzipped by nettle-dev). Copied into one folder per language."""
    if not HANDBOOK.is_dir() or not (PYDOC / 'library').is_dir() or not NETTLE_PDF.exists():
        sys.exit('apt-get install -y debian-handbook python3-doc nettle-dev')
    import gzip
    pages = {f'es/{n}.html': HANDBOOK / f'{n}.html' for n in HANDBOOK_LONG}
    pages |= {f'en/library/{n}.html': PYDOC / 'library' / f'{n}.html' for n in PY_LONG}
    pdf = copied(pages, LONG_CACHE) / 'en' / 'nettle.pdf'
    if not pdf.exists(): pdf.write_bytes(gzip.decompress(NETTLE_PDF.read_bytes()))
    return LONG_CACHE


JDK_SRC = sorted(p for p in pathlib.Path('/usr/lib/jvm').glob('*/lib/src.zip') if p.is_file())
JAVA_CLASSES = ('Semaphore', 'CountDownLatch', 'CyclicBarrier', 'Exchanger', 'Phaser', 'TimeUnit', 'ArrayBlockingQueue',
                'ThreadLocalRandom')
CODE_CACHE = CACHE.parent / 'code'


def code_corpus_dir() -> pathlib.Path:
    """Code with its docs, as installed: zlib's examples (C, with their HTML guide), Nettle's examples (C) and its
    HTML manual (`zlib1g-dev`, `nettle-dev`), git's persistent-https proxy (Go, `git`), and 8 classes of
    `java.util.concurrent` from a JDK's `src.zip` (Javadoc-rich Java). Copied into one folder."""
    zlib, nettle = pathlib.Path('/usr/share/doc/zlib1g-dev/examples'), pathlib.Path('/usr/share/doc/nettle-dev')
    go = pathlib.Path('/usr/share/doc/git/contrib/persistent-https')
    if not (zlib.is_dir() and (nettle / 'examples').is_dir() and go.is_dir() and JDK_SRC):
        sys.exit('apt-get install -y zlib1g-dev nettle-dev git openjdk-17-source (or any JDK with lib/src.zip)')
    pages = {f'zlib/{p.name}': p for p in zlib.iterdir() if p.suffix in ('.c', '.h', '.html')}
    pages |= {f'nettle/{p.name}': p for p in (nettle / 'examples').iterdir() if p.suffix in ('.c', '.h')}
    pages |= {'nettle/nettle.html': nettle / 'nettle.html'}
    pages |= {f'go/{p.name}': p for p in go.glob('*.go')}
    copied(pages, CODE_CACHE)
    import zipfile
    with zipfile.ZipFile(JDK_SRC[-1]) as z:
        for name in JAVA_CLASSES:
            dst = CODE_CACHE / 'java' / f'{name}.java'
            if not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_bytes(z.read(f'java.base/java/util/concurrent/{name}.java'))
    return CODE_CACHE
