"""`documental_jerarquico`: trees of real documents, stored once, switched per file, and retrieved under a budget.
One store of the bundled docs (a hash embedder, so it builds in a second) is shared by the store tests."""
import io, shutil
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from faults import HashEmbedder
from ragnb.chunking import chunk_text, normalize_markdown
from ragnb.cli import main
from ragnb.context import LONG_SECTION_CHUNKS, tree_context
from ragnb.hierarchy import JERARQUICO, JERARQUICO_STRATEGIES, LONG_DOCUMENT, LeafSizes, chunk_jerarquico, joined_body
from ragnb.index import ScopedStore, Store
from ragnb.ingest import bundled_data_dir, index_paths
from ragnb.retrieve import RetrieveOpts, retrieve

DOCS = bundled_data_dir() / 'docs'
N_ES = len(list((DOCS / 'es').glob('*.md')))

# (document, leaf sizes, expected: [(section path, [leaf bodies])]) : tests as data
TREE_CASES = [
    ('# T\n\nUno. Dos.\n\n## A\n\nTres.', LeafSizes(400, 700),
     [('T', ['# T\n\nUno. Dos.']), ('T > A', ['## A\n\nTres.'])]),
    ('# T\n\n## Vacía\n\n## B\n\nCuatro.', LeafSizes(400, 700),          # sections of only a heading join the next
     [('T > B', ['# T\n\n## Vacía\n\n## B\n\nCuatro.'])]),
    ('# T\n\nUna frase larga aquí. Otra frase larga aquí. Y una tercera frase.', LeafSizes(30, 60),
     [('T', ['# T\n\nUna frase larga aquí.', 'Otra frase larga aquí.', 'Y una tercera frase.'])]),
    ('# T\n\n```\na = 1\n\nb = 2\n```\n\nFin.', LeafSizes(400, 700),      # a fence is never cut inside when it fits
     [('T', ['# T\n\n```\na = 1\n\nb = 2\n```\n\nFin.'])]),
]


@pytest.mark.parametrize('text, sizes, expected', TREE_CASES)
def test_a_document_becomes_sections_of_leaves(text, sizes, expected):
    leaves = chunk_jerarquico(text, source='t.md', leaves=sizes)
    got = {}
    for c in leaves: got.setdefault((c.tree[0], c.section_title), []).append(c.body)
    assert [(path, bodies) for (_, path), bodies in got.items()] == expected
    assert [c.tree[2] for c in leaves if c.tree[0] == leaves[-1].tree[0]] == list(range(len(expected[-1][1])))


paragraph = st.lists(st.sampled_from(['Datos', 'tenant', 'logs.', 'claves', 'RLS.', 'copia', 'Rollback!']),
                     min_size=1, max_size=30).map(' '.join)
block = st.one_of(paragraph, paragraph, st.just('## Sección'), st.just('- a\n- b'), st.just('```\nx = 1\n```'))


@settings(max_examples=150, deadline=None)
@given(st.lists(block, min_size=1, max_size=12).map('\n\n'.join), st.integers(20, 300))
def test_leaves_partition_each_section_and_join_back_to_it(text, leaf):
    leaves = chunk_jerarquico(text, source='p.md', target=600, max_chars=900, leaves=LeafSizes(leaf, leaf + 100))
    norm = normalize_markdown(text)[0]
    for s in {c.tree[0] for c in leaves}:
        sec = [c for c in leaves if c.tree[0] == s]
        assert [c.tree[2] for c in sec] == list(range(len(sec)))                     # positions without a gap
        assert joined_body(sec).split() == norm[sec[0].start_char:sec[-1].end_char].split()
        assert all(a.end_char <= b.start_char for a, b in zip(sec, sec[1:]))          # no overlap: stored once
    assert all(len(c.body) <= 900 for c in leaves)


