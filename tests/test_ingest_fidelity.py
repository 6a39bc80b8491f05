"""Ingest fidelity on the structures of real manuals (issue 33), as small files written here that copy each structure:
a DocBook (Publican) page with sidebars, a banner and footer navigation; a Sphinx page; a PDF with identifiers at
line ends, real compounds and running heads that change with the chapter; a docs folder with drawings, stylesheets,
icons and a Makefile."""
import json, re, shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from faults import HashEmbedder
from ragnb.chunking import chunk_text
from ragnb.index import Store
from ragnb.ingest import index_paths
from ragnb.readers import html_document, pdf_document

DOCBOOK = '''<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>9.7. Tareas programadas</title>
<link rel="stylesheet" href="Common_Content/css/default.css"/></head><body>
<div id="banner"><a href="http://example.org/get/"><span class="text">Download the ebook</span></a></div>
<p id="title"><a class="left" href="http://example.org"><img alt="Product Site" src="i/left.png"/></a></p>
<ul class="docnav top"><li class="previous"><a accesskey="p" href="a.html"><strong>Anterior</strong></a></li>
<li class="home">El manual del Administrador</li>
<li class="next"><a href="c.html"><strong>Siguiente</strong></a></li></ul>
<div class="section"><div class="titlepage"><h2 class="title"><a id="sect.cron"></a>9.7. Tareas con cron</h2></div>
<div class="para">cron ejecuta órdenes programadas y recurrentes.</div>
<div class="sidebar"><div class="titlepage"><p class="title"><strong><span class="emphasis"><em>SEGURIDAD</em></span>
Restricción de <code class="command">cron</code></strong></p></div><a id="id-1.2" class="indexterm"></a>
<div class="para">Los usuarios autorizados se listan en <code class="filename">/etc/cron.allow</code>.</div></div>
<div class="sidebar"><div class="titlepage"><p class="title"><strong><span class="emphasis"><em>SUGERENCIA</em></span>
Ejecutar una orden al arrancar</strong></p></div>
<div class="para">Para ejecutar una orden una sola vez al arrancar, use <code>@reboot</code> en el crontab.</div></div>
<div class="para">El usuario root tiene su propio crontab.</div></div>
<ul class="docnav"><li class="previous"><a accesskey="p" href="a.html"><strong>Anterior</strong>9.6. inetd</a></li>
<li class="up"><a accesskey="u" href="#"><strong>Subir</strong></a></li><li class="home"><a accesskey="h"
href="index.html"><strong>Inicio</strong></a></li><li class="next"><a href="c.html"><strong>Siguiente</strong>9.8.
anacron</a></li></ul></body></html>'''

SPHINX = '''<!DOCTYPE html><html><head><title>tomlparse — Parse TOML files</title><script>x()</script></head><body>
<div class="related" role="navigation"><ul><li><a href="index.html">index</a></li><li><a href="b.html">next</a></li>
</ul></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper"><div class="body" role="main">
<section id="module-tomlparse"><h1>tomlparse — Parse TOML files<a class="headerlink" href="#module-tomlparse">¶</a>
</h1><p>This module parses TOML.</p>
<div class="admonition note"><p class="admonition-title">Note</p><p>It does not write TOML.</p></div>
<section id="conversion-table"><h2>Conversion Table<a class="headerlink" href="#conversion-table">¶</a></h2>
<table class="docutils align-default"><thead><tr class="row-odd"><th class="head"><p>TOML</p></th>
<th class="head"><p>Python</p></th></tr></thead><tbody><tr class="row-even"><td><p>table</p></td><td><p>dict</p></td>
</tr><tr class="row-odd"><td><p>string</p></td><td><p>str</p></td></tr></tbody></table>
<aside class="footnote brackets" id="id2"><span class="label">1</span><p>TOML 1.0.0.</p></aside>
</section></section></div></div></div>
<div class="sphinxsidebar" role="navigation"><h3>Previous topic</h3><p><a href="a.html">configparser</a></p>
<div role="note"><ul class="this-page-menu"><li><a href="_sources/t.rst.txt">Show Source</a></li></ul></div></div>
</div><div class="footer">© Copyright 2001. Last updated on Dec 02, 2026.</div></body></html>'''


def test_a_docbook_page_keeps_its_sidebars_and_drops_its_navigation():
    doc = html_document(DOCBOOK.encode(), 'sect.cron.html')
    assert '/etc/cron.allow' in doc.text and '@reboot' in doc.text and 'SEGURIDAD' in doc.text
    for nav in ('Download the ebook', 'Anterior', 'Siguiente', 'Subir', 'Inicio', 'El manual del Administrador'):
        assert nav not in doc.text, nav
    assert doc.text.startswith('## 9.7. Tareas con cron\n') and doc.text.rstrip().endswith('su propio crontab.')
    dropped = len(re.sub(r'\W', '', 'Download the ebookAnteriorEl manual del AdministradorSiguiente'
                                    'Anterior9.6.inetdSubirInicioSiguiente9.8.anacron'))
    assert doc.chrome_chars == pytest.approx(dropped, abs=3) and doc.visible_chars > 3 * dropped


def test_a_sphinx_page_keeps_notes_footnotes_and_whole_tables():
    doc = html_document(SPHINX.encode(), 'tomlparse.html')
    assert '| TOML | Python |\n|---|---|\n| table | dict |\n| string | str |' in doc.text
    assert 'It does not write TOML.' in doc.text and 'TOML 1.0.0.' in doc.text
    for nav in ('Previous topic', 'configparser', 'Show Source', '¶', 'Copyright', 'next', 'x()'):
        assert nav not in doc.text, nav
    assert [a for _, a in doc.anchors] == ['module-tomlparse', 'conversion-table', 'id2']


