"Hybrid retrieval (issue 13): filters on both sides at 0.1%, 1% and 100% selectivity, fusion, old stores."
import sqlite3

import numpy as np, pytest

import faults
from faults import HashEmbedder
from ragnb.chunking import Chunk
from ragnb.index import Store, StoreError
from ragnb.ingest import index_paths
from ragnb.retrieve import RetrieveOpts, retrieve

N = 5000


@pytest.fixture(scope='module')
def store(tmp_path_factory):
    "5,000 chunks: tenant t0 holds 0.1% (5), t1 1% (50), t2 the rest; every chunk says 'rollback' and its own word."
    tenant = ['t0' if i < 5 else 't1' if i < 55 else 't2' for i in range(N)]
    chunks = [Chunk(f'[Doc: d{i}]\nEl rollback del servicio {i} usa la palabra clave{i}.', f'/src/{i % 97}.md',
                    'documental', 's', 1, 1, 0, 1, 'v', {'tenant': tenant[i]}) for i in range(N)]
    s = Store.open(tmp_path_factory.mktemp('hybrid'), embedder=HashEmbedder(64), sentence_vectors=False)
    s.add_documents(chunks)
    yield s, tenant
    s.close()


@pytest.mark.parametrize('mode', ['hybrid', 'lexical', 'dense'])
@pytest.mark.parametrize('tenant,n', [('t0', 5), ('t1', 50), (None, N)])
def test_filters_never_leak_and_fill_k(store, mode, tenant, n):
    s, tenants = store
    for q in ('rollback', '¿Cómo hago un rollback del servicio 3?', 'clave17 clave4000'):
        res = retrieve(s, q, top_k=10, opts=RetrieveOpts(mode=mode), filters={'tenant': tenant} if tenant else None)
        assert len(res.chunks) == min(10, n), (mode, tenant, q)                 # every chunk matches 'rollback'
        if tenant: assert {c.metadata['tenant'] for c in res.chunks} == {tenant}
        if mode != 'dense': assert [r['id'] for r in res.info['ranks']] == [c.id for c in res.chunks]


def test_an_exact_word_wins_in_lexical_and_hybrid(store):
    s, _ = store
    res = retrieve(s, 'clave4321', top_k=3, opts=RetrieveOpts(mode='lexical'))
    assert res.chunks[0].text.endswith('clave4321.') and res.info['ranks'][0]['lexical_rank'] == 1
    res = retrieve(s, 'clave4321', top_k=3, opts=RetrieveOpts(mode='hybrid'))   # random dense side: a tie at 1/(k+1)
    hit = next(r for r, c in zip(res.info['ranks'], res.chunks) if c.text.endswith('clave4321.'))
    assert hit['lexical_rank'] == 1 and res.info['ranks'].index(hit) <= 1


def test_hybrid_needs_text_and_a_lexical_index(tmp_path):
    with Store.open(tmp_path / 's', embedder=HashEmbedder(), sentence_vectors=False) as s:
        s.add_documents([Chunk('[Doc: a]\nrollback now', '/a.md', 'documental', '', 1, 1, 0, 1, 'v')])
        with pytest.raises(ValueError, match="needs the question's text"):
            retrieve(s, np.ones(32, np.float32) / 32 ** .5)
        with pytest.raises(ValueError, match='mode must be one of'): retrieve(s, 'x', opts=RetrieveOpts(mode='bm25'))
    with sqlite3.connect(tmp_path / 's' / 'chunks.sqlite') as db:          # a store from before the lexical index
        db.execute('drop table lexical')
        db.execute("delete from meta where key='lexical_version'")
    r = Store.open(tmp_path / 's', readonly=True, embedder=HashEmbedder())
    with pytest.raises(StoreError, match='no lexical index yet'): retrieve(r, 'rollback')
    assert len(retrieve(r, 'rollback', opts=RetrieveOpts(mode='dense')).chunks) == 1     # dense, when asked for
    r.close()
    with Store.open(tmp_path / 's', embedder=HashEmbedder()) as w:                      # the next writer builds it
        assert w.verify()['lexical_rows'] == 1 and w.verify()['problems'] == []
    with Store.open(tmp_path / 's', readonly=True, embedder=HashEmbedder()) as r:
        assert retrieve(r, 'rollback').info['ranks'][0]['lexical_rank'] == 1


def test_lexical_rows_follow_updates_and_removals(tmp_path):
    corpus = faults.copy_corpus(tmp_path / 'corpus')
    with Store.open(tmp_path / 's', embedder=HashEmbedder()) as s:
        index_paths(s, [corpus / 'docs'])
        (corpus / 'docs' / 'en' / 'faq.md').write_text('# FAQ\n\nZebracorn is the only answer.', encoding='utf-8')
        (corpus / 'docs' / 'es' / 'faq.md').unlink()
        index_paths(s, [corpus / 'docs'])
        v = s.verify()
        assert v['problems'] == [] and v['lexical_rows'] == v['chunks']
        hits = s.search_lexical('zebracorn', k=5)
        assert len(hits) == 1 and s.get_chunks([hits[0][0]])[0].display_path == 'docs/en/faq.md'


def test_a_source_filter_works_on_a_store_from_before_display_paths(tmp_path):
    "A store not yet upgraded (read only) has no `display` column: a source filter still matches its keys."
    with Store.open(tmp_path / 's', embedder=HashEmbedder(), sentence_vectors=False) as s:
        s.add_documents([Chunk('[Doc: a]\nrollback now', '/a.md', 'documental', '', 1, 1, 0, 1, 'v'),
                         Chunk('[Doc: b]\nrollback later', '/b.md', 'documental', '', 1, 1, 0, 1, 'v')])
    with sqlite3.connect(tmp_path / 's' / 'chunks.sqlite') as db:      # as before display paths (and their index)
        db.execute('drop index chunks_shown')
        db.executescript('alter table chunks drop column display; pragma user_version = 0')   # and no version
    with Store.open(tmp_path / 's', readonly=True, embedder=HashEmbedder()) as r:
        for mode in ('dense', 'lexical', 'hybrid'):
            res = retrieve(r, 'rollback', opts=RetrieveOpts(mode=mode), filters={'source': '/b.md'})
            assert [c.source for c in res.chunks] == ['/b.md'], mode
