"reStructuredText and AsciiDoc headings and literal blocks (issue 19.4), the `[Doc:]` prefix (19.5): tables of cases."
import re
from pathlib import Path

import pytest

from ragnb.chunking import asciidoc_as_markdown, chunk_document, chunk_text, read_text_file, rst_as_markdown

RST_TITLES = [   # (input, the section titles documental-v2 gives, in order)
    ('Title\n=====\n\nText.\n', ['Title']),
    ('=====\nTitle\n=====\n\nAbc\n---\n\nText.\n', ['Title > Abc']),
    ('Top\n===\n\nSub\n---\n\nText.\n\nSub2\n----\n\nMore.\n', ['Top > Sub', 'Top > Sub2']),
    ('Top\n===\n\nExample::\n\n   # not a title\n   x = 1\n\nAfter.\n', ['Top']),
    ('Top\n===\n\n.. code-block:: python\n   :linenos:\n\n   # a comment\n   pass\n\nAfter.\n', ['Top']),
    ('Top\n===\n\n::\n\n    # literal\n', ['Top']),
    ('Top\n===\n\n.. note::\n\n   # prose, indented: never a heading\n', ['Top']),
    ('Top\n===\n\nText\n\n----\n\nMore text.\n', ['Top']),                 # a transition is not a title
    ('Top\n===\n\nLine one\nline two\n--------\n', ['Top']),              # an underline inside a paragraph
]


@pytest.mark.parametrize('rst,titles', RST_TITLES)
def test_rst_titles_and_literal_blocks(rst, titles):
    md = rst_as_markdown(rst)
    assert md.count('\n') == rst.count('\n')                        # line for line: line numbers stay the file's
    got = [c.section_title for c in chunk_document(rst, source='x.rst', target=20, overlap=0)]
    assert list(dict.fromkeys(got)) == titles


ADOC_TITLES = [
    ('= Guide\n\n== Install\n\nText.\n', ['Guide > Install']),
    ('= Guide\n\n== Run\n\n----\n# comment\n== not a title\n----\n\n== Stop\n\nText.\n',
     ['Guide > Run', 'Guide > Stop']),
    ('= Guide\n\n....\n= literal\n....\n', ['Guide']),
    ('= Guide\n\n////\n== commented out\n////\n', ['Guide']),
]


@pytest.mark.parametrize('adoc,titles', ADOC_TITLES)
def test_asciidoc_titles_and_blocks(adoc, titles):
    assert asciidoc_as_markdown(adoc).count('\n') == adoc.count('\n')
    got = [c.section_title for c in chunk_document(adoc, source='x.adoc', target=20, overlap=0)]
    assert list(dict.fromkeys(got)) == titles


ADOC_READ = [   # (AsciiDoc, a text its chunks hold, a text they must not hold: what the page does not show)
    ('= Guía\nAna Ruiz <ana@nubeluz.es>\nv2, 2024\n:toc: left\n\n== Uso\n\nTexto.\n', 'Texto.', 'ana@nubeluz.es'),
    ('= Guía\n:toc: left\n:producto: Faro\n\nUsa {producto}.\n', 'Usa Faro.', ':toc:'),
    ('= G\n:url: https://x.es\n\nVer {url}/docs[la documentación].\n', 'Ver la documentación.', 'https://x.es'),
    ('= G\n\n// nota interna\nTexto.\n', 'Texto.', 'nota interna'),
    ('= G\n\n////\nborrador\n////\nTexto.\n', 'Texto.', 'borrador'),
    ('= G\n\nifdef::env-github[]\nSolo en GitHub.\nendif::[]\nTexto.\n', 'Texto.', 'Solo en GitHub'),
    ('= G\n\nifdef::interno[]\nEl teléfono.\nendif::[]\n', 'El teléfono.', 'ifdef::'),   # a build may set it
    ('= G\n\n[source,bash]\n----\nfaroctl estado <1>\n----\n', '```bash\nfaroctl estado\n```', '<1>'),
    ('= G\n\n|===\n|Semana |Titular\n\n|19 |Ana\n|===\n', '| Semana | Titular |\n|---|---|\n| 19 | Ana |', '|==='),
    ('= G\n\ninclude::partes/a.adoc[]\nTexto.\n', 'Texto.', 'include::'),
]


