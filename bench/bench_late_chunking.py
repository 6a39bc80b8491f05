"""Sentence vectors from the chunk's own pass ("late chunking", `Embedder.embed_late`) against one pass per
sentence (issue 37.1), as `ragnb index` builds them.

    python bench/bench_late_chunking.py [--model NAME] [--questions FILE] [--sweep] [--keep DIR]

On the Debian Reference corpus (es + en), with one model, two stores of the same chunks and chunk vectors:
- `sentence`: one pass per chunk (cut at the model's length) and one per sentence (the default);
- `late`: one pass per chunk in windows of the model's length; the chunk's vector is its first window's (as above)
  and each sentence's the mean of its own tokens (`Store.open(sentence_pass='late')`).
For each: index time (`index_paths`, the whole pipeline), answer@5 of dense and hybrid retrieval per language, and
trimming with the store's own defaults (`RetrieveOpts(trim=True)`): answers kept among those in the untrimmed top 5,
and tokens before and after. Questions: bench/debian_questions.jsonl (the dev set) unless `--questions`.
`--sweep` also prints `ragnb.eval.sweep` of the structured policy on the late store (its default grid, top 5), the
calibration of its default. Prints one table (and the sweep's).
"""
import argparse, json, shutil, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
sys.path.insert(0, str(ROOT))


def answer_rank(chunks, answer):
    return next((i for i, c in enumerate(chunks, 1) if answer.lower() in c.text.lower()), None)


def measure(store, qs):
    "Per language: dense and hybrid answers in the top 5; trimmed: kept, asked, tokens before, after."
    from ragnb.retrieve import RetrieveOpts, retrieve
    out = {}
    for q in qs:
        r = out.setdefault(q['lang'], dict(dense=0, hybrid=0, n=0, kept=0, asked=0, before=0, after=0))
        r['n'] += 1
        r['dense'] += answer_rank(retrieve(store, q['question'], 5, opts=RetrieveOpts(mode='dense')).chunks,
                                  q['answer']) is not None
        full = retrieve(store, q['question'], 5)
        if answer_rank(full.chunks, q['answer']) is None: continue
        r['hybrid'] += 1
        t = retrieve(store, q['question'], 5, opts=RetrieveOpts(trim=True))
        r['asked'] += 1
        r['kept'] += answer_rank(t.chunks, q['answer']) is not None
        r['before'], r['after'] = r['before'] + t.tokens_before, r['after'] + t.tokens_in_context
    return out


def main():
    from corpus import corpus_dir
    from ragnb.embed import Embedder
    from ragnb.eval import load_questions, sweep
    from ragnb.index import Store, sentence_pass
    from ragnb.ingest import index_paths
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--model', default='sentence-transformers/all-MiniLM-L6-v2')
    ap.add_argument('--questions', default='debian_questions.jsonl')
    ap.add_argument('--sweep', action='store_true')
    ap.add_argument('--keep', help='build the stores under DIR and reuse them next time')
    a = ap.parse_args()
    emb = Embedder.from_pretrained(a.model)
    qs = [json.loads(x) for x in (ROOT / 'bench' / a.questions).read_text().splitlines() if x.strip()]
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix='bench-late-'))
    work.mkdir(parents=True, exist_ok=True)
    rows, secs = {}, {}
    try:
        for kind in ('sentence', 'late'):
            d = work / f"{emb.name.split('/')[-1]}-{kind}"
            t = time.perf_counter()
            with Store.open(d, embedder=emb, sentence_pass=kind) as s:
                rep = index_paths(s, [corpus_dir()], progress=False)
                assert sentence_pass(s.manifest) == kind, s.manifest
            secs[kind] = (time.perf_counter() - t) if rep.chunks else None
            with Store.open(d, readonly=True, embedder=emb) as s: rows[kind] = measure(s, qs)
            with Store.open(d, readonly=True, embedder=emb) as s: chunks = s.stats()['chunks']
        late_dir = work / f"{emb.name.split('/')[-1]}-late"
        if a.sweep:
            with Store.open(late_dir, readonly=True, embedder=emb) as s:
                qq, _ = load_questions(ROOT / 'bench' / a.questions)
                res = sweep(s, qq, windows=(0,), policies=('structured',))
    finally:
        if not a.keep: shutil.rmtree(work, ignore_errors=True)
    print(f'Debian Reference (es + en), {chunks} chunks; model {emb.name}, max length {emb.max_length}; '
          f'{len(qs)} questions from bench/{a.questions}\n')
    print('| sentence vectors | index s | dense es | dense en | hybrid es | hybrid en | trim kept es | trim kept en '
          '| tokens before → after |')
    print('|---|---|---|---|---|---|---|---|---|')
    names = {'sentence': 'one pass per sentence (default)', 'late': "late: the chunk's own pass"}
    for kind, label in names.items():
        r, s = rows[kind], secs.get(kind)
        es, en = r.get('es'), r.get('en')
        cell = lambda x, k: f"{x[k] / x['n']:.2f}" if x else ''
        kept = lambda x: f"{x['kept']}/{x['asked']}" if x else ''
        tok = f"{sum(x['before'] for x in r.values())} → {sum(x['after'] for x in r.values())}"
        t = f'{s:.1f}' if s else 'reused'
        print(f'| {label} | {t} | {cell(es, "dense")} | {cell(en, "dense")} | {cell(es, "hybrid")} | '
              f'{cell(en, "hybrid")} | {kept(es)} | {kept(en)} | {tok} |')
    if a.sweep:
        print('\nStructured policy on the late store (top 5):\n')
        print(res.table())
        print('\nbest at 95% of the untrimmed answers:', res.best(0, policy='structured'))


if __name__ == '__main__':
    main()