def test_rst_and_asciidoc_become_trees_too():
    rst = chunk_text('Título\n======\n\nUno.\n\nParte\n-----\n\nDos.', 'a.rst', strategies=JERARQUICO_STRATEGIES)
    adoc = chunk_text('= Título\n\nUno.\n\n== Parte\n\nDos.', 'a.adoc', strategies=JERARQUICO_STRATEGIES)
    for leaves in (rst, adoc):
        assert [c.section_title for c in leaves] == ['Título', 'Título > Parte']
        assert leaves[0].chunker_version.startswith(JERARQUICO)


@pytest.fixture(scope='module')
def tree_store(tmp_path_factory):
    "The bundled docs: Spanish ones as trees, English ones as documental (one store holds both kinds)."
    path = tmp_path_factory.mktemp('tree') / 'store'
    notes = path.parent / 'notas' / 'notas.md'          # leaves of ~680 characters, and a one-line fence
    notes.parent.mkdir()
    para = lambda w: ' '.join([f'{w} de la guía de operaciones.'] * 18)
    notes.write_text(f'# Notas de operación del equipo de plataforma\n\n{para("Primera parte")}\n\n'
                     f'```\nfaroctl up\n```\n\n{para("Segunda parte")}\n\n'
                     f'## Más\n\n{para("Tercera")}\n\n{para("Cuarta")}\n\n{para("Quinta")}\n', encoding='utf-8')
    with Store.open(path, embedder=HashEmbedder()) as s:
        index_paths(s, [DOCS / 'es', notes.parent], chunking='jerarquico')
        index_paths(s, [DOCS / 'en'], chunking='documental')      # one store holds both kinds
    return path


def test_the_tree_is_stored_once_and_checked(tree_store):
    with Store.open(tree_store, embedder=HashEmbedder(), readonly=True) as s:
        v = s.verify()
        n_es = s.db.execute("select count(*) from chunks where source not like '%/en/%'").fetchone()[0]
        versions = {r[0].split(':')[0] for r in s.db.execute('select chunker_version from sources')}
    assert v['problems'] == [] and v['tree']['leaves'] == n_es and v['tree']['documents'] == N_ES + 1
    assert versions == {'documental-v2', JERARQUICO}
    out = io.StringIO()
    with redirect_stdout(out): assert main(['check', '--store', str(tree_store)]) == 0
    assert f"| document tree: leaves / chunks / sections / documents | {n_es} / " in out.getvalue()


@pytest.mark.parametrize('budget', [60, 150, 400, 1000])
def test_a_budget_is_never_exceeded_and_citations_stay_exact(tree_store, budget):
    q = '¿Cómo se hace un rollback en producción y quién aprueba el acceso al clúster?'
    with Store.open(tree_store, embedder=HashEmbedder(), readonly=True) as s:
        res = retrieve(s, q, opts=RetrieveOpts(context_budget=budget))
        lines = {}
        for c in res.chunks:
            if c.source.endswith('.md') and '/es/' in c.source:
                text = Path(c.source).read_text(encoding='utf-8').splitlines()
                lines[c.id] = '\n'.join(text[c.start_line - 1:c.end_line])
    assert res.tokens_in_context <= budget and res.chunks
    assert abs(sum(t['tokens'] for t in res.info['tree']) - res.tokens_in_context) <= len(res.chunks)   # rounding
    for c in res.chunks:            # every piece's words are in its file, between the lines it cites, in order
        if c.id in lines:
            words = [w for w in c.body.split() if w != '[...]']
            cited = lines[c.id].split()
            assert words[:3] == [w for w in cited if w in words][:3] and set(words) <= set(cited)


