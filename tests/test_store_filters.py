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
