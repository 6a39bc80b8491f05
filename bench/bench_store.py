"""The store engine against raw hnswlib, chromadb and faiss on the same precomputed, clustered vectors.

Usage: python bench/bench_store.py [--sizes 10000,100000] [--engines ragnb,hnswlib,chromadb,faiss] [--queries 100]
       (add 1000000 to --sizes for the 1M row; it needs about 8 GB and 20 minutes per engine)

Every (engine, size) runs in a child process of its own, so peak RSS is that engine's. Data: 384-d unit vectors
around 256 random centres, 10 chunks per source, 100 tenants (a tenant filter keeps 1%, ten tenants 10%), and
a `part` key (row number mod 100, spread over the store) for filters of exactly 5,000, 10,000 and 20,000 ids, and
for a range that keeps 10% (`part` from lo to lo + 9: `{'$gte': lo, '$lt': lo + 10}`, chroma's `$and` of both).
HNSW M=32, efC=200, ef=128 everywhere. Recall@10 is against brute force over the rows that pass the filter.
Times: build (wall and CPU), open (a new process opens and answers a first query; ragnb: a reader), p50/p95,
add 1% (persisted), remove one source (persisted). Prints one table.
"""
import argparse, json, os, resource, shutil, subprocess, sys, tempfile, time
from pathlib import Path
import numpy as np
from machine import machine

DIM, M, EFC, EF, K, TENANTS, PER_SOURCE = 384, 32, 200, 128, 10, 100, 10


