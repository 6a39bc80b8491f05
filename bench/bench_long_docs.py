"""Long documents (issue 36): `documental` against `documental_jerarquico`, LlamaIndex's auto-merging retriever and
LangChain's parent-document retriever, at equal context budgets. Prints one table.

    python bench/bench_long_docs.py [--questions long_questions_heldout.jsonl] [--work DIR] [--budgets 500 1000 2000]

Documents (`corpus.long_docs_dir`, installed Debian packages, never copied into the repo): the 12 longest pages of
the Spanish Debian Handbook (`debian-handbook`), 8 long pages of Python's library reference (`python3-doc`) and
Nettle's manual as a PDF (`nettle-dev`). Two stores, as two teams would build them: the Spanish pages, and the
English pages with the PDF; each gets the model `ragnb index` chooses for its languages (multilingual-e5-small for
the Spanish one, MiniLM for the English one), and every peer uses that same model and the same text (ragnb's
readers' markdown, so that only chunking and retrieval differ).

Questions: `bench/long_questions.jsonl` (38, dev), `long_questions_heldout.jsonl` (20, looked at once),
`long_questions_heldout2.jsonl` or `long_questions_heldout3.jsonl` (30 each, written from paragraphs drawn at random,
looked at once); each has an answer string that must appear in the context handed back.

At each budget, every method hands back at most that many tokens (`trim.estimate_tokens`, the same count for all):
- `documental`: `retrieve(..., context_budget=B)`: chunks whole in rank order, the first that does not fit cut to
  the budget left by the structured trim;
- `documental + trim`: `retrieve` with `trim_budget=B`: the best sentences of the top 5 chunks up to B tokens;
- `jerarquico`: `retrieve(..., context_budget=B)` on the tree store (`ragnb.context.tree_context`);
- LlamaIndex: `HierarchicalNodeParser` (2048/512/128 tokens of the model's own tokenizer) and
  `AutoMergingRetriever` over the 12 most similar leaves; LangChain: `ParentDocumentRetriever` (400-character
  children, 2,000-character parents, 10 child hits). Their results are taken whole in rank order while they fit,
  and the first that does not fit is cut to the budget left (its first words).
"""
import argparse, json, os, pathlib, pickle, shutil, statistics, sys, tempfile, time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from corpus import long_docs_dir  # noqa: E402
from bench_trim import llama_embedding  # noqa: E402

STORES = {'es': ['es'], 'en': ['en']}       # store name -> folders of long_docs_dir()
METHODS = ('documental', 'documental + trim', 'jerarquico', 'LlamaIndex auto-merging', 'LangChain parent-document')


def du(path) -> int:
    return sum(f.stat().st_size for f in pathlib.Path(path).rglob('*') if f.is_file())


def fill(texts, budget, estimate):
    "Texts whole in order while they fit `budget` tokens; the first that does not fit cut to what is left."
    out, used = [], 0
    for t in texts:
        n = estimate([t])
        if used + n <= budget:
            out.append(t)
            used += n
            continue
        keep = int((budget - used) / 1.3)
        if keep > 0: out.append(' '.join(t.split()[:keep]))
        break
    return out


def langchain_embeddings(emb):
    from langchain_core.embeddings import Embeddings

    class Wrapped(Embeddings):
        def embed_documents(self, texts): return emb.embed_documents(texts, progress=False).tolist()
        def embed_query(self, text): return emb.embed_query(text).tolist()
    return Wrapped()


def build_ragnb(folders, work, name, chunking):
    from ragnb.ingest import index_paths, open_for_indexing
    path = work / f'{name}-{chunking}'
    t = time.perf_counter()
    with open_for_indexing(path, folders) as s:
        rep = index_paths(s, folders, progress=False, chunking=chunking)
        model = s.manifest['model']
    return dict(path=path, seconds=time.perf_counter() - t, bytes=du(path), chunks=rep.chunks, model=model)


def documents(folders):
    "The documents as ragnb's readers give them: `(source, text)`."
    from ragnb.chunking import read_text_file
    from ragnb.readers import read_document, reader_for
    out = []
    for folder in folders:
        for f in sorted(p for p in folder.rglob('*') if p.is_file()):
            text = read_document(f, f.read_bytes()).text if reader_for(f) else read_text_file(f)
            out.append((str(f.relative_to(folder.parent)), text))
    return out


def build_llamaindex(docs, emb, work, name):
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import HierarchicalNodeParser, SentenceSplitter, get_leaf_nodes
    from llama_index.core.retrievers import AutoMergingRetriever
    t = time.perf_counter()
    tok = emb.tokenizer
    sizes = [2048, 512, 128]
    def count(s): return tok(s, add_special_tokens=False)['input_ids']     # the model's own tokens, as it reads them
    parsers = {f'c{n}': SentenceSplitter(chunk_size=n, chunk_overlap=20, tokenizer=count) for n in sizes}
    parser = HierarchicalNodeParser.from_defaults(node_parser_ids=list(parsers), node_parser_map=parsers)
    nodes = parser.get_nodes_from_documents([Document(text=t_, metadata={'source': s}) for s, t_ in docs])
    leaves = get_leaf_nodes(nodes)
    storage = StorageContext.from_defaults()
    storage.docstore.add_documents(nodes)
    index = VectorStoreIndex(leaves, storage_context=storage, embed_model=llama_embedding(emb))
    seconds = time.perf_counter() - t
    storage.persist(str(work / f'{name}-llamaindex'))
    retriever = AutoMergingRetriever(index.as_retriever(similarity_top_k=12), storage, verbose=False)
    return dict(retriever=retriever, seconds=seconds, bytes=du(work / f'{name}-llamaindex'), chunks=len(leaves))