def manual_pdf():
    """Ten pages in three chapters: running heads that name the chapter (and the section) at the top of each page
    but the first of a chapter, page numbers at the bottom, identifiers with `_` inside lines and at line ends,
    a URL cut at `_`, a real compound cut at its hyphen, and a word hyphenated across lines."""
    from fpdf import FPDF

    class Manual(FPDF):
        chapter, first = '', False

        def header(self):
            if not self.first:
                self.set_font('helvetica', size=9)
                self.cell(0, 5, f'CHAPTER {self.chapter}', align='L')
                self.ln(10)

        def footer(self):
            self.set_y(-12)
            self.set_font('helvetica', size=9)
            self.cell(0, 5, str(self.page_no()), align='C')

    pdf = Manual()
    pdf.set_auto_page_break(True, margin=20)
    names = ['INSTALLING THE PACKAGES', 'CONFIGURING FONTS', 'THE ENVIRONMENT']
    for n, name in enumerate(names, 1):
        pdf.chapter, pdf.first = f'{n}. {name}', True
        pdf.add_page()
        pdf.set_font('helvetica', 'B', 18)
        pdf.cell(0, 10, f'Chapter {n}', new_x='LMARGIN', new_y='NEXT')
        pdf.first = False
        pdf.set_font('helvetica', size=11)
        for i in range(3 if n < 3 else 2):
            pdf.multi_cell(0, 5, f'Section {n}.{i}: set FONTCONFIG_FILE or XDG_DATA_HOME before you run fc_cache, '
                                 'and keep the list comma separated. The configu-\nration lives in one file. '
                                 'See https://www.example.org/social_\ncontract for the terms. '
                                 'The list is comma-\nseparated, as before. ' * 3, new_x='LMARGIN', new_y='NEXT')
            pdf.ln(3)
            pdf.set_font('courier', size=10)
            pdf.multi_cell(0, 5, 'export FONTCONFIG_FILE=/etc/fonts/local_fonts.conf', new_x='LMARGIN', new_y='NEXT')
            pdf.set_font('helvetica', size=11)
            pdf.add_page()
    return bytes(pdf.output())


def test_a_pdf_keeps_identifiers_and_compounds_and_drops_chapter_heads():
    doc = pdf_document(manual_pdf(), 'manual.pdf')
    assert not re.search(r'\w ?_\s+\w|\w\s+_\w', doc.text), re.search(r'.{30}\w ?_\s+\w.{30}', doc.text)
    assert doc.text.count('FONTCONFIG_FILE') >= 9 and 'XDG_DATA_HOME' in doc.text and 'fc_cache' in doc.text
    assert 'social_contract' in doc.text and 'configuration' in doc.text and 'comma-separated' in doc.text
    assert 'commaseparated' not in doc.text and 'configu-ration' not in doc.text
    assert 'CHAPTER' not in doc.text and not re.search(r'^\d+$', doc.text, re.M)          # heads and page numbers
    assert re.findall(r'^# Chapter \d', doc.text, re.M) == ['# Chapter 1', '# Chapter 2', '# Chapter 3']
    assert '```\nexport FONTCONFIG_FILE=/etc/fonts/local_fonts.conf\n```' in doc.text
    prose = re.sub(r'```.*?```', '', doc.text, flags=re.S)
    assert 'set FONTCONFIG_FILE' in prose                                                  # prose stays prose


def test_a_docs_folder_indexes_documents_not_drawings_styles_icons_or_makefiles(tmp_path, monkeypatch):
    docs = tmp_path / 'docs'
    (docs / 'images').mkdir(parents=True)
    (docs / 'css').mkdir()
    (docs / 'sect.cron.html').write_text(DOCBOOK, encoding='utf-8')
    (docs / 'README').write_text('Este manual explica cron.\n', encoding='utf-8')
    (docs / 'images' / 'netfilter.svg').write_text('<?xml version="1.0"?>\n<!-- Created with Inkscape -->\n'
                                                   '<svg width="10"><text>PREROUTING chain</text></svg>\n')
    (docs / 'images' / 'drawing').write_text('<?xml version="1.0"?>\n<svg width="10"><path d="M 1,2"/></svg>\n')
    (docs / 'images' / 'debian.xpm').write_text('/* XPM */\nstatic char *debian[] = {\n"16 16 2 1",\n};\n')
    (docs / 'images' / 'Makefile').write_text('all: $(patsubst %.svg,%.png,$(wildcard *.svg))\n')
    (docs / 'css' / 'default.css').write_text('body { color: #333; }\n.sidebar { border: 1px solid; }\n')
    from ragnb import chunking, ingest
    with Store.open(tmp_path / 's', embedder=HashEmbedder(), sentence_vectors=False) as s:
        for mod, name in ((ingest, 'not_text'), (chunking, 'not_text_kind'), (chunking, 'sniffed_kind')):
            monkeypatch.setattr(mod, name, lambda _: None)               # as an older ragnb read them: as text
        old = index_paths(s, [docs])
        assert len(old.added) == 7 and not old.binary
        monkeypatch.undo()
        rep = index_paths(s, [docs])
        assert sorted(k for _, k in rep.binary) == ['build files', 'images', 'images', 'images', 'stylesheets']
        assert sorted(s.rsplit('/', 1)[-1] for s in rep.removed) == ['Makefile', 'debian.xpm', 'default.css',
                                                                     'drawing', 'netfilter.svg']
        assert sorted(c.rsplit('/', 1)[-1] for c in s.chunk_sources()) == ['README', 'sect.cron.html']
        assert rep.binary_summary() == 'skipped 5 files with no text to index: images 3, build files 1, stylesheets 1'
        texts = [c.text for c in s.get_chunks([i for i, _ in s.search_lexical('cron.allow', 5)])]
        assert any('/etc/cron.allow' in t for t in texts)
        assert old.chrome_summary().startswith('dropped as page chrome (navigation, banners, footers): ')