def dataset(n, n_queries, seed=0):
    "Clustered unit vectors, their tenant (by source), and queries from the same distribution."
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((256, DIM)).astype(np.float32)
    def draw(m):
        x = centres[rng.integers(0, 256, m)] + 0.6 * rng.standard_normal((m, DIM)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)
    x = np.concatenate([draw(min(100_000, n - i)) for i in range(0, n, 100_000)])
    tenant = rng.integers(0, TENANTS, n // PER_SOURCE + 1).repeat(PER_SOURCE)[:n]
    return x, tenant, draw(n_queries), draw(n // 100)


GROUPS = 100   # `part` = row number mod GROUPS


def column(tenant, key):
    "The filter key's value per row: the tenant, or the part."
    return tenant if key == 'tenant' else np.arange(len(tenant)) % GROUPS


RANGE = 10     # a range filter keeps parts lo .. lo + RANGE - 1


def passing(tenant, filt):
    "Which rows pass `filt`: ('tenant' or 'part', values), or ('range', lo)."
    if filt[0] == 'range':
        part = column(tenant, 'part')
        return (part >= filt[1]) & (part < filt[1] + RANGE)
    return np.isin(column(tenant, filt[0]), filt[1])


def truth(x, tenant, q, filt):
    ids = np.arange(len(x)) if filt is None else np.flatnonzero(passing(tenant, filt))
    return [set(ids[np.argsort(-(x[ids] @ v))[:K]].tolist()) for v in q]


class Ragnb:
    class Emb:
        name, pooling, query_instruction, dim = 'bench/precomputed', 'mean', '', DIM

    def chunks(self, lo, hi, tenant):
        from ragnb.chunking import Chunk
        return [Chunk(f'chunk {i}', f'src{i // PER_SOURCE}', 'documental', None, 1, 1, 0, 8, 'bench',
                      metadata=dict(tenant=int(tenant[i]), part=i % GROUPS)) for i in range(lo, hi)]

    def build(self, d, x, tenant):
        from ragnb.index import Store
        self.s = Store.open(d, embedder=self.Emb(), sentence_vectors=False, M=M, ef_construction=EFC, ef=EF)
        ids = []                                   # in batches, in one transaction, as `ragnb index` adds them
        for lo in range(0, len(x), 10_000):
            hi = min(lo + 10_000, len(x))
            ids += self.s.add_documents(self.chunks(lo, hi, tenant), x[lo:hi], commit=False)
        self.s.commit()
        self.ids = np.array(ids)                   # ids[i] is row i's label

    def open(self, d):
        "A reader, as `ragnb ask` and a service open it; `add` and `remove` open the writer again."
        from ragnb.index import Store
        if hasattr(self, 's'): self.s.close()
        self.s = Store.open(d, readonly=True)

    def writer(self):
        from ragnb.index import Store
        if self.s._lock is None:
            path = self.s.path
            self.s.close()
            self.s = Store.open(path, embedder=self.Emb())
        return self.s

    def query(self, v, filt):
        if filt and filt[0] == 'range': f = {'part': {'$gte': filt[1], '$lt': filt[1] + RANGE}}
        else: f = None if filt is None else {filt[0]: [int(t) for t in filt[1]]}
        return [i - self.ids[0] for i, _ in self.s.search_ids(v, K, f)]

    def add(self, x, tenant, start):
        self.writer().add_documents(self.chunks(start, start + len(x), tenant), x)

    def remove(self, source): self.writer().remove_source(f'src{source}')


class Hnswlib:
    "Raw hnswlib: the index file plus the tenants as a numpy file; the filter is a Python callback."
    def build(self, d, x, tenant):
        import hnswlib
        self.d, self.tenant = Path(d), tenant.copy()
        self.i = hnswlib.Index(space='ip', dim=DIM)
        self.i.init_index(max_elements=len(x) * 2, M=M, ef_construction=EFC)
        self.i.add_items(x, np.arange(len(x)))
        self.save()

    def save(self):
        self.i.save_index(str(self.d / 'index.bin'))
        np.save(self.d / 'tenant.npy', self.tenant)

    def open(self, d):
        import hnswlib
        self.i = hnswlib.Index(space='ip', dim=DIM)
        self.i.load_index(str(Path(d) / 'index.bin'), max_elements=2 * len(self.tenant))
        self.tenant = np.load(Path(d) / 'tenant.npy')
        self.i.set_ef(EF)

    def query(self, v, filt):
        fn = None
        if filt is not None:
            if filt[0] == 'range':
                ok = passing(self.tenant, filt)
                fn = lambda j: bool(ok[j])
            else:
                ok, t = set(int(a) for a in filt[1]), column(self.tenant, filt[0])
                fn = lambda j: int(t[j]) in ok
        return self.i.knn_query(v, k=K, filter=fn)[0][0].tolist()

    def add(self, x, tenant, start):
        self.i.add_items(x, np.arange(start, start + len(x)))
        self.tenant = np.concatenate([self.tenant, tenant[start:start + len(x)]])
        self.save()

    def remove(self, source):
        for j in range(source * PER_SOURCE, (source + 1) * PER_SOURCE): self.i.mark_deleted(j)
        self.save()


class Chroma:
    def build(self, d, x, tenant):
        import chromadb
        self.cl = chromadb.PersistentClient(path=str(d))
        self.c = self.cl.create_collection('bench', configuration=dict(hnsw=dict(
            space='ip', max_neighbors=M, ef_construction=EFC, ef_search=EF)))
        self.add(x, tenant, 0)

    def open(self, d):
        import chromadb
        self.cl = chromadb.PersistentClient(path=str(d))
        self.c = self.cl.get_collection('bench')

    def query(self, v, filt):
        if filt and filt[0] == 'range':
            where = {'$and': [{'part': {'$gte': filt[1]}}, {'part': {'$lt': filt[1] + RANGE}}]}
        else: where = None if filt is None else {filt[0]: {'$in': [int(t) for t in filt[1]]}}
        return [int(i) for i in self.c.query(query_embeddings=[v], n_results=K, where=where)['ids'][0]]

    def add(self, x, tenant, start):
        step = self.cl.get_max_batch_size()
        for a in range(0, len(x), step):
            ids = range(start + a, start + min(a + step, len(x)))
            self.c.add(ids=[str(j) for j in ids], embeddings=x[a:a + step],
                       metadatas=[dict(tenant=int(tenant[j]), part=j % GROUPS, source=j // PER_SOURCE) for j in ids])

    def remove(self, source): self.c.delete(where={'source': source})


class Faiss:
    "faiss HNSW; a filter is an IDSelectorBatch in the search parameters. It cannot remove from an HNSW index."
    def build(self, d, x, tenant):
        import faiss
        self.d, self.tenant = Path(d), tenant.copy()
        self.i = faiss.IndexHNSWFlat(DIM, M, faiss.METRIC_INNER_PRODUCT)
        self.i.hnsw.efConstruction = EFC
        self.i.add(x)
        self.save()

    def save(self):
        import faiss
        faiss.write_index(self.i, str(self.d / 'index.faiss'))
        np.save(self.d / 'tenant.npy', self.tenant)

    def open(self, d):
        import faiss
        self.i = faiss.read_index(str(Path(d) / 'index.faiss'))
        self.tenant = np.load(Path(d) / 'tenant.npy')

    def query(self, v, filt):
        import faiss
        sel = None
        if filt is not None: sel = faiss.IDSelectorBatch(np.flatnonzero(passing(self.tenant, filt)))
        p = faiss.SearchParametersHNSW(efSearch=EF, sel=sel)
        return [int(j) for j in self.i.search(v[None], K, params=p)[1][0] if j >= 0]

    def add(self, x, tenant, start):
        self.i.add(x)
        self.tenant = np.concatenate([self.tenant, tenant[start:start + len(x)]])
        self.save()

    def remove(self, source): raise NotImplementedError('faiss HNSW indexes cannot remove vectors')


ENGINES = dict(ragnb=Ragnb, hnswlib=Hnswlib, chromadb=Chroma, faiss=Faiss)


def cpu(): return sum(resource.getrusage(resource.RUSAGE_SELF)[:2])


def child(engine, n, n_queries):
    "One engine at one size; prints a JSON row."
    x, tenant, q, extra = dataset(n, n_queries)
    rng = np.random.default_rng(1)
    one = [('tenant', [int(t)]) for t in rng.integers(0, TENANTS, n_queries)]
    ten = [('tenant', rng.choice(TENANTS, 10, replace=False).tolist()) for _ in range(n_queries)]
    ids = {c: [('part', rng.choice(GROUPS, c * GROUPS // n, replace=False).tolist()) for _ in range(n_queries)]
           for c in (5_000, 10_000, 20_000) if c <= n}
    ranges = [('range', int(lo)) for lo in rng.integers(0, GROUPS - RANGE + 1, n_queries)]
    d = Path(tempfile.mkdtemp(prefix=f'bench-store-{engine}-'))
    e, row = ENGINES[engine](), dict(engine=engine, n=n)
    try:
        t, c = time.perf_counter(), cpu()
        e.build(d, x, tenant)
        row.update(build_s=time.perf_counter() - t, build_cpu_s=cpu() - c)
        row['disk_mb'] = sum(f.stat().st_size for f in d.rglob('*') if f.is_file()) / 2**20
        row['open_s'] = fresh_open(engine, d, n, q[0])
        e.open(d)
        for name, filt in (('all', [None] * n_queries), ('1%', one), ('10%', ten),
                           *((f'{c // 1000}k', f) for c, f in ids.items()), ('range', ranges)):
            gt = [truth(x, tenant, q[j:j + 1], filt[j])[0] for j in range(n_queries)]
            for j in range(min(5, n_queries)): e.query(q[j], filt[j])            # warm up
            times, hits = [], 0
            for j in range(n_queries):
                t = time.perf_counter()
                found = e.query(q[j], filt[j])
                times.append(time.perf_counter() - t)
                hits += len(gt[j] & set(found))
            row[f'{name}_p50_ms'], row[f'{name}_p95_ms'] = np.percentile(times, [50, 95]) * 1000
            row[f'{name}_recall'] = hits / (K * n_queries)
        tenant_all = np.concatenate([tenant, rng.integers(0, TENANTS, len(extra))])
        if hasattr(e, 'writer'): e.writer()                                   # opening it is not part of adding
        t = time.perf_counter()
        e.add(extra, tenant_all, n)
        row['add_1pct_s'] = time.perf_counter() - t
        t = time.perf_counter()
        try:
            e.remove(n // PER_SOURCE // 2)
            row['remove_s'] = time.perf_counter() - t
        except NotImplementedError: row['remove_s'] = None
        row['peak_rss_mb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    finally:
        shutil.rmtree(d, ignore_errors=True)
        (d.parent / f'{d.name}-q0.npy').unlink(missing_ok=True)
    print(json.dumps(row))


def fresh_open(engine, d, n, q0):
    "Seconds to open the engine's files and answer a first query, in a new process (no client or cache reused)."
    np.save(d.parent / f'{d.name}-q0.npy', q0)
    p = subprocess.run([sys.executable, __file__, '--open', engine, str(d), str(n)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent)))
    if p.returncode: raise RuntimeError(p.stderr[-2000:])
    return float(p.stdout.strip().splitlines()[-1])


def open_child(engine, d, n):
    d = Path(d)
    q0 = np.load(d.parent / f'{d.name}-q0.npy')
    import importlib
    importlib.import_module(dict(ragnb='ragnb.index').get(engine, engine))    # the import is not the open
    e = ENGINES[engine]()
    e.tenant = np.zeros(n, np.int64)                 # raw hnswlib sizes its index by it before reading the file
    e.ids = np.arange(1, n + 1)                      # ragnb's labels, for its answer's row numbers
    t = time.perf_counter()
    e.open(d)
    e.query(q0, None)
    print(time.perf_counter() - t)


def fmt(v, unit=''):
    if v is None: return 'n/a'
    return f'{v:.3g}{unit}' if abs(v) < 100 else f'{v:.0f}{unit}'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sizes', default='10000,100000')
    ap.add_argument('--engines', default=','.join(ENGINES))
    ap.add_argument('--queries', type=int, default=100)
    ap.add_argument('--child', nargs=2)
    ap.add_argument('--open', nargs=3)
    a = ap.parse_args()
    if a.child: return child(a.child[0], int(a.child[1]), a.queries)
    if a.open: return open_child(a.open[0], a.open[1], int(a.open[2]))
    rows = []
    for n in map(int, a.sizes.split(',')):
        for eng in a.engines.split(','):
            env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
            p = subprocess.run([sys.executable, __file__, '--child', eng, str(n), '--queries', str(a.queries)],
                               capture_output=True, text=True, env=env)
            if p.returncode:
                print(f'{eng} at {n}: failed\n{p.stderr[-2000:]}', file=sys.stderr)
                continue
            rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
            print(f'  done: {eng} {n}', file=sys.stderr)
    cols = [('n', 'N'), ('engine', 'engine'), ('all_p50_ms', 'p50 ms'), ('all_p95_ms', 'p95'),
            ('all_recall', 'recall'), ('1%_p50_ms', '1% p50'), ('1%_p95_ms', '1% p95'), ('1%_recall', '1% rec'),
            ('10%_p50_ms', '10% p50'), ('10%_p95_ms', '10% p95'), ('10%_recall', '10% rec'),
            *((f'{c}k_{m}', f'{c}k ids {h}') for c in (5, 10, 20) for m, h in (('p50_ms', 'p50'), ('recall', 'rec'))),
            ('range_p50_ms', '10% range p50'), ('range_recall', 'range rec'), ('open_s', 'open s'),
            ('add_1pct_s', 'add 1% s'), ('remove_s', 'remove s'), ('build_s', 'build s'),
            ('build_cpu_s', 'build CPU s'), ('disk_mb', 'disk MB'), ('peak_rss_mb', 'peak RSS MB')]
    print(f'{machine()}\n')
    print('| ' + ' | '.join(h for _, h in cols) + ' |')
    print('|' + '---|' * len(cols))
    for r in rows:
        print('| ' + ' | '.join(str(r[k]) if k in ('n', 'engine') else fmt(r.get(k)) for k, _ in cols) + ' |')


if __name__ == '__main__':
    main()
