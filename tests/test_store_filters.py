"Store filters at 100%, 1% and 0.1% selectivity on 5,000 chunks: exact, never leaking, always k when k exist."
import numpy as np, pytest

from ragnb.chunking import Chunk
from ragnb.index import Store


class VecOnly:
    "An embedder stand-in for stores fed with precomputed vectors."
    name, dim, pooling, query_instruction = 'test/random-64', 64, 'cls', ''


@pytest.fixture(scope='module')
def store(tmp_path_factory):
    rng = np.random.default_rng(7)
    n = 5000
    vecs = rng.normal(size=(n, 64)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    # tenant t0: 0.1% (5 chunks), t1: 1% (50), t2: the rest; apps alternate
    tenant = np.where(np.arange(n) < 5, 't0', np.where(np.arange(n) < 55, 't1', 't2'))
    chunks = [Chunk(f'[Doc: d{i}]\nchunk {i}', f'src/{i % 97}.md', 'documental', 's', 1, 1, 0, 1, 'v',
                    {'tenant': str(tenant[i]), 'app': 'core' if i % 2 else 'api'}) for i in range(n)]
    s = Store.open(tmp_path_factory.mktemp('store'), embedder=VecOnly(), sentence_vectors=False)   # random vectors
    s.add_documents(chunks, vecs)
    yield s, vecs, tenant
    s.close()


@pytest.mark.parametrize('tenant,expected_n', [('t0', 5), ('t1', 50), (None, 5000)])
def test_filter_selectivity(store, tenant, expected_n):
    s, vecs, tenants = store
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = rng.normal(size=64).astype(np.float32)
        q /= np.linalg.norm(q)
        k = 10
        res = s.search(q, k=k, filters={'tenant': tenant} if tenant else None)
        assert len(res) == min(k, expected_n)
        if tenant: assert all(c.metadata['tenant'] == tenant for c in res)
        # exact top-k over the allowed set (hnswlib may differ slightly only without a filter)
        allowed = np.arange(len(vecs)) if tenant is None else np.where(tenants == tenant)[0]
        best = set((allowed[np.argsort(-(vecs[allowed] @ q))[:k]] + 1).tolist())
        got = {int(c.id) for c in res}
        assert len(got & best) >= (k - 1 if tenant is None else len(best))


def test_in_filter_and_source(store):
    s, vecs, _ = store
    q = vecs[3]
    res = s.search(q, k=20, filters={'tenant': ['t0', 't1'], 'app': 'core'})
    assert len(res) == 20 and all(c.metadata['tenant'] in ('t0', 't1') and c.metadata['app'] == 'core' for c in res)
    res = s.search(q, k=5, filters={'source': 'src/3.md', 'tenant': 't0'})
    assert [c.id for c in res] == ['4']


def test_deletions_leave_fewer_than_k(tmp_path):
    s = Store.open(tmp_path / 's', embedder=VecOnly(), sentence_vectors=False)   # random vectors: no text model
    v = np.eye(64, dtype=np.float32)[:6]
    s.add_documents([Chunk(f'x{i}', f'f{i // 3}.md', 'documental', '', 1, 1, 0, 1, 'v', {}) for i in range(6)], v)
    assert s.remove_source('f0.md') == 3
    res = s.search(v[0], k=5)
    assert sorted(c.source for c in res) == ['f1.md'] * 3
    s.close()


# Operators: the store's answer to any filter equals `key_holds`, the meaning `ragnb.filters` gives a key's terms,
# on the chunk filter index, on an older store's `json_extract` path, in dense and lexical search, and inside a pin.
from hypothesis import example, given, settings, strategies as st, HealthCheck

from ragnb.filters import FILTER_OPS, FilterIndex, filter_terms, key_holds, term_holds
from ragnb.index import ScopedStore

META = {'tenant': ['t0', 't1', 't2', None], 'status': ['archived', 'live', 'draft', None],
        'year': [2019, 2023, 2024, '2024', '2023.5', '2024-05-01', '2025-01-31', 7.5, None],
        'tags': [['ops', 'backup'], ['ops'], [], 'ops', ['2020', 2024, 'x'], ['b', None, ['n']], None]}
OPERANDS = st.sampled_from(['t1', 't9', 'live', '', 'a', 'src/1', 'src/4', 'src/1.md', 2023, 2024, '2024', '2024-02',
                            '2023', 7.5, 0, 'ops', 'backup', '["ops"]', '["n"]'])


@pytest.fixture(scope='module')
def meta_store(tmp_path_factory):
    rng = np.random.default_rng(11)
    metas = [{k: v for k, vs in META.items() if (v := vs[rng.integers(len(vs))]) is not None} for _ in range(240)]
    vecs = rng.normal(size=(len(metas), 64)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    chunks = [Chunk(f'[Doc: d{i}]\nchunk {i} of the ledger', f'src/{i % 13}.md', 'documental', 's', 1, 1, 0, 1, 'v', m)
              for i, m in enumerate(metas)]
    s = Store.open(tmp_path_factory.mktemp('ops'), embedder=VecOnly(), sentence_vectors=False)
    s.add_documents(chunks, vecs)
    got = s.get_chunks(list(range(1, len(metas) + 1)))
    yield s, {int(c.id): (c.metadata, [c.source, c.display_path or c.source]) for c in got}
    s.close()


def expected_ids(chunks:dict, filters:dict) -> set:
    "The ids `key_holds` lets through (on `source`, whose values are the indexed and the shown path)."
    def holds(meta, paths, key, terms):
        if key != 'source': return key_holds(meta.get(key), terms)
        plus = [t for t in terms if t[0] != '$nin']
        return ((not plus or any(all(term_holds(p, op, x) for op, x in plus) for p in paths))
                and not any(term_holds(p, '$in', x) for op, x in terms if op == '$nin' for p in paths))
    return {i for i, (meta, paths) in chunks.items()
            if all(holds(meta, paths, k, filter_terms(k, v)) for k, v in filters.items())}


def an_operator_object():
    ranges = st.sampled_from([o for o in FILTER_OPS if o not in ('$in', '$nin')])
    lists = st.tuples(st.sampled_from(['$in', '$nin']), st.lists(OPERANDS, max_size=3))
    one = st.one_of(st.tuples(ranges, OPERANDS), lists)
    return st.lists(one, min_size=1, max_size=2).map(dict).filter(
        lambda d: '$prefix' not in d or isinstance(d['$prefix'], str))

FILTERS = st.dictionaries(st.sampled_from(['tenant', 'status', 'year', 'source', 'tags']),
                          st.one_of(OPERANDS, st.lists(OPERANDS, max_size=3), an_operator_object()),
                          min_size=1, max_size=2)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filters=FILTERS)
@example({'year': {'$prefix': '2024'}})                    # the number 2024 has no prefix, the text '2024' has
@example({'year': {'$gte': 2024, '$lt': '2025'}})          # both kinds of bound: nothing is both a number and text
@example({'status': {'$ne': 'live'}, 'source': {'$nin': ['src/1.md']}})
@example({'tags': {'$ne': 'ops'}, 'year': {'$gte': 2023, '$lt': 2024}})  # a list; one value inside both bounds
@example({'tags': {'$prefix': 'b', '$gt': 'o'}})            # 'backup' passes one, 'ops' the other: neither both
@example({'tags': ['["n"]', 'x']})                          # a list inside a list is not an element
def test_every_filter_means_what_term_holds_says(meta_store, filters):
    s, chunks = meta_store
    want = expected_ids(chunks, filters)
    with s._snapshot():
        assert set(s.filters.allowed_ids(filters).tolist()) == want, filters
        older = FilterIndex(s.db, display=True, indexed=False)             # a store before `chunk_meta`
        assert set(older.allowed_ids(filters).tolist()) == want, filters
    q = np.ones(64, np.float32) / 8
    assert {i for i, _ in s.search_ids(q, k=len(chunks), filters=filters)} == want, filters
    assert {i for i, _ in s.search_lexical('ledger', k=len(chunks), filters=filters)} == want, filters
    pinned = ScopedStore(s, {'tenant': ['t1']})                           # a pin: only t1, whatever the filter says
    inside = {i for i in want if chunks[i][0].get('tenant') == 't1'}
    assert {i for i, _ in pinned.search_ids(q, k=len(chunks), filters=filters)} == inside, filters
    assert {i for i, _ in pinned.search_lexical('ledger', k=len(chunks), filters=filters)} == inside, filters