def test_a_picture_pasted_into_markdown_is_not_chunked_as_base64(tmp_path):
    "A Typora note and a Google Docs export with pictures as data: URIs: their text, alt text and lines, no base64."
    import base64, os
    blob = base64.b64encode(os.urandom(60000)).decode()
    kb = tmp_path / 'kb'
    kb.mkdir()
    (kb / 'nota.md').write_text(f'# Nota\n\nEl servidor de copias es bk-01.\n\n![captura de la consola](data:image/png;'
                                f'base64,{blob})\n\nLa copia empieza a las dos.\n')
    (kb / 'export.md').write_text(f'# Guía\n\nEl proxy es px-02.\n\n![][image1]\n\n'
                                  f'[image1]: <data:image/png;base64,{blob}>\n')
    with Store.open(tmp_path / 's', embedder=HashEmbedder(), sentence_vectors=False) as s:
        rep = index_paths(s, [kb])
        chunks = s.get_chunks([r[0] for r in s.db.execute('select id from chunks')])
    assert len(rep.added) == 2 and len(chunks) == 2 and not any(blob[:40] in c.text for c in chunks)
    note = next(c for c in chunks if c.source.endswith('nota.md'))
    assert '![captura de la consola](data:image/png)' in note.text and (note.start_line, note.end_line) == (1, 7)


@pytest.mark.parametrize('compound,joined,text', [   # (hyphen kept, hyphen dropped) when the document does not say
    ('comma-separated', None, 'Use a comma. Values are separated. The list is comma-\nseparated here.'),
    (None, 'configuration', 'The configu-\nration is kept.'),
    ('dpkg-reconfigure', None, 'Run dpkg-\nreconfigure now. Then dpkg-reconfigure again.'),
    (None, 'everything', 'We keep every-\nthing. Everything stays.'),
])
def test_line_end_hyphens_follow_the_document(compound, joined, text):
    from fpdf import FPDF
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font('helvetica', size=11)
    pdf.multi_cell(0, 5, text)
    out = pdf_document(bytes(pdf.output())).text
    if compound: assert compound in out
    if joined: assert joined in out and joined[:4] + '-' not in out.lower()
    assert chunk_text(out, 'h.pdf')                                             # and it chunks


PYDOC_BUILD = Path('/usr/share/doc/python3/html')   # python3-doc: a real Sphinx HTML build


@pytest.mark.skipif(not (PYDOC_BUILD / 'searchindex.js').exists(), reason='python3-doc is not installed')
def test_a_real_sphinx_build_is_listed_as_its_pages():
    "Python's docs as installed: every page listed once, without its source copy, search index or theme scripts."
    from ragnb.ingest import IndexReport, list_files
    rep = IndexReport()
    files, _ = list_files(PYDOC_BUILD, rep, {})
    rel = {f.relative_to(PYDOC_BUILD).as_posix() for f in files}
    left = {Path(f).relative_to(PYDOC_BUILD).as_posix(): what for f, what in rep.generated}
    pages = {r for r in rel if r.endswith('.html')}
    assert len(pages) > 400 and not any(r.startswith(('_sources/', '_static/')) for r in rel)
    twins = [f'_sources/{p[:-5]}.rst.txt' for p in pages if (PYDOC_BUILD / f'_sources/{p[:-5]}.rst.txt').exists()]
    assert len(twins) > 400 and all(left[t] == 'page sources' for t in twins)
    assert left['genindex-all.html'] == 'index pages' and left['objects.inv'] == 'search index'
    assert dict((Path(f).name, k) for f, k in rep.binary)['searchindex.js'] == 'minified code'   # one 3.6 MB line
    assert 'tutorial/index.html' in rel and 'library/json.html' in rel


def _chunks_by_file(root:Path) -> dict:
    "What indexing folder `root` gives, file by file: {path: [(text, mode, section, first line, last line, anchor)]}."
    from ragnb.ingest import IndexReport, SourceFile, _document_or_report, _read_or_report, document_chunks, list_files
    from ragnb.readers import locate_chunks
    out, rep = {}, IndexReport()
    for f in list_files(root, rep, {})[0]:
        got = _read_or_report(f, rep)
        doc = got and _document_or_report(f, got[0], rep)
        if doc:
            sf = SourceFile(f, str(f), '', doc, '', '', False, '')
            out[f.relative_to(root).as_posix()] = locate_chunks(document_chunks(sf), doc)
    return {p: [(c.text, c.mode, c.section_title, c.start_line, c.end_line, c.anchor) for c in cs]
            for p, cs in out.items() if cs}


def _archive_chunks_by_file(archive:Path) -> dict:
    "The same for an archive, each chunk given back to its file: lines counted from the file's first, anchor after it."
    from urllib.parse import unquote
    from ragnb.ingest import SourceFile, document_chunks
    from ragnb.readers import locate_chunks, read_document
    doc = read_document(archive)
    cs = locate_chunks(document_chunks(SourceFile(archive, 'k', '', doc, '', '', False, '')), doc)
    firsts, out = {p: first for first, p, _ in doc.parts}, {}
    for c in cs:
        path, _, anchor = c.anchor.partition('#')
        first = firsts[unquote(path)]
        out.setdefault(unquote(path), []).append((c.text, c.mode, c.section_title, c.start_line - first + 1,
                                                  c.end_line - first + 1, anchor or None))
    return out


