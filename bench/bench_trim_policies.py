"""Trimming policies on the Debian Reference corpus (es + en): token reduction against answer retention, on our own
labelled questions, for the first rule (`policy='fixed'`, the default), the structured policy and token budgets.

Two question sets: bench/debian_questions.jsonl (56, used while choosing the structured policy) and
bench/debian_questions_heldout.jsonl (48, written before any policy was measured on them, used only here).
Retention counts only questions whose untrimmed top-5 holds the answer; token reduction is over those contexts.
The default row is `retrieve(store, q, opts=RetrieveOpts(trim=True))`, exactly what a user gets.
Also: p50 of the cached trim path (stored sentence vectors, top-5), per policy. Prints one table.

    python bench/bench_trim_policies.py [--store DIR]   # DIR: keep the built store there, and reuse it next time
"""
import argparse, json, pathlib, sys, tempfile, time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from corpus import corpus_dir  # noqa: E402

POLICIES = [   # (label, trim_chunks_by_sentence options); None: RetrieveOpts(trim=True), the default
    ('fixed 0.30, window 0', dict(policy='fixed', threshold=0.30)),
    ('fixed 0.38, window 1', dict(policy='fixed', threshold=0.38, window=1)),
    ('fixed 0.45, window 1', dict(policy='fixed', threshold=0.45, window=1)),
    ('structured, no lexical evidence', dict(policy='structured', threshold=0.50, lexical_weight=0.0)),
    ('structured 0.50 (lexical weight 0.3)', dict(policy='structured', threshold=0.50)),
    ('**default: RetrieveOpts(trim=True)**', None),
    ('budget 150 tokens', dict(budget=150)),
    ('budget 300 tokens', dict(budget=300)),
]


def load(name):
    return [json.loads(line) for line in (ROOT / 'bench' / name).read_text().splitlines() if line.strip()]


def main():
    from ragnb.eval import answer_in
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    from ragnb.retrieve import RetrieveOpts, retrieve
    from ragnb.trim import estimate_tokens, trim_chunks_by_sentence
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--store', help='where to keep the built store (reused when it is there)')
    args = ap.parse_args()
    sdir = pathlib.Path(args.store) if args.store else pathlib.Path(tempfile.mkdtemp()) / 'store'
    with Store.open(sdir) as s: index_paths(s, [corpus_dir()], progress=False)
    store = Store.open(sdir, readonly=True)
    sets = {'dev': load('debian_questions.jsonl'), 'held-out': load('debian_questions_heldout.jsonl')}
    res, lat = {}, {}
    for name, qs in sets.items():
        for q in qs:
            base = retrieve(store, q['question'], top_k=5, opts=RetrieveOpts(trim=False))
            if not answer_in(q['answer'], base.context()): continue
            qv = store.embedder.embed_query(q['question'])
            for label, kw in POLICIES:
                t = time.perf_counter()
                if kw is None: ctx = retrieve(store, q['question'], top_k=5, opts=RetrieveOpts(trim=True)).chunks
                else: ctx = trim_chunks_by_sentence(qv, base.chunks, store=store, query=q['question'], **kw)
                lat.setdefault(label, []).append((time.perf_counter() - t) * 1e3)
                r = res.setdefault((name, label), [0, 0, 0, 0])
                r[0] += 1
                r[1] += answer_in(q['answer'], '\n\n'.join(c.text for c in ctx))
                r[2] += base.tokens_before
                r[3] += estimate_tokens(ctx)
    print(f"Debian Reference (es + en), {store.stats()['chunks']} chunks, model {store.manifest['model']}, "
          f"top-5 hybrid; questions whose untrimmed top-5 holds the answer: "
          + ', '.join(f"{n} {res[n, POLICIES[0][0]][0]}/{len(qs)}" for n, qs in sets.items()) + '\n')
    print('| policy | dev: token reduction | dev: answers kept | held-out: token reduction | held-out: answers kept '
          '| trim p50 ms (cached) |')
    print('|---|---|---|---|---|---|')
    for label, kw in POLICIES:
        cells = []
        for name in sets:
            n, kept, tb, tv = res[name, label]
            cells += [f'{100 * (1 - tv / tb):.1f}%', f'{kept / n:.1%} ({kept}/{n})']
        p50 = sorted(lat[label])[len(lat[label]) // 2]
        note = ' (retrieve + trim)' if kw is None else ''
        print(f"| {label} | {' | '.join(cells)} | {p50:.2f}{note} |")


if __name__ == '__main__':
    main()
