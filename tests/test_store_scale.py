"""The store's scale paths on real stores: the filter index against `json_extract`, tombstones instead of index
rewrites, per-generation caches against a writer's uncommitted rows, the lazy SHA-256, and a no-op run that
writes nothing."""
import os, sqlite3
from pathlib import Path

import numpy as np, pytest

import faults
from ragnb.chunking import Chunk
from ragnb.filters import _filter_sql
from ragnb.index import Store, StoreCorruptedError
from ragnb.vectors import EXACT_BELOW
from faults import VecOnly, unit_rows
from ragnb.ingest import index_paths


def mixed_metadata(i):
    "Ints, strings, booleans, lists and nulls, as users put them in metadata."
    m = dict(tenant=i % 30, lang='es' if i % 3 else 'en', public=bool(i % 2), tags=['a', 'b'] if i % 5 == 0 else [])
    if i % 7 == 0: m['owner'] = None
    return m


def make_chunks(lo, hi, per_source=10):
    return [Chunk(f'chunk {i}', f'src{i // per_source}', 'documental', None, 1, 1, 0, 8, 'v', mixed_metadata(i))
            for i in range(lo, hi)]


@pytest.fixture
def built(tmp_path):
    rng = np.random.default_rng(3)
    vecs = unit_rows(rng, 3000)
    s = Store.open(tmp_path / 's', embedder=VecOnly(), sentence_vectors=False)
    ids = s.add_documents(make_chunks(0, 3000), vecs)
    yield s, dict(zip(ids, vecs)), rng
    s.close()


def json_extract_ids(s, filters):
    "The ids the pre-index code path (`json_extract` over every row) admits."
    where, args = _filter_sql(filters, True, indexed=False)
    return [r[0] for r in s.db.execute(f'select id from chunks where {where} order by id', args)]


FILTERS = [{'tenant': 3}, {'tenant': [1, 2, 29]}, {'lang': 'en'}, {'public': True}, {'public': False},
           {'tags': '["a","b"]'}, {'tenant': 4, 'lang': 'es'}, {'tenant': []}, {'owner': None}, {'tenant': '3'},
           {'source': 'src7'}, {'source': ['src7', 'src9'], 'tenant': [10, 11, 0]}, {'nosuchkey': 1}]


@pytest.mark.parametrize('filters', FILTERS, ids=[repr(f) for f in FILTERS])
def test_the_filter_index_admits_exactly_what_json_extract_admits(built, filters):
    s, vec_of, rng = built
    with s._snapshot(): got = s.filters.allowed_ids(filters).tolist()
    assert got == json_extract_ids(s, filters)
    for q in unit_rows(rng, 5):                           # and the search is brute force over them
        want = sorted(got, key=lambda i: -float(vec_of[i] @ q))[:10]
        assert [i for i, _ in s.search_ids(q, 10, filters)] == want


def test_filters_follow_removals_and_the_writers_uncommitted_rows(built):
    s, vec_of, rng = built
    before = s.search_ids(next(iter(vec_of.values())), 3000, {'tenant': 3})
    assert len(before) == 100
    s.remove_source('src3', commit=False)                 # chunks 30..39: tenant 0..9, so 33 is tenant 3
    s.add_documents(make_chunks(3000, 3010), unit_rows(rng, 10), commit=False)   # tenant 0..9 again
    with s._snapshot():
        assert s.filters.allowed_ids({'tenant': 3}).tolist() == json_extract_ids(s, {'tenant': 3})
        assert s.gen.live_count() == 3000 - 10 + 10
    hits = {i for i, _ in s.search_ids(next(iter(vec_of.values())), 3000, {'tenant': 3})}
    assert 34 not in hits and 3004 in hits and len(hits) == 100          # id 34 is chunk 33; id 3004 is chunk 3003
    s.rollback()
    hits = {i for i, _ in s.search_ids(next(iter(vec_of.values())), 3000, {'tenant': 3})}
    assert 34 in hits and 3004 not in hits and s.stats()['chunks'] == 3000


def test_removing_a_source_writes_no_index_file_and_readers_see_it(built):
    s, vec_of, rng = built
    path = s.path
    files = sorted(p.name for p in path.glob('index-*.hnsw'))
    r = Store.open(path, readonly=True)
    r.search_ids(vec_of[55], 5)
    index_before = r.vectors.index
    assert s.remove_source('src5') == 10                  # ids 51..60
    assert sorted(p.name for p in path.glob('index-*.hnsw')) == files
    with s._snapshot(): assert [x for (x,) in s.db.execute('select id from tombstones')] == list(range(51, 61))
    assert r.refresh() and r.vectors.index is index_before         # same file: the reader only marks the tombstones
    for q in [vec_of[55], *unit_rows(rng, 20)]:
        for store in (s, r):
            assert not {i for i, _ in store.search_ids(q, 50)} & set(range(51, 61))
            assert store.search_ids(q, 5, {'source': 'src5'}) == []
    assert r.verify()['problems'] == [] and r.verify()['index_deleted'] == 10
    s.close()
    s = Store.open(path, embedder=VecOnly())              # a new writer loads the file and its tombstones
    assert not {i for i, _ in s.search_ids(vec_of[55], 50)} & set(range(51, 61))
    s.add_documents(make_chunks(3000, 3005), unit_rows(rng, 5))   # adding writes a file; the tombstones go into it
    with s._snapshot(): assert s.db.execute('select count(*) from tombstones').fetchone()[0] == 0
    assert r.refresh() and r.vectors.index is not index_before
    assert not {i for i, _ in r.search_ids(vec_of[55], 50)} & set(range(51, 61))
    assert r.verify()['problems'] == [] and r.verify()['index_deleted'] == 10
    r.close()
    s.close()