def _zipped(root:Path, to:Path) -> Path:
    import zipfile
    with zipfile.ZipFile(to, 'w', zipfile.ZIP_DEFLATED) as z:
        for f in sorted(root.rglob('*')):
            if f.is_file(): z.write(f, f.relative_to(root).as_posix())
    return to


_WORD = st.sampled_from('copias restaurar cinta noche guardia llave servidor backup restore nightly key rack'.split())
_PARA = st.lists(_WORD, min_size=3, max_size=40).map(lambda ws: ' '.join(ws).capitalize() + '.')
_MD = st.lists(st.one_of(_PARA, _WORD.map(lambda w: f'## {w.title()}'), _WORD.map(lambda w: f'# {w.title()}')),
               min_size=1, max_size=30).map('\n\n'.join)
_PY = st.lists(_WORD, min_size=1, max_size=6, unique=True).map(
    lambda ws: '\n\n'.join(f'def {w}(x):\n    "Do {w}."\n    return x + {i}\n' for i, w in enumerate(ws)))
_NAME = st.text('abcíñ _-', min_size=1, max_size=8).filter(lambda n: n.strip(' ') == n and not n.startswith('-'))
_FILE = st.tuples(st.lists(_NAME, max_size=2), _NAME, st.sampled_from(['.md', '.txt', '.html', '.py']))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.tuples(_FILE, _MD, _PY), min_size=1, max_size=6))
def test_an_archive_gives_the_chunks_its_folder_gives(files, tmp_path_factory):
    "Any tree of markdown, text, HTML and Python files, zipped, chunks as the folder does: same texts, modes, places."
    base = tmp_path_factory.mktemp('tree')
    root = base / 'kb'
    for (folders, name, ext), md, py in files:
        f = root.joinpath(*folders, name + ext)
        if any(p.exists() and not p.is_dir() for p in f.parents) or f.exists(): continue
        f.parent.mkdir(parents=True, exist_ok=True)
        body = py if ext == '.py' else md
        if ext == '.html': body = ''.join(f'<h2 id="s{i}">{l[3:]}</h2>' if l.startswith('#') else f'<p>{l}</p>'
                                          for i, l in enumerate(md.split('\n\n')))
        f.write_text(body, encoding='utf-8')
    want = _chunks_by_file(root)
    assume(want)
    assert _archive_chunks_by_file(_zipped(root, base / 'kb.zip')) == want


@pytest.mark.skipif(not (PYDOC_BUILD / 'searchindex.js').exists(), reason='python3-doc is not installed')
def test_a_zipped_sphinx_build_chunks_as_its_folder(tmp_path):
    "Python's tutorial as installed, with its build's markers, copied and zipped: the archive chunks as the folder."
    import shutil
    root = tmp_path / 'html'
    for rel in ['searchindex.js', '_static/basic.css', '_static/doctools.js', 'tutorial', '_sources/tutorial']:
        src, dst = PYDOC_BUILD / rel, root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy(src, dst)
    want = _chunks_by_file(root)
    assert len(want) > 10 and all(p.startswith('tutorial/') for p in want)
    assert _archive_chunks_by_file(_zipped(root, tmp_path / 'docs.zip')) == want


def test_front_matter_titles_the_page_and_only_its_files_are_chunked_again(tmp_path, monkeypatch):
    "A docs-as-code page's front matter: its title in its chunks' first line, its keys out, its lines where they were."
    docs = tmp_path / 'site' / 'docs'
    docs.mkdir(parents=True)
    (docs / 'backup-restore.md').write_text('---\ntitle: "Copias de seguridad y restauración"\nsidebar_position: 3\n'
                                            'description: Cómo se copian y restauran los datos.\nslug: /ops/copias\n'
                                            'tags: [ops, restic]\n---\n\n## Restaurar\n\nUse restic restore latest '
                                            '--target /srv.\n')
    (docs / 'plain.md').write_text('# Guardias\n\n---\n\ntitle: not front matter, a rule then text.\n')
    from ragnb import ingest, readers
    with Store.open(tmp_path / 's', embedder=HashEmbedder(), sentence_vectors=False) as s:
        with monkeypatch.context() as m:                   # as a ragnb before front matter read them: as text
            m.setattr(ingest, 'text_document', lambda *a: readers.Document(a[1], 'text'))
            m.setattr(readers, 'text_reader', lambda *_: '')
            old = index_paths(s, [docs])
        assert len(old.added) == 2
        rep = index_paths(s, [docs])
        assert [u.rsplit('/', 1)[-1] for u in rep.updated] == ['backup-restore.md'] and len(rep.unchanged) == 1
        chunks = s.get_chunks([i for i, _ in s.search_lexical('restic restore', 5)])
        page = next(c for c in chunks if c.source.endswith('backup-restore.md'))
        assert page.text.split('\n')[:4] == ['[Doc: Copias de seguridad y restauración]',
                                             'Cómo se copian y restauran los datos.', '', '## Restaurar']
        assert (page.start_line, page.end_line) == (1, 11) and 'sidebar_position' not in page.text
        assert s.sources()[page.source].chunker_version.startswith('frontmatter-v3+documental-v2:')
        assert index_paths(s, [docs]).counts()['unchanged'] == 2
        assert page.metadata == {'sidebar_position': '3', 'slug': '/ops/copias', 'tags': ['ops', 'restic']}
        for filters in ({'sidebar_position': {'$gte': 3}}, {'tags': 'restic'}, {'tags': {'$nin': ['draft']}}):
            assert [i for i, _ in s.search_lexical('restic restore', 5, filters=filters)] == [int(page.id)]
        assert s.search_lexical('restic restore', 5, filters={'tags': {'$ne': 'ops'}}) == []
        index_paths(s, [docs], metadata={'slug': 'guardias'})                        # the run's word wins
        again = s.get_chunks([i for i, _ in s.search_lexical('restic restore', 5)])
        assert {c.metadata['slug'] for c in again} == {'guardias'}