def build_langchain(docs, emb, work, name):
    from langchain_classic.retrievers import ParentDocumentRetriever
    from langchain_classic.storage import InMemoryStore
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    t = time.perf_counter()
    store, parents = InMemoryVectorStore(langchain_embeddings(emb)), InMemoryStore()
    retriever = ParentDocumentRetriever(vectorstore=store, docstore=parents, search_kwargs={'k': 10},
                                        child_splitter=RecursiveCharacterTextSplitter(chunk_size=400),
                                        parent_splitter=RecursiveCharacterTextSplitter(chunk_size=2000))
    retriever.add_documents([Document(page_content=t_, metadata={'source': s}) for s, t_ in docs])
    seconds = time.perf_counter() - t
    blob = work / f'{name}-langchain.pkl'
    blob.write_bytes(pickle.dumps((store.store, dict(parents.store))))
    return dict(retriever=retriever, seconds=seconds, bytes=blob.stat().st_size, chunks=len(store.store))


def contexts(method, built, q, budget, estimate):
    "The texts `method` hands back for question `q` at `budget` tokens."
    from ragnb.retrieve import RetrieveOpts, retrieve
    if method in ('documental', 'jerarquico'):
        res = retrieve(built['store'], q, top_k=5, opts=RetrieveOpts(context_budget=budget))
        return [c.text for c in res.chunks]
    if method == 'documental + trim':
        res = retrieve(built['store'], q, top_k=5, opts=RetrieveOpts.for_request(budget=budget))
        return [c.text for c in res.chunks]
    if method.startswith('LlamaIndex'):
        return fill([n.node.get_content() for n in built['retriever'].retrieve(q)], budget, estimate)
    return fill([d.page_content for d in built['retriever'].invoke(q)], budget, estimate)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--questions', default='long_questions.jsonl', help='a file in bench/')
    ap.add_argument('--work', help='keep the stores here (reused when present)')
    ap.add_argument('--budgets', type=int, nargs='+', default=[500, 1000, 2000])
    ap.add_argument('--methods', nargs='+', default=list(METHODS), choices=METHODS)
    args = ap.parse_args()
    from ragnb.index import Store
    from ragnb.trim import estimate_tokens
    qs = [json.loads(line) for line in (ROOT / 'bench' / args.questions).read_text().splitlines() if line.strip()]
    root = long_docs_dir()
    work = pathlib.Path(args.work) if args.work else pathlib.Path(tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    builds, rows = {}, {}
    for name, sub in STORES.items():
        folders = [root / s for s in sub]
        cached = work / f'{name}-builds.json'
        info = json.loads(cached.read_text()) if cached.exists() else {}
        for chunking in ('documental', 'jerarquico'):
            if chunking not in info:
                b = build_ragnb(folders, work, name, chunking)
                info[chunking] = dict(b, path=str(b['path']))
                cached.write_text(json.dumps(info))
        stores = {m: Store.open(info[m]['path'], readonly=True) for m in ('documental', 'jerarquico')}
        emb = stores['documental'].embedder
        builds[name] = {'documental': dict(info['documental'], store=stores['documental']),
                        'documental + trim': dict(info['documental'], store=stores['documental']),
                        'jerarquico': dict(info['jerarquico'], store=stores['jerarquico'])}
        docs = documents(folders) if any(m.startswith(('Llama', 'Lang')) for m in args.methods) else []
        if 'LlamaIndex auto-merging' in args.methods:
            builds[name]['LlamaIndex auto-merging'] = build_llamaindex(docs, emb, work, name)
        if 'LangChain parent-document' in args.methods:
            builds[name]['LangChain parent-document'] = build_langchain(docs, emb, work, name)
        for q in (q for q in qs if (q['corpus'] == 'es') == (name == 'es')):
            for method in args.methods:
                for b in args.budgets:
                    t = time.perf_counter()
                    texts = contexts(method, builds[name][method], q['question'], b, estimate_tokens)
                    ms = (time.perf_counter() - t) * 1e3
                    hit = q['answer'].lower() in '\n\n'.join(texts).lower()
                    rows.setdefault((method, b), []).append((q['corpus'], hit, estimate_tokens(texts), ms))
    corpora = ('es', 'en', 'pdf')
    counts = ', '.join(f"{c} {sum(q['corpus'] == c for q in qs)}" for c in corpora)
    print(f'\n{args.questions}: {len(qs)} questions ({counts})')
    print('\n| method | budget | answer in context: es / en / pdf / all | tokens (mean) | query p50 ms |')
    print('|---|---|---|---|---|')
    for (method, b), rs in rows.items():
        share = [sum(h for c, h, _, _ in rs if c == k) / max(1, sum(c == k for c, *_ in rs)) for k in corpora]
        alls = sum(h for _, h, _, _ in rs) / len(rs)
        print(f"| {method} | {b} | {' / '.join(f'{s:.2f}' for s in share)} / **{alls:.2f}** | "
              f"{statistics.mean(t for *_, t, _ in rs):.0f} | {statistics.median(m for *_, m in rs):.1f} |")
    print('\n| method | store | model | units indexed | index s | disk MB |')
    print('|---|---|---|---|---|---|')
    for name, bs in builds.items():
        model = bs['documental']['model'].split('/')[-1]
        for method in args.methods:
            if method == 'documental + trim': continue
            b = bs[method]
            print(f"| {method} | {name} | {model} | {b['chunks']} | {b['seconds']:.0f} | {b['bytes'] / 2**20:.1f} |")
    for bs in builds.values():
        for m in ('documental', 'jerarquico'): bs[m]['store'].close()
    if not args.work: shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    os.environ.setdefault('TOKENIZERS_PARALLELISM', 'false')
    main()