@pytest.mark.parametrize('adoc,held,left_out', ADOC_READ)
def test_asciidoc_reads_as_its_page(adoc, held, left_out):
    text = '\n'.join(c.body for c in chunk_document(adoc, source='guia.adoc'))
    assert held in text and left_out not in text, text


ASCIIDOCTOR_README = Path('/usr/share/doc/asciidoctor/README.adoc.gz')


@pytest.mark.skipif(not ASCIIDOCTOR_README.is_file(), reason='Asciidoctor is not installed (apt install asciidoctor)')
def test_asciidoctors_own_readme():
    """The README opens with 54 lines of authors, attribute entries and conditionals: none of it is a chunk's text,
    no attribute reference or link macro is left outside code, and each section's title is a heading."""
    text = read_text_file(ASCIIDOCTOR_README)
    chunks = chunk_text(text, ASCIIDOCTOR_README)
    prose = re.sub(r'^```.*?^```', '', '\n'.join(c.body for c in chunks), flags=re.M | re.S)   # code as written
    assert not re.search(r'\{url-[\w-]+\}|^:[\w-]+:|ifn?def::|endif::|link:|https?://\S+\[', prose, re.M), prose[:500]
    assert chunks[0].body.startswith('# Asciidoctor\n\nAsciidoctor is a fast, open source'), chunks[0].body[:200]
    titles = {t[1] for t in re.finditer(r'^={2,6} (.+)$', text, re.M)}
    assert titles <= {h[1] for c in chunks for h in re.finditer(r'^#{2,6} (.+)$', c.body, re.M)}   # as headings


PREFIXES = [   # (markdown, the first chunk's prefix)
    ('# Guía de despliegue de Faro\n\n## Rollback\n\nHazlo así.', '[Doc: Guía de despliegue de Faro > Rollback]'),
    ('# Guía\n\nSolo texto.', '[Doc: Guía]'),
    ('Texto sin título.\n\n## Sección\n\nMás.', '[Doc: notas]'),
    ('## Sección\n\nMás texto aquí.', '[Doc: notas > Sección]'),
]


@pytest.mark.parametrize('md,prefix', PREFIXES)
def test_the_title_is_not_repeated_in_the_prefix(md, prefix):
    assert chunk_text(md, 'docs/notas.md')[0].prefix == prefix


def test_the_bundled_guide_prefix_says_its_title_once():
    guide = Path(__file__).resolve().parent.parent / 'data' / 'docs' / 'es' / 'despliegue.md'
    for c in chunk_text(read_text_file(guide), guide):
        parts = c.prefix[len('[Doc: '):-1].split(' > ')
        assert len(parts) < 2 or parts[0] != parts[1], c.prefix


PYDOCS = Path('/usr/share/doc/python3-dev/html/_sources')


@pytest.mark.skipif(not PYDOCS.is_dir(), reason="Python's docs sources are not installed (apt install python3-doc)")
def test_python_docs_rst_sources_get_real_sections():
    files = sorted(PYDOCS.rglob('*.rst.txt'))
    n = no_section = 0
    for f in files:
        text = read_text_file(f)
        titles = {l.split(' ', 1)[1] for l in rst_as_markdown(text).split('\n') if l[:1] == '#' and ' ' in l}
        for c in chunk_text(text, f):
            n += 1
            parts = [p for p in c.section_title.split(' > ') if p]
            no_section += not parts
            assert all(p in titles for p in parts), (f, c.section_title)
    assert n > 1000 and no_section / n < 0.05, (n, no_section)