def _archive_bytes(kind:str) -> bytes:
    import io, tarfile, zipfile
    files = {'wiki/index.html': '<h1 id="a">Inicio</h1><p>La guardia empieza a las ocho.</p>',
             'wiki/notes.md': '---\ntitle: Notas\n---\n\nRestic guarda las copias.', 'wiki/logo.png': '\x89PNG'}
    buf = io.BytesIO()
    if kind == 'zip':
        with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as z:
            for n, body in files.items(): z.writestr(n, body)
    else:
        with tarfile.open(fileobj=buf, mode='w:gz') as t:
            for n, body in files.items():
                info, raw = tarfile.TarInfo(n), body.encode()
                info.size = len(raw)
                t.addfile(info, io.BytesIO(raw))
    return buf.getvalue()


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(['zip', 'tar.gz']), cuts=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                                                               min_size=1, max_size=8), truncate=st.booleans())
def test_a_damaged_archive_is_refused_with_its_name_or_read(kind, cuts, truncate, tmp_path_factory):
    "Bytes flipped or cut anywhere in a zip or a tarball: a document, or a `ChunkingError` that names the file."
    from ragnb.chunking import ChunkingError
    from ragnb.readers import read_document
    data = bytearray(_archive_bytes(kind))
    for at, value in cuts: data[at % len(data)] = value
    if truncate: data = data[:cuts[0][0] % len(data)]
    f = tmp_path_factory.mktemp('damaged') / f'kb.{kind}'
    f.write_bytes(bytes(data))
    try: doc = read_document(f)
    except ChunkingError as e: assert str(f) in str(e)
    else: assert doc.kind == 'archive' and all(p.startswith(f'{f}/') for p, _ in doc.parts_skipped)


WIKI_EXPORT = '''<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="es">
  <siteinfo><sitename>Wiki de Sistemas</sitename></siteinfo>
  <page><title>Copias de seguridad</title><ns>0</ns>
    <revision><model>wikitext</model><text xml:space="preserve">Las copias salen a las 02:00 hacia bk-01.
== Restaurar ==
{| class="wikitable"
! Datos !! Orden
|-
| web || restic restore latest --target /srv
|}
[[Categoría:Operaciones]]</text></revision></page>
  <page><title>Discusión:Copias de seguridad</title><ns>1</ns>
    <revision><text xml:space="preserve">¿Copiamos también los sábados?</text></revision></page>
  <page><title>Backup</title><ns>0</ns><redirect title="Copias de seguridad" />
    <revision><text xml:space="preserve">#REDIRECCIÓN [[Copias de seguridad]]</text></revision></page>
  <page><title>Plantilla:Aviso</title><ns>10</ns>
    <revision><text xml:space="preserve">Aviso: {{{1}}}</text></revision></page>
  <page><title>VPN</title><ns>0</ns>
    <revision><text xml:space="preserve">{{Infobox servicio
 | puerto = 1194
}}
La VPN de la oficina es vpn-02.
 openvpn --config oficina.ovpn</text></revision></page>
</mediawiki>
'''


DOKUWIKI_PAGE = '''====== Copias de seguridad ======
Las copias salen cada noche hacia ''bk-01''((Salvo los domingos)).

===== Restaurar =====
  - Parar el servicio.
  - Restaurar los datos:
<code bash>
restic restore latest --target /srv
</code>
^ Datos ^ Destino ^
| web | /srv/www |
'''


def slack_export(root: Path):
    "A Slack export of one channel's day: a question, a join notice, and the answer in the question's thread."
    (root / 'soporte').mkdir(parents=True)
    (root / 'users.json').write_text(json.dumps([{'id': 'U01', 'real_name': 'Ana García', 'email': 'ana@x.es'},
                                                 {'id': 'U02', 'profile': {'real_name': 'Luis Gil'}}]))
    (root / 'channels.json').write_text(json.dumps([{'id': 'C01', 'name': 'soporte'}]))
    day = [{'type': 'message', 'user': 'U01', 'text': '¿Cómo reinicio *faro*? <@U02>', 'ts': '1714989700.0002',
            'thread_ts': '1714989700.0002', 'reply_count': 1, 'client_msg_id': 'a1'},
           {'type': 'message', 'subtype': 'channel_join', 'user': 'U02', 'text': '<@U02> se unió',
            'ts': '1714989750.0001'},
           {'type': 'message', 'user': 'U02', 'text': 'Con `systemctl restart faro`.', 'ts': '1714989800.0003',
            'thread_ts': '1714989700.0002', 'client_msg_id': 'b2'}]
    (root / 'soporte' / '2024-05-06.json').write_text(json.dumps(day, indent=4, ensure_ascii=False))


