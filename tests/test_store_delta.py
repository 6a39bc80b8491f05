"""The delta segment: small adds beside a big index write a small file, not the index; searches over both agree
with brute force; removals, folding, crashes, corruption and readers on other generations."""
import numpy as np, pytest

from faults import VecOnly, unit_rows
from ragnb.chunking import Chunk
from ragnb.index import Store, StoreCorruptedError

N = 3000


def make_chunks(lo, hi):
    return [Chunk(f'chunk {i}', f'src{i // 10}', 'documental', None, 1, 1, 0, 8, 'v', dict(tenant=i % 30))
            for i in range(lo, hi)]


def files(path, pattern): return sorted(p.name for p in path.glob(pattern))


@pytest.fixture
def built(tmp_path):
    "A 3000-chunk store whose delta segment holds up to 64 rows (at most an eighth of the index, at least 64)."
    rng = np.random.default_rng(5)
    s = Store.open(tmp_path / 's', embedder=VecOnly(), sentence_vectors=False)
    vecs = unit_rows(rng, N)
    vec_of = dict(zip(s.add_documents(make_chunks(0, N), vecs), vecs))
    s.vectors.delta_max_rows = 64
    yield s, vec_of, rng
    s.close()


def brute(vec_of, q, k, keep=lambda _: True):
    return sorted((i for i in vec_of if keep(i)), key=lambda i: -float(vec_of[i] @ q))[:k]


def test_a_small_add_writes_a_delta_file_and_searches_find_it_exactly(built):
    s, vec_of, rng = built
    index_files, st = files(s.path, 'index-*.hnsw'), next(s.path.glob('index-*.hnsw')).stat()
    new = unit_rows(rng, 40)
    vec_of.update(zip(s.add_documents(make_chunks(N, N + 40), new), new))
    assert files(s.path, 'index-*.hnsw') == index_files and len(files(s.path, 'delta-*.f32')) == 1
    assert next(s.path.glob('index-*.hnsw')).stat().st_mtime_ns == st.st_mtime_ns
    r = Store.open(s.path, readonly=True)
    for store in (s, r):
        for j in range(40):                               # each new row is its own nearest, at cosine 1
            (i, score), = store.search_ids(new[j], 1)
            assert i == N + 1 + j and score == pytest.approx(1, abs=1e-5)
        for q in unit_rows(rng, 20):
            got = [i for i, _ in store.search_ids(q, 10)]
            assert len(set(got) & set(brute(vec_of, q, 10))) >= 9           # HNSW for the index, exact for the delta
            tenant_3 = lambda i: (i - 1) % 30 == 3
            assert [i for i, _ in store.search_ids(q, 10, {'tenant': 3})] == brute(vec_of, q, 10, tenant_3)
            assert [i for i, _ in store.search_ids(q, 5, {'source': f'src{N // 10 + 1}'})] == \
                brute(vec_of, q, 5, lambda i: N + 11 <= i <= N + 20)       # only delta rows pass this filter
    assert r.verify()['problems'] == [] and r.verify()['index_live'] == N + 40
    r.close()


def test_a_reader_loads_only_the_delta_when_the_index_file_is_the_same(built):
    s, vec_of, rng = built
    r = Store.open(s.path, readonly=True)
    r.search_ids(vec_of[1], 5)
    index_before = r.vectors.index
    new = unit_rows(rng, 5)
    s.add_documents(make_chunks(N, N + 5), new)
    assert r.refresh() and r.vectors.index is index_before and r.search_ids(new[2], 1)[0][0] == N + 3
    r.close()


def test_removing_delta_rows_rewrites_only_the_delta(built):
    s, vec_of, rng = built
    new = unit_rows(rng, 30)
    s.add_documents(make_chunks(N, N + 30), new)          # sources src300, src301, src302: ids 3001..3030
    index_files = files(s.path, 'index-*.hnsw')
    assert s.remove_source('src301') == 10
    assert files(s.path, 'index-*.hnsw') == index_files
    with s._snapshot():
        assert s.db.execute('select count(*) from tombstones').fetchone()[0] == 0    # delta rows need no tombstone
    assert s.vectors.delta[0].tolist() == [*range(N + 1, N + 11), *range(N + 21, N + 31)]
    with Store.open(s.path, readonly=True) as r:
        assert r.search_ids(new[15], 1)[0][0] != N + 16 and r.search_ids(new[25], 1)[0][0] == N + 26
        assert r.verify()['problems'] == []