def test_siblings_merge_only_when_that_costs_no_more(tree_store):
    "Two hits one leaf apart merge into one piece exactly when the leaf between is shorter than a [Doc: ...] line."
    words = lambda text: len(text.split())
    with Store.open(tree_store, embedder=HashEmbedder(), readonly=True) as s:
        leaves = {int(c.id): c for c in s.get_chunks(list(range(1, 400)))}
        nodes = s.tree.nodes(list(leaves))
        at = {(n.source, n.section, n.position): i for i, n in nodes.items()}
        pairs = [(i, at[(n.source, n.section, n.position + 2)], at[(n.source, n.section, n.position + 1)])
                 for i, n in nodes.items() if (n.source, n.section, n.position + 2) in at]
        outcomes = set()
        for a, b, middle in pairs:
            got, what = tree_context(s, [leaves[a], leaves[b]], window=0, top_k=2)
            merge = words(leaves[middle].body) <= words(leaves[a].prefix)
            assert len(got) == (1 if merge else 2) and sum(w['hits'] for w in what) == 2
            if merge: assert got[0].body.split() == ' '.join(leaves[x].body for x in (a, middle, b)).split()
            outcomes.add(merge)
    assert outcomes == {True, False}                   # both cases were seen


def test_switching_strategy_reindexes_only_the_files_that_switch(tmp_path):
    docs = tmp_path / 'docs'
    shutil.copytree(DOCS / 'es', docs)
    long = docs / 'manual-largo.md'
    body = '\n\n'.join(f'## Parte {i}\n\n' + ' '.join(f'Frase {i}.{j} del manual largo.' for j in range(40))
                       for i in range(LONG_DOCUMENT // 1200 + 1))
    long.write_text('# Manual largo\n\n' + body, encoding='utf-8')
    assert long.stat().st_size >= LONG_DOCUMENT
    with Store.open(tmp_path / 'store', embedder=HashEmbedder()) as s:
        first = index_paths(s, [docs])
        auto = index_paths(s, [docs], chunking='auto')
        again = index_paths(s, [docs])                      # no mode given: the store's, recorded by the last run
        tree, recorded = s.tree.counts(), s.manifest['chunking']
        back = index_paths(s, [docs], chunking='documental')
        after = s.tree.counts()
        assert s.verify()['problems'] == []
    assert len(first.added) == N_ES + 1
    assert (auto.updated, len(auto.unchanged)) == ([long.resolve().as_posix()], N_ES)
    assert again.updated == [] and len(again.unchanged) == N_ES + 1 and recorded == 'auto'
    assert tree['documents'] == 1 and tree['leaves'] > 40
    assert back.updated == [long.resolve().as_posix()] and after['leaves'] == 0   # its tree went with its leaves


@pytest.mark.parametrize('secret_at', [(2, 3), (0, 1)])      # (0, 1): the first leaves of a long section
def test_a_tenant_filter_never_leaks_through_a_sibling(tmp_path, secret_at):
    "Leaves of one section for two tenants: growing a tenant's hits, or its section's summary line, shows no other's."
    n = 6 if secret_at == (2, 3) else 40
    text = '# Guía\n\n' + '\n\n'.join('SECRETO-B. ' * (i in secret_at) + f'Paso {i} de la guía de copias. ' * 6
                                    for i in range(n))
    leaves = chunk_jerarquico(text, source='guia.md', leaves=LeafSizes(150, 300))
    for c in leaves: c.metadata = {'tenant': 'b' if 'SECRETO-B' in c.text else 'a'}
    assert len({c.tree[0] for c in leaves}) == 1 and {c.metadata['tenant'] for c in leaves} == {'a', 'b'}
    assert len({c.tree[1] for c in leaves}) >= (LONG_SECTION_CHUNKS if n == 40 else 1)
    with Store.open(tmp_path / 's', embedder=HashEmbedder()) as s:
        s.add_documents(leaves)
        for budget in (None, 200, 5000):
            for view, filters in ((s, {'tenant': 'a'}), (ScopedStore(s, {'tenant': ['a']}), None)):
                res = retrieve(view, 'pasos de la guía de copias', top_k=10, filters=filters,
                               opts=RetrieveOpts(context_budget=budget))
                assert res.chunks and 'SECRETO-B' not in res.context()
        assert 'SECRETO-B' in retrieve(s, 'pasos de la guía', opts=RetrieveOpts(context_budget=5000)).context()