def test_wiki_pages_are_read_as_pages_and_a_plain_text_prompt_is_not_a_heading(tmp_path):
    """A MediaWiki export: each content page alone, titled and cited by it, talk, redirect and template pages out; a
    DokuWiki page with its headings, steps, code and table; a NEWS file's root prompt as text; a Slack export, as a
    folder and as a zip: a thread as prose, its lists left out, its days read again when a person is renamed; a
    Google Chat export as a conversation; a JSON export of issues as records; an API's description as its
    operations; a Confluence export's page tree left out."""
    kb = tmp_path / 'kb'
    (kb / 'pages' / 'ops').mkdir(parents=True)
    (kb / 'pages' / 'ops' / 'copias.txt').write_text(DOKUWIKI_PAGE)
    (kb / 'faro.1').write_text('.TH FARO 1\n.SH NOMBRE\nfaro \\- rota los registros\n.SH OPCIONES\n.TP\n.B \\-k\n'
                               'Guarda \\fIn\\fR copias\\&.\n')
    (kb / 'faro.info').write_text('This is faro.info.\n\x1f\nFile: faro.info,  Node: Top,  Next: Rotation\n\n'
                                  'Faro\n****\n\n* Menu:\n\n* Rotation::\n\n\x1f\n'
                                  'File: faro.info,  Node: Rotation,  Up: Top\n\n1 Rotation\n**********\n\n'
                                  'Faro keeps seven copies.\n\x1f\nTag Table:\n\x1f\nEnd Tag Table\n')
    (kb / 'informe.tex').write_text('\\documentclass{article}\n\\title{Informe de copias}\n\\begin{document}\n'
                                    '\\section{Restaurar}\\label{s}\n'
                                    'Use \\texttt{restic} con cuidado\\footnote{Lunes.}.\n\\end{document}\n')
    (kb / 'guardia.org').write_text('#+TITLE: Notas de guardia\n#+OPTIONS: toc:nil\n* Certificados :tls:\n'
                                    ':PROPERTIES:\n:ID: 42\n:END:\nSe renuevan con =certbot renew=.\n')
    (kb / 'wiki.xml').write_text(WIKI_EXPORT)
    (kb / 'NEWS').write_text('faro (2.0)\n\n  To keep the cache:\n\n  # echo keep > /etc/faro/keep\n\n  Done.\n')
    (kb / 'pom.xml').write_text('<project><name>faro</name></project>\n')           # other XML: read as before
    (kb / 'roto.xml').write_text(WIKI_EXPORT[:600])
    slack_export(kb / 'slack')
    (kb / 'issues.json').write_text(json.dumps([{'number': 7, 'title': 'faro no arranca', 'body': 'Tras actualizar, '
                                                 'el puerto 8000 queda ocupado por el proceso anterior. ' * 3},
                                                {'number': 8, 'title': 'disco lleno', 'body': 'Los registros de faro '
                                                 'llenan /var en dos días si no se rotan cada noche. ' * 3}], indent=2))
    (kb / 'package.json').write_text('{"name": "faro", "version": "1.0.0"}\n')      # configuration: code, as before
    ops = {f'/servicios/{n}': {'post': {
        'operationId': f'reinicia_{n}', 'summary': f'Reinicia {n}', 'description': f'Reinicia {n} sin cortar las '
        'conexiones abiertas. ' * 14, 'requestBody': {'content': {'application/json': {'schema': {
            '$ref': '#/components/schemas/Reinicio'}}}}, 'responses': {'202': {'description': 'Aceptado.'}}}}
        for n in ('faro', 'nube')}
    (kb / 'api.yaml').write_text(yaml.safe_dump({                    # an API's description: an operation a page
        'openapi': '3.0.3', 'info': {'title': 'API de Faro', 'version': '2'}, 'paths': ops,
        'components': {'schemas': {'Reinicio': {'type': 'object', 'required': ['espera'], 'properties': {'espera': {
            'type': 'integer', 'description': 'Segundos de espera a que acaben las peticiones.'}}}}}},
        allow_unicode=True, sort_keys=False))
    (kb / 'chat').mkdir()                                           # a Google Chat space from Takeout
    (kb / 'chat' / 'messages.json').write_text(json.dumps({'messages': [
        {'creator': {'name': 'Ana García'}, 'created_date': 'Tuesday, May 7, 2024 at 10:00:00 AM UTC',
         'text': '¿Quién tiene la llave del CPD?'},
        {'creator': {'name': 'Luis Gil'}, 'created_date': 'Tuesday, May 7, 2024 at 10:05:00 AM UTC',
         'text': 'La tiene el turno de noche.'}]}, indent=2))
    (kb / 'ops' / 'styles').mkdir(parents=True)                     # a Confluence space exported as HTML
    (kb / 'ops' / 'styles' / 'site.css').write_text('body { margin: 0 }\n')
    (kb / 'ops' / 'index.html').write_text('<h2>Available Pages:</h2><ul><li><a href="Copias_1.html">Copias</a></li>'
                                           '</ul>')
    (kb / 'ops' / 'Copias_1.html').write_text('<title>OPS : Copias</title><div id="main-content"><p>Las copias se '
                                              'restauran con restic.</p></div>')
    shutil.make_archive(str(kb / 'slack-export'), 'zip', kb / 'slack')      # the same export as an admin downloads it
    with Store.open(tmp_path / 's', embedder=HashEmbedder(), sentence_vectors=False) as s:
        rep = index_paths(s, [kb])
        chunks = s.get_chunks([r[0] for r in s.db.execute('select id from chunks')])
        versions = {Path(k).name: v.chunker_version.split('+')[0].split('.')[0] for k, v in s.sources().items()}
        assert index_paths(s, [kb]).counts()['unchanged'] == 15
        users = json.loads((kb / 'slack' / 'users.json').read_text())
        users[1]['profile']['real_name'] = 'Luis Gil Pérez'                 # renamed in the workspace, exported again
        (kb / 'slack' / 'users.json').write_text(json.dumps(users))
        again = index_paths(s, [kb])
        renamed = s.get_chunks([r[0] for r in s.db.execute('select id from chunks')])
    assert [Path(f).name for f in again.updated] == ['2024-05-06.json'] and again.counts()['unchanged'] == 14
    assert {k: v for k, v in versions.items() if k != 'slack-export.zip'} == {
        'wiki.xml': 'mediawiki-v1', 'NEWS': 'plaintext-v1', 'copias.txt': 'dokuwiki-v1', 'guardia.org': 'org-v1',
        'faro.1': 'man-v1', 'faro.info': 'info-v1', 'informe.tex': 'latex-v1',
        'pom.xml': 'documental-v2:t1500-m2200-o200', '2024-05-06.json': 'slack-v1', 'issues.json': 'jsonrecords-v1',
        'package.json': 'codigo-v4:t1500-m2200', 'Copias_1.html': 'html-v6', 'messages.json': 'chat-v1',
        'api.yaml': 'openapi-v1'}
    assert sorted((Path(f).name, what) for f, what in rep.generated) == [
        ('channels.json', "chat export's lists"), ('index.html', 'index pages'), ('users.json', "chat export's lists")]
    chat, = [c for c in chunks if c.source.endswith('messages.json')]
    assert chat.text.split('\n')[:1] + chat.text.split('\n\n')[1:] == [
        '[Doc: chat > ¿Quién tiene la llave del CPD?]', 'Ana García [2024-05-07 10:00]: ¿Quién tiene la llave del CPD?',
        'Luis Gil [2024-05-07 10:05]: La tiene el turno de noche.']
    api = sorted((c for c in chunks if c.source.endswith('api.yaml')), key=lambda c: c.start_line)
    assert [(c.cite, c.text.split('\n')[0]) for c in api[:2]] == [
        ('kb/api.yaml#reinicia_faro', '[Doc: API de Faro 2 > POST /servicios/faro · Reinicia faro]'),
        ('kb/api.yaml#reinicia_nube', '[Doc: API de Faro 2]')]           # with the schema's page: the two merged
    assert '| espera | integer | yes | Segundos de espera a que acaben las peticiones. |' in api[0].text  # its $ref
    issues, = [c for c in chunks if c.source.endswith('issues.json')]
    assert issues.text.split('\n')[:3] == ['[Doc: issues]', '## 7 · faro no arranca', ''] and '"' not in issues.text
    assert (issues.start_line, issues.end_line, issues.cite) == (2, 7, 'kb/issues.json#7')   # its key; the file's lines
    day, = [c for c in chunks if c.source.endswith('2024-05-06.json')]
    zipped, = [c for c in chunks if c.source.endswith('slack-export.zip')]
    assert day.cite == 'kb/slack/soporte/2024-05-06.json#p17149897000002'
    assert zipped.cite == 'kb/slack-export.zip#soporte/2024-05-06.json#p17149897000002'
    assert day.text == zipped.text == (
        '[Doc: #soporte 2024-05-06 > ¿Cómo reinicio faro? @Luis Gil]\n# ¿Cómo reinicio faro? @Luis Gil\n\n'
        'Ana García [10:01]: ¿Cómo reinicio **faro**? @Luis Gil\n\nLuis Gil [10:03]: Con `systemctl restart faro`.')
    assert [c.text for c in renamed if c.source.endswith('slack/soporte/2024-05-06.json')] == [
        day.text.replace('Luis Gil', 'Luis Gil Pérez')]                    # the day read again with the new name
    assert [(p.rsplit('/', 1)[-1], why[:60]) for p, why in rep.skipped] == [
        ('roto.xml', f'{kb / "roto.xml"}: not a well-formed MediaWiki export'[:60])]
    wiki = sorted((c for c in chunks if c.source.endswith('wiki.xml')), key=lambda c: c.start_line)
    assert [c.text.split('\n')[0] for c in wiki] == ['[Doc: Copias de seguridad]', '[Doc: VPN]']
    assert [c.cite for c in wiki] == ['kb/wiki.xml#Copias_de_seguridad', 'kb/wiki.xml#VPN']
    assert '| web | restic restore latest --target /srv |' in wiki[0].text and 'vpn-02' not in wiki[0].text
    assert '- puerto: 1194' in wiki[1].text and '```\nopenvpn --config oficina.ovpn\n```' in wiki[1].text
    lines = WIKI_EXPORT.split('\n')
    assert [(lines[c.start_line - 1][:40], lines[c.end_line - 1][-40:]) for c in wiki] == [
        (lines[3][:40], lines[8][-40:]), (lines[18][:40], lines[22][-40:])]        # the export's own lines
    text = ' '.join(c.text for c in chunks)
    for gone in ('sábados', 'REDIRECCIÓN', 'Aviso:', 'Categoría', '<page>', '{{'):
        assert gone not in text, gone
    doku = sorted((c for c in chunks if c.source.endswith('copias.txt')), key=lambda c: c.start_line)
    assert [c.text.split('\n')[0] for c in doku] == ['[Doc: Copias de seguridad]']
    assert doku[0].text.split('\n')[1:] == [
        '# Copias de seguridad', 'Las copias salen cada noche hacia `bk-01` (Salvo los domingos).', '',
        '## Restaurar', '1. Parar el servicio.', '1. Restaurar los datos:', '```bash',
        'restic restore latest --target /srv', '```', '| Datos | Destino |', '|---|---|', '| web | /srv/www |']
    assert (doku[0].start_line, doku[0].end_line) == (1, 11)
    org = next(c for c in chunks if c.source.endswith('guardia.org'))
    assert org.text == '[Doc: Notas de guardia > Certificados]\n# Certificados\n\nSe renuevan con `certbot renew`.'
    assert (org.start_line, org.end_line) == (3, 7)
    man = next(c for c in chunks if c.source.endswith('faro.1'))
    assert man.text == ('[Doc: faro(1)]\n# NOMBRE\nfaro - rota los registros\n\n# OPCIONES\n\n-k\n'
                        'Guarda n copias.') and (man.start_line, man.end_line) == (2, 7)
    info = next(c for c in chunks if c.source.endswith('faro.info'))
    assert info.text == '[Doc: Faro > 1 Rotation]\n# 1 Rotation\n\nFaro keeps seven copies.'   # no menu, no header
    assert info.cite == 'kb/faro.info#Rotation' and (info.start_line, info.end_line) == (15, 18)
    tex = next(c for c in chunks if c.source.endswith('informe.tex'))
    assert tex.text == '[Doc: Informe de copias > Restaurar]\n# Restaurar\nUse `restic` con cuidado (Lunes.).'
    assert (tex.start_line, tex.end_line) == (4, 5)
    news = next(c for c in chunks if c.source.endswith('NEWS'))
    assert news.text.split('\n')[0] == '[Doc: NEWS]' and '\\# echo keep > /etc/faro/keep' in news.text