def test_an_add_past_the_bound_folds_the_delta_into_a_new_index_file(built):
    s, vec_of, rng = built
    first, second = unit_rows(rng, 40), unit_rows(rng, 30)
    s.add_documents(make_chunks(N, N + 40), first)
    index_files = files(s.path, 'index-*.hnsw')
    s.add_documents(make_chunks(N + 40, N + 70), second)  # 70 > 64: everything goes into hnswlib
    assert files(s.path, 'index-*.hnsw') != index_files and len(s.vectors.delta[0]) == 0
    with s._snapshot(): assert s._meta()['delta_file'] == ''
    s.add_documents(make_chunks(N + 70, N + 71), unit_rows(rng, 1))   # the next commit forgets the old files
    assert len(files(s.path, 'delta-*.f32')) == 1
    with Store.open(s.path, readonly=True) as r:
        assert r.vectors.index.element_count == N + 70 and len(r.vectors.delta[0]) == 1
        assert [r.search_ids(v, 1)[0][0] for v in (first[0], second[-1])] == [N + 1, N + 70]
        assert r.verify()['problems'] == []


def test_a_failed_commit_leaves_the_previous_delta(built, monkeypatch):
    s, vec_of, rng = built
    s.add_documents(make_chunks(N, N + 10), unit_rows(rng, 10))
    before = s.vectors.delta[0].tolist()
    import ragnb.index as ix
    def crash(_): raise RuntimeError('simulated crash before SQLite commits')
    monkeypatch.setattr(ix, '_commit_db', crash)
    with pytest.raises(RuntimeError, match='simulated crash'): s.add_documents(make_chunks(N + 10, N + 15),
                                                                              unit_rows(rng, 5))
    monkeypatch.undo()
    assert s.vectors.delta[0].tolist() == before and len(files(s.path, 'delta-*.f32')) == 1
    with Store.open(s.path,
                    readonly=True) as r: assert r.vectors.delta[0].tolist() == before and r.stats()['chunks'] == N + 10


def test_a_damaged_delta_file_is_refused_with_its_name(built):
    s, vec_of, rng = built
    s.add_documents(make_chunks(N, N + 10), unit_rows(rng, 10))
    f = next(s.path.glob('delta-*.f32'))
    b = bytearray(f.read_bytes())
    b[-3] ^= 0x10                                         # one bit of the last vector: same size
    f.write_bytes(b)
    with pytest.raises(StoreCorruptedError, match=f'{f.name}: delta file truncated or corrupted'):
        Store.open(s.path, readonly=True)
    s.close()
    f.unlink()
    with pytest.raises(StoreCorruptedError, match='delta file missing'): Store.open(s.path, readonly=True)


def test_compaction_keeps_the_delta_rows(built):
    s, vec_of, rng = built
    s.vectors.compact_min_rows = 0
    new = unit_rows(rng, 20)
    vec_of.update(zip(s.add_documents(make_chunks(N, N + 20), new), new))
    for src in range(160): s.remove_source(f'src{src}', commit=False)    # ids 1..1600, of the index's 3000 rows
    s.commit()
    assert s.vectors.index.element_count == N - 1600 and len(s.vectors.delta[0]) == 20
    with Store.open(s.path, readonly=True) as r:
        assert r.search_ids(new[7], 1)[0][0] == N + 8 and r.verify()['problems'] == []
        q = unit_rows(rng, 1)[0]
        assert [i for i, _ in r.search_ids(q, 10, {'tenant': 4})] == \
            brute(vec_of, q, 10, lambda i: i > 1600 and (i - 1) % 30 == 4)


def test_adds_after_a_fold_in_the_same_transaction_go_into_the_index(built):
    s, vec_of, rng = built
    s.add_documents(make_chunks(N, N + 100), unit_rows(rng, 100), commit=False)   # past the bound: the index
    s.add_documents(make_chunks(N + 100, N + 105), unit_rows(rng, 5), commit=False)
    assert len(s.vectors.delta[0]) == 0
    s.commit()
    with Store.open(s.path, readonly=True) as r:
        assert r.vectors.index.element_count == N + 105 and r.vectors.delta_file is None
        assert r.verify()['problems'] == []


def test_big_stale_files_are_removed_on_a_thread(built, monkeypatch):
    import threading, ragnb.index as ix
    s, vec_of, rng = built
    monkeypatch.setattr(ix, 'UNLINK_ON_THREAD', 0)        # every stale file counts as big
    s.vectors.delta_max_rows = 0                                   # every add writes an index file
    for lo in (N, N + 5, N + 10): s.add_documents(make_chunks(lo, lo + 5), unit_rows(rng, 5))
    for t in threading.enumerate():
        if t.name == 'ragnb-unlink': t.join()
    with s._snapshot(): meta = s._meta()
    assert files(s.path, 'index-*.hnsw') == sorted([meta['index_file'], meta['prev_index_file']])
    with Store.open(s.path, readonly=True) as r: assert r.stats()['chunks'] == N + 15
