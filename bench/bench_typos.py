"""Questions with typos on the Debian Reference corpus (es + en): what a misspelled word costs a hybrid search, and
what respelling it into the nearest term of the lexical index (`ragnb.lexical`'s "Misspelled words") gives back.
Prints one table.

Each question of the sets gets one typo, drawn with a seed of its file's name: in one word of 5 letters or more that
is not its answer, a letter (not the first or the last) is dropped, doubled, swapped with the next, or replaced by a
neighbour on a QWERTY keyboard. Rows: each model's store with `retrieve`'s defaults (hybrid), the questions as
written and with their typos, each with respelling on (`SPELLING_EDITS` as shipped) and off (`()`); and bm25s
beside them, fed the store's own terms and the question's terms (no respelling: it has none), as a peer's lexical
side.

    python bench/bench_typos.py [--store PREFIX] [--questions FILE ...] [--models minilm,e5]

PREFIX: keep the built stores at PREFIX-<model> and reuse them. The default sets are the four dev sets
(`debian_questions.jsonl`, `_dev2`, `_dev3`, `_cross`); `--questions debian_questions_heldout.jsonl
debian_questions_heldout2.jsonl` asks the held-out ones.
"""
import argparse, json, pathlib, random, re, sys, tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from bench_retrieve import _bm25s, first_answer_rank  # noqa: E402
from corpus import corpus_dir  # noqa: E402
from machine import machine  # noqa: E402

MODELS = {'minilm': 'sentence-transformers/all-MiniLM-L6-v2', 'e5': 'intfloat/multilingual-e5-small'}
DEV = ['debian_questions.jsonl', 'debian_questions_dev2.jsonl', 'debian_questions_dev3.jsonl',
       'debian_questions_cross.jsonl']
NEIGHBOURS = dict(zip('qwertyuiopasdfghjklzxcvbnm',                 # each letter's QWERTY neighbours
                      ['wa', 'qes', 'wrd', 'etf', 'ryg', 'tuh', 'yij', 'uok', 'ipl', 'o', 'qsz', 'awdx', 'sefc',
                       'drgv', 'fthb', 'gyjn', 'hukm', 'jil', 'ko', 'asx', 'zdc', 'xfv', 'cgb', 'vhn', 'bjm', 'nk']))


def typo(question:str, rnd:random.Random, answer:str='') -> str:
    "`question` with one typo in one of its words of 5 letters or more that is not in `answer` (see above)."
    words = [m for m in re.finditer(r'[^\W\d_]{5,}', question) if m[0].lower() not in answer.lower()]
    if not words: return question
    m = rnd.choice(words)
    w = m[0]
    i, kind = rnd.randrange(1, len(w) - 1), rnd.choice(['drop', 'swap', 'replace', 'double'])
    if kind == 'drop': w2 = w[:i] + w[i + 1:]
    elif kind == 'swap': w2 = w[:i] + w[i + 1] + w[i] + w[i + 2:]
    elif kind == 'double': w2 = w[:i] + w[i] + w[i:]
    else: w2 = w[:i] + rnd.choice(NEIGHBOURS.get(w[i].lower(), w[i])) + w[i + 1:]
    return question[:m.start()] + w2 + question[m.end():]


def questions(files:list[str]) -> list[dict]:
    out = []
    for f in files:
        rnd = random.Random(f)
        for line in (ROOT / 'bench' / f).read_text().splitlines():
            q = json.loads(line)
            out.append({**q, 'typo': typo(q['question'], rnd, q['answer'])})
    return out


def ragnb_rows(store, qs) -> dict:
    from ragnb import lexical
    from ragnb.retrieve import retrieve
    shipped, out = lexical.SPELLING_EDITS, {}
    for field in ('question', 'typo'):
        for on in (True, False):
            lexical.SPELLING_EDITS = shipped if on else ()
            ranks = [first_answer_rank([c.text for c in retrieve(store, q[field], top_k=5).chunks], q['answer'])
                     for q in qs]
            out[field, on] = sum(r is not None for r in ranks)
    lexical.SPELLING_EDITS = shipped
    return out


def bm25s_row(store, qs) -> dict:
    "bm25s (`bench_retrieve._bm25s`) on the store's own terms: answers in its top 5, as written and with typos."
    from ragnb.lexical import query_terms
    rows = store.db.execute('select l.rowid, l.terms, c.text from lexical l join chunks c on c.id = l.rowid').fetchall()
    ids, terms, texts = [r[0] for r in rows], [r[1].split() for r in rows], {r[0]: r[2] for r in rows}
    out = {}
    for field in ('question', 'typo'):
        ranks, _ = _bm25s(ids, terms, texts, [{**q, 'question': q[field]} for q in qs], query_terms)
        out[field] = sum(r is not None and r <= 5 for rs in ranks.values() for r in rs)
    return out


def main():
    from ragnb.embed import Embedder
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--store', help='keep the built stores at PREFIX-<model> and reuse them')
    ap.add_argument('--questions', nargs='+', default=DEV, help='files in bench/ (the four dev sets by default)')
    ap.add_argument('--models', default='minilm,e5', help='minilm, e5 or both (comma-separated)')
    args = ap.parse_args()
    qs, work = questions(args.questions), pathlib.Path(tempfile.mkdtemp())
    changed = sum(q['typo'] != q['question'] for q in qs)
    print(f"Debian Reference (es + en): {len(qs)} questions of {', '.join(args.questions)}, {changed} with a typo; "
          f"answer@5, hybrid (`retrieve`'s defaults); {machine()}\n")
    print('| retriever | as written | with typos | with typos, respelled | as written, respelled |')
    print('|---|---|---|---|---|')
    peer = None
    for short in args.models.split(','):
        sdir = pathlib.Path(f'{args.store}-{short}') if args.store else work / short
        if not (sdir / 'manifest.json').exists():
            with Store.open(sdir, embedder=Embedder.from_pretrained(MODELS[short])) as s:
                index_paths(s, [corpus_dir()], progress=False)
        store = Store.open(sdir, readonly=True)
        r = ragnb_rows(store, qs)
        print(f"| ragnb, {MODELS[short].split('/')[-1]} | {r['question', False]} | {r['typo', False]} | "
              f"{r['typo', True]} | {r['question', True]} |")
        peer = peer or bm25s_row(store, qs)          # the same terms in every store: measured once
        store.close()
    print(f"| bm25s, the store's terms (no respelling) | {peer['question']} | {peer['typo']} | - | - |")


if __name__ == '__main__':
    main()