def test_an_antora_component_reads_its_attributes_and_leaves_out_its_navigation(tmp_path):
    """An Antora component: its pages' `{producto}` as `antora.yml` sets it (not inside a listing), its `nav.adoc`
    (every page's title) and `antora.yml` left out, and its pages read again when an attribute changes."""
    comp = tmp_path / 'kb' / 'docs'
    (comp / 'modules' / 'ROOT' / 'pages').mkdir(parents=True)
    (comp / 'antora.yml').write_text('name: faro\ntitle: Faro\nversion: "3"\nnav:\n- modules/ROOT/nav.adoc\n'
                                     'asciidoc:\n  attributes:\n    producto: Faro\n    cli: faroctl\n')
    (comp / 'modules' / 'ROOT' / 'nav.adoc').write_text('* xref:guardias.adoc[Guardias]\n')
    (comp / 'modules' / 'ROOT' / 'pages' / 'guardias.adoc').write_text(
        '= Guardias de {producto}\n:cli: faroctl-2\n\nReinicia {producto} con `{cli} reiniciar`.\n\n'
        '----\necho {producto}\n----\n')
    with Store.open(tmp_path / 's', embedder=HashEmbedder(), sentence_vectors=False) as s:
        rep = index_paths(s, [tmp_path / 'kb'])
        text = '\n'.join(c.text for c in s.get_chunks([r[0] for r in s.db.execute('select id from chunks')]))
        version = next(iter(s.sources().values())).chunker_version
        (comp / 'antora.yml').write_text('name: faro\nasciidoc:\n  attributes:\n    producto: Faro Nube\n')
        again = index_paths(s, [tmp_path / 'kb'])
        text2 = '\n'.join(c.text for c in s.get_chunks([r[0] for r in s.db.execute('select id from chunks')]))
    assert sorted((Path(f).name, what) for f, what in rep.generated) == [
        ('antora.yml', 'site configuration'), ('nav.adoc', 'table of contents')]
    assert 'Reinicia Faro con `faroctl-2 reiniciar`.' in text and 'echo {producto}' in text, text   # the page's own
    assert version.startswith('adoc-v1.') and '# Guardias de Faro' in text
    assert [Path(f).name for f in again.updated] == ['guardias.adoc'] and 'Reinicia Faro Nube con' in text2