def test_an_older_store_gets_its_filter_index_at_the_next_writer_open(built):
    s, vec_of, rng = built
    path, q = s.path, unit_rows(rng, 1)[0]
    want = s.search_ids(q, 10, {'tenant': [5, 6]})
    s.close()
    db = sqlite3.connect(path / 'chunks.sqlite')          # as a store from before the filter index
    db.execute('drop table chunk_meta')
    db.execute("delete from meta where key = 'filter_index'")
    db.commit()
    db.close()
    with Store.open(path, readonly=True) as r:
        assert not r.filters.indexed and r.search_ids(q, 10, {'tenant': [5, 6]}) == want
    with Store.open(path, embedder=VecOnly()) as w:
        assert w.filters.indexed and w.search_ids(q, 10, {'tenant': [5, 6]}) == want
        assert w.verify()['problems'] == []
        w.db.execute("insert into chunk_meta values ('tenant', 99, 1)")      # a row the metadata does not give
        assert 'the filter index has 0 entries missing and 1 extra rows' in w.verify()['problems']


def test_open_hashes_the_index_only_when_its_time_changed(built, monkeypatch):
    s, vec_of, rng = built
    path = s.path
    s.close()
    import ragnb.vectors as vx
    calls = []
    real = vx.sha256_file
    monkeypatch.setattr(vx, 'sha256_file', lambda f: calls.append(f) or real(f))
    with Store.open(path, readonly=True) as r: r.search_ids(vec_of[1], 5)
    assert calls == []                                    # the file the writer hashed, untouched
    f = next(path.glob('index-*.hnsw'))
    st, b = f.stat(), bytearray(f.read_bytes())
    b[96 + 4 * (2 * 32 + 1) + 10] ^= 0x40                  # a byte of the first vector: same size and structure
    f.write_bytes(b)
    with pytest.raises(StoreCorruptedError, match='SHA-256'): Store.open(path, readonly=True)
    assert len(calls) == 1
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))        # the same change with the time put back: the open
    try:                                                    # trusts the time, `verify` (ragnb check) hashes
        with Store.open(path, readonly=True) as r: problems = r.verify()['problems']
    except StoreCorruptedError: problems = ['the structure check caught it']
    assert problems and any('SHA-256' in p or 'structure' in p for p in problems)


def test_a_no_op_index_run_writes_nothing(tmp_path):
    corpus, store = faults.copy_corpus(tmp_path / 'corpus'), tmp_path / 'store'
    faults.build_fake_store(store, corpus)
    def state(): return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in Path(store).iterdir()}
    before = state()
    with Store.open(store, embedder=faults.HashEmbedder()) as s:
        rep = index_paths(s, [corpus / 'docs', corpus / 'code'])
        assert rep.counts()['unchanged'] > 0 and not rep.removed
    assert state() == before
    with Store.open(store) as s:                          # the manifest names a model that cannot load
        index_paths(s, [corpus / 'docs', corpus / 'code'])
        assert not s.embedder_loaded
    assert state() == before


def test_files_streamed_in_small_batches_give_the_same_store(tmp_path, monkeypatch):
    import ragnb.ingest as ingest
    corpus = faults.copy_corpus(tmp_path / 'corpus')
    paths = [corpus / 'docs', corpus / 'code']
    def rows(s): return sorted(s.db.execute('select source, start_char, end_char, text, content_hash from chunks'))
    with Store.open(tmp_path / 'one', embedder=faults.HashEmbedder()) as s:
        index_paths(s, paths)
        want = rows(s)
    monkeypatch.setattr(ingest, 'INDEX_BATCH', 3)         # files' chunks now span several batches
    with Store.open(tmp_path / 'small', embedder=faults.HashEmbedder()) as s:
        rep = index_paths(s, paths)
        assert rows(s) == want and rep.chunks == len(want) and s.verify()['problems'] == []
        f = max((corpus / 'docs').rglob('*.md'), key=lambda f: f.stat().st_size)
        f.write_text(f.read_text() + '\n\n## Added\n\nOne more paragraph, at the end.\n')
        rep = index_paths(s, paths)
        assert len(rep.updated) == 1 and len(rep.unchanged) > 0 and not rep.added
        got = rows(s)
        assert [r for r in got if r[0] != rep.updated[0]] == [r for r in want if r[0] != rep.updated[0]]
        assert any('One more paragraph' in r[3] for r in got) and s.verify()['problems'] == []
        assert s.sources()[rep.updated[0]].n_chunks == sum(r[0] == rep.updated[0] for r in got) > 1


def test_exact_below_is_where_the_exact_search_stops(built):
    s, vec_of, rng = built
    q = unit_rows(rng, 1)[0]
    ids = sorted(vec_of)
    want = sorted(ids, key=lambda i: -float(vec_of[i] @ q))[:10]
    assert EXACT_BELOW >= 3000 and [i for i, _ in s.search_ids(q, 10, {'lang': ['es', 'en']})] == want


@pytest.mark.parametrize('filters', [{'tenant': 3}, {'tenant': [1, 2, 29]}, {'lang': 'en'}, {'source': 'src299'}],
                         ids=['one tenant', 'three tenants', 'a third', 'the highest labels'])
def test_hnswlibs_filtered_search_admits_only_the_allowed_ids(built, filters):
    s, vec_of, rng = built
    with s._snapshot(): allowed = set(s.filters.allowed_ids(filters).tolist())
    for q in unit_rows(rng, 5):
        got = [i for i, _ in s.search_ids(q, 10, filters, exact_below=0)]     # hnswlib, the allowed set as a byte map
        want = sorted(allowed, key=lambda i: -float(vec_of[i] @ q))[:10]
        assert len(got) == 10 and set(got) <= allowed and len(set(got) & set(want)) >= 9
