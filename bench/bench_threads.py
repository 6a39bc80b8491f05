"""Embedding speed as a user feels it, idle and under a background load (one busy-loop process per core): torch's
default thread count, one thread, and ragnb's policy (`embed.embedding_threads`). Prints one table.

    python bench/bench_threads.py [--repeat 5]
"""
import argparse, multiprocessing as mp, os, pathlib, statistics, sys, time
from machine import machine  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


def spin():
    while True: pass


def texts():
    from ragnb.chunking import chunk_text, read_text_file
    files = sorted((ROOT / 'data' / 'docs').rglob('*.md'))
    return [c.text for f in files for c in chunk_text(read_text_file(f), f)][:26]


def measure(emb, chunks, repeat):
    "Seconds to embed the chunks (best of 2) and the median ms of `repeat` single queries, each a new text."
    batch = min(_timed(lambda: emb.embed_documents(chunks)) for _ in range(2))
    queries = [_timed(lambda i=i: emb._embed([f'how do I roll back release {i} of the service?'])) * 1e3
               for i in range(repeat)]
    return batch, statistics.median(queries)


def _timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--repeat', type=int, default=7)
    args = ap.parse_args()
    import torch
    from ragnb.embed import Embedder, embedding_threads
    chunks, default = texts(), torch.get_num_threads()
    emb = Embedder.from_pretrained(document_runtime='torch')     # torch's threads are what this measures
    emb.embed_documents(chunks[:4])
    rows = []
    for load in (False, True):
        procs = [mp.Process(target=spin, daemon=True) for _ in range(os.cpu_count() or 1)] if load else []
        for p in procs: p.start()
        time.sleep(1.0)
        for name, threads in ((f'torch default ({default} threads)', default), ('1 thread', 1), ('ragnb policy', None)):
            emb.threads = threads
            chosen = (embedding_threads(len(chunks), threads), embedding_threads(1, threads))
            batch, query = measure(emb, chunks, args.repeat)
            rows.append((('busy-loop per core' if load else 'idle'), name, f'{chosen[0]} / {chosen[1]}',
                         f'{batch:.2f}', f'{query:.0f}'))
        for p in procs: p.terminate()
    print(f'{len(chunks)} chunks of the bundled docs, {machine()}, model {emb.name}\n')
    print('| machine | threads | threads used (26 chunks / 1 query) | 26 chunks (s) | one query, median (ms) |')
    print('|---|---|---|---|---|')
    for r in rows: print('| ' + ' | '.join(r) + ' |')


if __name__ == '__main__':
    sys.path.insert(0, str(ROOT))
    main()