FAKE_KEY = ('-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx3Hq0pZlWm9cQ2bVfX1\nq83bXyTmZ0k7Jd0vQ9sLr2PzW8n\n'
            '-----END RSA PRIVATE KEY-----')
KEY_FILES = [   # (name, text, indexed?): key material is left out whole; a text with a key, without it
    ('id_ed25519', '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n',
     False),
    ('server.pem', 'Bag Attributes\n    friendlyName: faro\nsubject=/CN=faro\n-----BEGIN CERTIFICATE-----\nMIIB\n'
     '-----END CERTIFICATE-----\n', False),
    ('KEYS.asc', '-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBF\n-----END PGP PUBLIC KEY BLOCK-----\n', False),
    ('id_rsa.key', FAKE_KEY + '\n', False),
    ('certificados.md',
     f'# Certificados\n\nLa clave del servidor:\n\n```\n{FAKE_KEY}\n```\n\nSe renueva con certbot.\n', True),
    ('secreto.yaml', 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: faro-tls\nstringData:\n  tls.key: |\n'
     + ''.join(f'    {line}\n' for line in FAKE_KEY.split('\n')) + '  tls.crt: ver el certificado\n', True),
    ('claves.html', f'<h1>Claves</h1><pre>{FAKE_KEY}</pre><p>Pídela a seguridad.</p>', True),     # any reader's text
    ('credentials.json', '{"type": "service_account", "private_key_id": "hunter2"}', False),   # by its name
]


def test_private_keys_and_certificates_never_reach_a_chunk(tmp_path):
    "Key files are left out and counted; a private key inside a page or a manifest is left out of it, line for line."
    kb = tmp_path / 'kb'
    kb.mkdir()
    for name, text, _ in KEY_FILES: (kb / name).write_text(text)
    with Store.open(tmp_path / 's', embedder=HashEmbedder(), sentence_vectors=False) as s:
        rep = index_paths(s, [kb])
        chunks = s.get_chunks([r[0] for r in s.db.execute('select id from chunks')])
        versions = {Path(k).name: v.chunker_version.split('+')[0] for k, v in s.sources().items()}
    assert sorted(Path(f).name for f, kind in rep.binary if kind in ('keys and certificates', 'secrets')) == sorted(
        name for name, _, indexed in KEY_FILES if not indexed)
    assert versions == {'certificados.md': 'keys-v1', 'secreto.yaml': 'keys-v1', 'claves.html': 'html-v6'}
    text = '\n'.join(c.text for c in chunks)
    assert 'MIIEowIBAAK' not in text and 'PRIVATE KEY-----' not in text, text
    assert '(rsa private key left out)' in text and 'Se renueva con certbot.' in text and 'Secret faro-tls' in text
    assert 'Pídela a seguridad.' in text and 'hunter2' not in text
    md, = [c for c in chunks if c.source.endswith('certificados.md')]
    assert md.lines == '1-12'                                           # the file's own lines, key included
