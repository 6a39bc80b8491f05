"""Jupyter notebooks as a user keeps them: ragnb's notebook reader (`ipynb-v1`) against the same notebooks read as
their JSON (what ragnb did before it), LangChain's `NotebookLoader` and LlamaIndex's `IPYNBReader`. Prints one table.

    python bench/bench_notebooks.py [--work DIR]

Corpus: this repository's notebooks (`nbs/*.ipynb`, cleaned by nbdev as committed: no outputs, no execution counts),
copied to a temporary folder. Every method embeds with the same model (MiniLM, ragnb's `Embedder`); ragnb indexes
with `index_paths` and answers with `retrieve` (hybrid, and dense alone); the peers' documents are split at 1,500
characters with 200 of overlap (LangChain's `RecursiveCharacterTextSplitter`, LlamaIndex's `SentenceSplitter` at 375
tokens with 50) and searched densely. LangChain loads with `include_outputs=True`.

Answers: one of the top 5 chunks must hold the answer, compared on letters and digits alone (LangChain writes a
cell's lines as a Python list, with `\\n` and escaped quotes between them). Questions: `bench/notebook_questions.jsonl`
(20, dev) and `notebook_questions_heldout.jsonl` (10, looked at once).
"""
import argparse, json, pathlib, re, shutil, sys, tempfile, warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
warnings.filterwarnings('ignore', category=DeprecationWarning)
SPLIT_CHARS, SPLIT_OVERLAP = 1500, 200


def norm(text:str) -> str:
    "Letters and digits alone: a cell's lines as a Python list, or markdown, hold the same answer."
    return re.sub(r'\\n|[\W_]', '', text).lower()


def questions(name:str) -> list[dict]:
    return [json.loads(line) for line in (ROOT / 'bench' / name).read_text(encoding='utf-8').splitlines()]


def answered(texts:list[str], answer:str) -> bool:
    return any(norm(answer) in norm(t) for t in texts)


def dense_top(emb, texts:list[str], vecs:np.ndarray, q:str, k:int=5) -> list[str]:
    "The `k` texts nearest to the question, by cosine."
    if not texts: return []
    return [texts[i] for i in np.argsort(-(vecs @ emb.embed_query(q)))[:k]]


def peer_chunks(nbs:pathlib.Path) -> dict:
    "Each peer's chunk texts of the notebooks."
    from langchain_community.document_loaders import NotebookLoader
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.readers.file import IPYNBReader
    files = sorted(nbs.glob('*.ipynb'))
    lc = RecursiveCharacterTextSplitter(chunk_size=SPLIT_CHARS, chunk_overlap=SPLIT_OVERLAP)
    lc_docs = [d for f in files for d in NotebookLoader(str(f), include_outputs=True).load()]
    li_docs = [d for f in files for d in IPYNBReader(concatenate=True).load_data(f)]
    li = SentenceSplitter(chunk_size=375, chunk_overlap=50)
    return {'LangChain `NotebookLoader` + recursive splitter': [d.page_content for d in lc.split_documents(lc_docs)],
            'LlamaIndex `IPYNBReader` + `SentenceSplitter`':
                [n.get_content() for n in li.get_nodes_from_documents(li_docs)]}


def ragnb_store(folder:pathlib.Path, store:pathlib.Path, emb):
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    with Store.open(store, embedder=emb) as s: index_paths(s, [folder])
    return store


def ragnb_answers(store:pathlib.Path, qs:list[dict]) -> tuple[int, int, int]:
    "(hybrid answers, dense answers, chunks) of a ragnb store."
    from ragnb.index import Store
    from ragnb.retrieve import RetrieveOpts, retrieve
    with Store.open(store, readonly=True) as s:
        got = [sum(answered([c.text for c in retrieve(s, q['question'], top_k=5, opts=RetrieveOpts(mode=m)).chunks],
                            q['answer']) for q in qs) for m in ('hybrid', 'dense')]
        return got[0], got[1], s.stats()['chunks']


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--work', type=pathlib.Path, help='a folder for the copies and stores (default: a temporary one)')
    args = ap.parse_args()
    from ragnb.embed import PACKAGED_MODEL, Embedder
    work = args.work or pathlib.Path(tempfile.mkdtemp())
    emb = Embedder.from_pretrained(PACKAGED_MODEL)
    nbs, as_json = work / 'nbs', work / 'nbs-json'
    for d in (nbs, as_json): shutil.rmtree(d, ignore_errors=True)
    nbs.mkdir(parents=True)
    as_json.mkdir()
    for f in sorted((ROOT / 'nbs').glob('*.ipynb')):
        shutil.copy(f, nbs / f.name)
        shutil.copy(f, as_json / (f.stem + '.json'))
    sets = {'dev': questions('notebook_questions.jsonl'), 'held-out': questions('notebook_questions_heldout.jsonl')}
    rows = []
    for name, folder in (('ragnb, notebook reader (`ipynb-v1`)', nbs), ('ragnb, notebooks read as JSON', as_json)):
        store = ragnb_store(folder, work / f'store-{folder.name}', emb)
        res = {k: ragnb_answers(store, qs) for k, qs in sets.items()}
        chunks = res['dev'][2]
        rows.append((name, chunks, *(f'{res[k][0]} / {res[k][1]}' for k in sets)))
        shutil.rmtree(store)
    for name, texts in peer_chunks(nbs).items():
        vecs = emb.embed_documents(texts) if texts else np.zeros((0, emb.dim), np.float32)
        res = {k: sum(answered(dense_top(emb, texts, vecs, q['question']), q['answer']) for q in qs)
               for k, qs in sets.items()}
        rows.append((name, len(texts), *(f'- / {res[k]}' for k in sets)))
    n = {k: len(qs) for k, qs in sets.items()}
    print(f"| method | chunks | dev ({n['dev']}): hybrid / dense | held-out ({n['held-out']}): hybrid / dense |")
    print('|---|---|---|---|')
    for r in rows: print('| ' + ' | '.join(map(str, r)) + ' |')
    if not args.work: shutil.rmtree(work)


if __name__ == '__main__':
    sys.exit(main())
