"""Chunk sizes matched to the model (issue 34.2, third item), against the defaults: does a chunk the model reads
whole rank better, at equal context tokens?

all-MiniLM-L6-v2 reads 256 tokens, so most `documental` chunks (target 1,500, at most 2,200 characters: about
350-500 tokens) are cut; multilingual-e5-small reads 512, about the whole chunk. For each model this builds a store of
the Debian Reference (es + en) with the default sizes and with 700 / 1,000 / 100 characters (a chunk MiniLM reads
whole), and MiniLM also at the default sizes read to 512 tokens (the model's position table allows it; its
sentence-transformers config says 256). Each store is built in its own process (the sizes are the chunker's
defaults there), with per-sentence vectors as `ragnb index` makes them.

    python bench/bench_chunk_sizes.py [--work DIR] [--corpus debian|html|long] [--configs 0,1,2,3,4] [--questions F]

`--corpus html` indexes `bench_retrieve.py`'s HTML documents (the Spanish Debian Handbook, Python's tutorial and 12
library pages) and asks `html_questions.jsonl`; `--corpus long` indexes `bench_long_docs.py`'s long documents in one
store and asks `long_questions.jsonl`; `--questions` names other files in bench/ (a held-out set, once).

Reports, per question set and language, dense and hybrid: answer@5 (the answer string in the top 5 chunks) and
the answer in the context `retrieve(..., context_budget=B)` hands back at 500 / 1,000 / 2,000 tokens (chunks whole in
rank order, the first that does not fit cut by the structured trim), with the index time. Prints one table.
"""
import argparse, json, os, pathlib, shutil, subprocess, sys, tempfile, time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
sys.path.insert(0, str(ROOT))
MINILM, E5 = 'sentence-transformers/all-MiniLM-L6-v2', 'intfloat/multilingual-e5-small'
CONFIGS = [   # (label, model, max length or None for the model's own, target, max_chars, overlap)
    ('MiniLM, 256 tokens, 1500/2200/200 (default)', MINILM, None, 1500, 2200, 200),
    ('MiniLM, 512 tokens, 1500/2200/200', MINILM, 512, 1500, 2200, 200),
    ('MiniLM, 256 tokens, 700/1000/100', MINILM, None, 700, 1000, 100),
    ('e5-small, 512 tokens, 1500/2200/200 (default)', E5, None, 1500, 2200, 200),
    ('e5-small, 512 tokens, 700/1000/100', E5, None, 700, 1000, 100)]
BUDGETS = (500, 1000, 2000)
DEV = {'debian': 'debian_questions.jsonl,debian_questions_cross.jsonl', 'html': 'html_questions.jsonl',
       'long': 'long_questions.jsonl'}
NAMES = {'debian': 'Debian Reference (es + en)',
         'html': 'Debian Handbook (es) + Python tutorial and library (en), HTML',
         'long': 'long documents: Debian Handbook pages (es), Python library pages and Nettle PDF (en), one store'}


def documents(corpus:str) -> pathlib.Path:
    "The folder a corpus name stands for (`corpus.py`)."
    import corpus as c
    return {'debian': c.corpus_dir, 'html': c.html_corpus_dir, 'long': c.long_docs_dir}[corpus]()


def one(cfg:int, sdir:str, qfiles:list[str], corpus:str) -> dict:
    "Build config `cfg`'s store in `sdir` and score it: `{set: {mode: {lang: [a@5, in 500, 1000, 2000, n]}}}`."
    import ragnb.chunking
    from ragnb.embed import Embedder
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    from bench_retrieve import first_answer_rank
    from ragnb.retrieve import RetrieveOpts, retrieve
    _, model, max_length, target, max_chars, overlap = CONFIGS[cfg]
    # `index_paths` takes no sizes: this process alone changes the documental chunker's defaults (and so the version
    # its chunks carry), which is why each config runs in a child of its own
    ragnb.chunking._chunk_documental.__kwdefaults__.update(target=target, max_chars=max_chars, overlap=overlap)
    t, seconds = time.perf_counter(), None
    if not (pathlib.Path(sdir) / 'manifest.json').exists():
        with Store.open(sdir, embedder=Embedder.from_pretrained(model, max_length=max_length)) as s:
            index_paths(s, [documents(corpus)], progress=False)
        seconds = time.perf_counter() - t
    store = Store.open(sdir, readonly=True)
    out = dict(seconds=seconds, chunks=store.stats()['chunks'], sets={})
    for qf in qfiles:
        for q in (json.loads(l) for l in (ROOT / 'bench' / qf).read_text().splitlines()):
            for mode in ('dense', 'hybrid'):
                row = out['sets'].setdefault(qf, {}).setdefault(mode, {}).setdefault(q['lang'], [0] * 5)
                for i, b in enumerate((None, *BUDGETS)):
                    chunks = retrieve(store, q['question'], opts=RetrieveOpts(mode=mode, context_budget=b)).chunks
                    row[i] += first_answer_rank([c.text for c in chunks], q['answer']) is not None
                row[4] += 1
    store.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--work', help='where the stores go, reused when there (default: a temporary folder, removed)')
    ap.add_argument('--questions', help='files in bench/, comma-separated (default: the corpus\'s dev set)')
    ap.add_argument('--corpus', choices=('debian', 'html', 'long'), default='debian',
                    help="html: bench_retrieve's HTML set (html_questions.jsonl); long: bench_long_docs' documents "
                         "in one store (long_questions.jsonl)")
    ap.add_argument('--configs', default=','.join(map(str, range(len(CONFIGS)))), help='which rows, by number')
    ap.add_argument('--one', type=int, help=argparse.SUPPRESS)     # a child: build and score one config
    args = ap.parse_args()
    args.questions = args.questions or DEV[args.corpus]
    qfiles = args.questions.split(',')
    if args.one is not None:
        print(json.dumps(one(args.one, args.work, qfiles, args.corpus)))
        return
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix='bench-sizes-'))
    results, configs = [], [int(i) for i in args.configs.split(',')]
    for i in configs:
        sdir = work / f'{args.corpus}{i}'
        p = subprocess.run([sys.executable, __file__, '--one', str(i), '--work', str(sdir), '--questions',
                            args.questions, '--corpus', args.corpus], capture_output=True, text=True, check=True)
        results.append(json.loads(p.stdout.strip().splitlines()[-1]))
    if not args.work: shutil.rmtree(work)
    print(f'{NAMES[args.corpus]}, {os.cpu_count()} cores; answer@5, and the answer in the context of '
          f'`retrieve(context_budget=B)` at B = {" / ".join(map(str, BUDGETS))} tokens; index s: blank where the '
          'store was reused\n')
    print('| store | chunks | index s | set | mode | es: @5, in 500 / 1000 / 2000 | en: @5, in 500 / 1000 / 2000 |')
    print('|---|---|---|---|---|---|---|')
    for (label, *_), r in zip([CONFIGS[i] for i in configs], results):
        for qf, modes in r['sets'].items():
            for mode, langs in modes.items():
                cell = lambda l: '{0}, {1} / {2} / {3} of {4}'.format(*langs[l]) if l in langs else ''
                secs = '' if r['seconds'] is None else f"{r['seconds']:.1f}"
                print(f"| {label} | {r['chunks']} | {secs} | {qf.removesuffix('.jsonl')} | {mode} | "
                      f"{cell('es')} | {cell('en')} |")


if __name__ == '__main__':
    main()
