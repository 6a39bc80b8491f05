"""Both paths of a filtered search at 100k chunks: the exact one and hnswlib's at several `ef`, per allowed count.

`python bench/bench_filter_paths.py` builds `bench_store.py`'s 100k store (about a minute), then filters on a
metadata key whose values each hold 1% of the chunks, spread over the store, and prints one table: p50 ms and
recall@10 (against brute force over the allowed ids) of each path. The table in `nbs/02d_vectors.ipynb` comes from it.
"""
import argparse, sys, tempfile, shutil, time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def p50(fn, reps):
    out = []
    for j in range(reps):
        t = time.perf_counter()
        fn(j)
        out.append(time.perf_counter() - t)
    return np.median(out) * 1e3


def member(allowed):
    "hnswlib's filter for a sorted id array: a byte per label, as `VectorIndex.nearest` builds it."
    top, m = int(allowed[-1]), np.zeros(int(allowed[-1]) + 1, np.uint8)
    m[allowed] = 1
    m = m.tobytes()
    return lambda i: i <= top and m[i] == 1


def main(n=100_000, queries=200, efs=(128, 64, 32), counts=(1_000, 5_000, 10_000, 20_000)):
    import bench_store as bs
    from ragnb.index import Store
    x, tenant, q, _ = bs.dataset(n, queries)
    d = Path(tempfile.mkdtemp(prefix='bench-filter-paths-'))
    try:
        e = bs.Ragnb()
        e.build(d / 's', x, tenant)
        e.s.close()
        s, rng = Store.open(d / 's', readonly=True), np.random.default_rng(2)
        with s.snapshot():
            ids, v = s.gen.live_ids(), s.vectors
            print(f'| allowed ids | exact | {" | ".join(f"hnswlib, ef {ef}" for ef in efs)} | ragnb (its choice) |')
            print('|---|---|' + '---|' * (len(efs) + 1))
            for count in counts:
                groups = [rng.choice(100, count * 100 // n, replace=False) for _ in range(queries)]
                allowed = [ids[np.isin(ids % 100, g)] for g in groups]
                truth = [set(v._nearest_exact(q[j], 10, allowed[j])[0].tolist()) for j in range(queries)]
                recall = lambda got: np.mean([len(set(g.tolist()) & t) / 10 for g, t in zip(got, truth)])
                cells = [f'{p50(lambda j: v._nearest_exact(q[j], 10, allowed[j]), queries):.2f} ms']
                fns = [member(a) for a in allowed]
                for ef in efs:                                     # hnswlib as is, at this ef
                    v.index.set_ef(ef)
                    knn = lambda j: v.index.knn_query(q[j], k=10, filter=fns[j])[0][0]
                    cells.append(f'{p50(knn, queries):.2f} ms, recall {recall([knn(j) for j in range(queries)]):.3f}')
                v.index.set_ef(bs.EF)
                pick = lambda j: v.nearest(q[j], 10, allowed[j])[0]
                cells.append(f'{p50(pick, queries):.2f} ms, recall {recall([pick(j) for j in range(queries)]):.3f}')
                print(f'| {count:,} ({count / n:.0%}) | ' + ' | '.join(cells) + ' |')
        s.close()
    finally: shutil.rmtree(d, ignore_errors=True)


if __name__ == '__main__':
    head, rest = __doc__.split('\n\n', 1)
    ap = argparse.ArgumentParser(description=head, epilog=rest, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--n', type=int, default=100_000, help='chunks in the store')
    ap.add_argument('--queries', type=int, default=200, help='queries per row')
    ap.add_argument('--efs', type=int, nargs='+', default=[128, 64, 32], help="hnswlib's ef, a column each")
    ap.add_argument('--counts', type=int, nargs='+', default=[1_000, 5_000, 10_000, 20_000],
                    help='allowed ids, a row each')
    a = ap.parse_args()
    main(a.n, a.queries, tuple(a.efs), tuple(a.counts))
