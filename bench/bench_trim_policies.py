"""Trimming policies on the Debian Reference corpus (es + en): token reduction against answer retention, on our own
labelled questions, for the first rule (`policy='fixed'`, the default), the structured policy and token budgets.

Two question sets: bench/debian_questions.jsonl (56, used while choosing the structured policy) and
bench/debian_questions_heldout.jsonl (48, written before any policy was measured on them, used only here).
Retention counts only questions whose untrimmed top-5 holds the answer; token reduction is over those contexts.
The default row is `retrieve(store, q, opts=RetrieveOpts(trim=True))`, exactly what a user gets. LlamaIndex's
SentenceEmbeddingOptimizer runs on the same chunks with the same embedder (when it raises "zero sentences", the
untrimmed chunks are counted, as a caller catching the error would send).
Also: p50 of the cached trim path (stored sentence vectors, top-5), per policy. The default's row comes first among
the structured ones, so its time includes stemming the words of chunks it has not seen before (the per-word cache
is filled by earlier questions only, as in a service). Prints one table.

    python bench/bench_trim_policies.py [--store DIR] [--model NAME]   # DIR: kept, and reused next time
"""
import argparse, json, pathlib, sys, tempfile, time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from corpus import corpus_dir  # noqa: E402

def policies(model):
    "(label, trim options) per row, from the model's own defaults; None: RetrieveOpts(trim=True), what users get."
    from ragnb.trim import default_trim_threshold, trim_defaults
    fx0, fx1 = default_trim_threshold(model, 0), default_trim_threshold(model, 1)
    st, step = default_trim_threshold(model, 0, 'structured'), trim_defaults(model).rank_step
    return [
        (f'fixed {fx0:g}, window 0 (the old default)', dict(policy='fixed', threshold=fx0)),
        (f'fixed {fx1:g}, window 1', dict(policy='fixed', threshold=fx1, window=1)),
        (f'structured {st:g} + {step:g}/rank (the default, trimming alone)', dict(policy='structured', threshold=st)),
        (f'structured {st + 2 * step:g} at every rank', dict(policy='structured', threshold=st + 2 * step,
                                                             rank_step=0.0)),
        (f'structured {st:g} + {step:g}/rank, no lexical evidence',
         dict(policy='structured', threshold=st, lexical_weight=0.0)),
        (f'**default: RetrieveOpts(trim=True)**: structured {st:g} + {step:g}/rank', None),
        ('budget 150 tokens', dict(budget=150)),
        ('budget 300 tokens', dict(budget=300)),
        (f'LlamaIndex SentenceEmbeddingOptimizer, threshold_cutoff {fx0:g}, no context',
         dict(llama=dict(threshold_cutoff=fx0, context_before=0, context_after=0))),
        ('LlamaIndex SentenceEmbeddingOptimizer, percentile_cutoff 0.5 (context 1, its default)',
         dict(llama=dict(percentile_cutoff=0.5))),
    ]


def llama_trim(opt_kw, emb, question, qv, chunks):
    "LlamaIndex's optimizer on the same chunks with our embedder; on its 'zero sentences' error, the untrimmed texts."
    from llama_index.core.postprocessor import SentenceEmbeddingOptimizer
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
    from bench_trim import llama_embedding
    opt = SentenceEmbeddingOptimizer(embed_model=llama_embedding(emb), **opt_kw)
    nodes = [NodeWithScore(node=TextNode(text=c.text), score=c.score) for c in chunks]
    bundle = QueryBundle(question, embedding=qv.tolist())
    try: return [n.node.text for n in opt.postprocess_nodes(nodes, query_bundle=bundle)], 0
    except ValueError: return [c.text for c in chunks], 1


def load(name):
    return [json.loads(line) for line in (ROOT / 'bench' / name).read_text().splitlines() if line.strip()]


def main():
    from ragnb.embed import Embedder
    from ragnb.eval import answer_in
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    from ragnb.retrieve import RetrieveOpts, retrieve
    from ragnb.trim import estimate_tokens, trim_chunks_by_sentence
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--store', help='where to keep the built store (reused when it is there)')
    ap.add_argument('--model',
                    help='embedding model (default: the packaged MiniLM), e.g. intfloat/multilingual-e5-small')
    args = ap.parse_args()
    sdir = pathlib.Path(args.store) if args.store else pathlib.Path(tempfile.mkdtemp()) / 'store'
    emb = Embedder.from_pretrained(args.model) if args.model else None
    with Store.open(sdir, embedder=emb) as s: index_paths(s, [corpus_dir()], progress=False)
    store = Store.open(sdir, readonly=True)
    POLICIES = policies(store.manifest['model'])
    held = load('debian_questions_heldout.jsonl')
    sets = {'dev': load('debian_questions.jsonl'), 'held-out A': [q for q in held if q['set'] == 'A'],
            'held-out B': [q for q in held if q['set'] == 'B']}
    res, lat = {}, {}
    for name, qs in sets.items():
        for q in qs:
            base = retrieve(store, q['question'], top_k=5, opts=RetrieveOpts(trim=False))
            if not answer_in(q['answer'], base.context()): continue
            qv = store.embedder.embed_query(q['question'])
            for label, kw in POLICIES:
                t = time.perf_counter()
                raised = 0
                if kw is None: ctx = retrieve(store, q['question'], top_k=5, opts=RetrieveOpts(trim=True)).chunks
                elif 'llama' in kw: ctx, raised = llama_trim(kw['llama'], store.embedder, q['question'], qv,
                                                             base.chunks)
                else: ctx = trim_chunks_by_sentence(qv, base.chunks, store=store, query=q['question'], **kw)
                lat.setdefault(label, []).append((time.perf_counter() - t) * 1e3)
                r = res.setdefault((name, label), [0, 0, 0, 0, 0])
                r[0] += 1
                r[1] += answer_in(q['answer'], '\n\n'.join(c if isinstance(c, str) else c.text for c in ctx))
                r[2] += base.tokens_before
                r[3] += estimate_tokens(ctx)
                r[4] += raised
    print(f"Debian Reference (es + en), {store.stats()['chunks']} chunks, model {store.manifest['model']}, "
          f"top-5 hybrid; questions whose untrimmed top-5 holds the answer: "
          + ', '.join(f"{n} {res[n, POLICIES[0][0]][0]}/{len(qs)}" for n, qs in sets.items()) + '\n')
    print('| policy | ' + ' | '.join(f'{n}: fewer tokens | {n}: answers kept' for n in sets)
          + ' | trim p50 ms (cached) |')
    print('|---' * (2 + 2 * len(sets)) + '|')
    for label, kw in POLICIES:
        cells = []
        for name in sets:
            n, kept, tb, tv, raised = res[name, label]
            err = f', raised on {raised}' if raised else ''
            cells += [f'{100 * (1 - tv / tb):.1f}%', f'{kept / n:.1%} ({kept}/{n}{err})']
        p50 = sorted(lat[label])[len(lat[label]) // 2]
        note = ' (retrieve + trim)' if kw is None else ''
        print(f"| {label} | {' | '.join(cells)} | {p50:.2f}{note} |")


if __name__ == '__main__':
    main()
