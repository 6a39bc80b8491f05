"""LlamaIndex and LangChain adapters (issue 17), inside the real frameworks: a query engine with a mock LLM, an LCEL
chain; trimming from stored vectors agrees with trimming on the fly; metadata and filters survive."""
import re
from pathlib import Path

import pytest

from ragnb.index import Store
from ragnb.ingest import bundled_data_dir, index_paths, open_for_indexing
from ragnb.retrieve import RetrieveOpts, retrieve

Q_ES, Q_EN = '¿Cómo hago un rollback en producción?', 'How do I roll back a deployment?'


@pytest.fixture(scope='module')
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp('adapters') / 's'
    with Store.open(d) as w:
        index_paths(w, [bundled_data_dir() / 'docs' / 'es'], metadata={'tenant': 'acme'})
        index_paths(w, [bundled_data_dir() / 'docs' / 'en'], metadata={'tenant': 'globex'})
    s = Store.open(d, readonly=True)
    yield s
    s.close()


def test_llamaindex_query_engine_uses_our_retriever_and_trimmer(store):
    from llama_index.core.llms.mock import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from ragnb.llamaindex import RagnbRetriever, SentenceTrimPostprocessor
    engine = RetrieverQueryEngine.from_args(RagnbRetriever(store, top_k=4, filters={'tenant': 'acme'}),
                                            llm=MockLLM(), node_postprocessors=[
                                                SentenceTrimPostprocessor(store=store, threshold=0.3)])
    resp = engine.query(Q_ES)
    want = retrieve(store, Q_ES, 4, RetrieveOpts(trim=True, trim_threshold=0.3), {'tenant': 'acme'}).chunks
    assert [n.node.get_content() for n in resp.source_nodes] == [c.text for c in want]
    assert [n.node.metadata['cite'] for n in resp.source_nodes] == [c.cite for c in want]
    assert all(n.node.metadata['tenant'] == 'acme' for n in resp.source_nodes)
    assert all(n.node.metadata['tokens_after'] <= n.node.metadata['tokens_before'] for n in resp.source_nodes)


def test_stored_vectors_and_on_the_fly_agree(store):
    """The same texts trimmed from the store's float16 sentence vectors and re-embedded: the same keep decisions,
    but for scores within float16/bf16 noise of the threshold (the fixed rule: a cosine cut, where a tie is defined;
    without a store the structured policy has no idf, so the two sides would not score alike)."""
    from ragnb.adapters import chunk_from_framework, chunk_metadata, trim_texts
    from ragnb.trim import trim_agreement
    for q in (Q_ES, Q_EN):
        got = retrieve(store, q, 5).chunks
        stored = trim_texts(q, [chunk_from_framework(c.text, chunk_metadata(c, store), store) for c in got],
                            store=store, threshold=0.35, policy='fixed')
        fresh = trim_texts(q, [chunk_from_framework(c.text) for c in got], embedder=store.embedder, threshold=0.35,
                           policy='fixed')
        framed = [chunk_from_framework(c.text, chunk_metadata(c, store), store) for c in got]
        assert all(c.id is not None for c in framed)
        agree = trim_agreement(stored, fresh, threshold=0.35)
        assert agree['unexplained'] == 0 and agree['rate'] > 0.95, agree


def test_an_edited_node_is_re_embedded_not_trimmed_with_stale_vectors(store):
    from ragnb.llamaindex import RagnbRetriever, SentenceTrimPostprocessor
    nodes = RagnbRetriever(store, top_k=1).retrieve(Q_EN)
    nodes[0].node.set_content(nodes[0].node.get_content() + '\nTo roll back, call the on-call engineer first.')
    out = SentenceTrimPostprocessor(store=store, threshold=0.45).postprocess_nodes(nodes, query_str=Q_EN)
    assert 'call the on-call engineer first' in out[0].node.get_content()


def test_langchain_chain_with_our_retriever_and_compressor(store):
    from langchain_core.runnables import RunnableLambda
    from ragnb.langchain import RagnbRetriever, SentenceTrimCompressor
    comp = SentenceTrimCompressor(store=store, threshold=0.3)
    chain = RagnbRetriever(store=store, top_k=4, filters={'tenant': 'globex'}) | RunnableLambda(
        lambda docs: comp.compress_documents(docs, Q_EN))
    docs = chain.invoke(Q_EN)
    want = retrieve(store, Q_EN, 4, RetrieveOpts(trim=True, trim_threshold=0.3), {'tenant': 'globex'}).chunks
    assert [d.page_content for d in docs] == [c.text for c in want]
    assert all(d.metadata['tenant'] == 'globex' and d.metadata['cite'] for d in docs)
    auto = SentenceTrimCompressor(store=store, threshold='auto').compress_documents(docs[:1], Q_EN)
    assert auto[0].metadata['tokens_after'] <= auto[0].metadata['tokens_before']


def readme_adapter_blocks() -> list[str]:
    "The README's Python blocks that use an adapter, in order: they must run as pasted."
    text = (Path(__file__).resolve().parent.parent / 'README.md').read_text(encoding='utf-8')
    return [b for b in re.findall(r'```python\n(.*?)```', text, re.S)
            if 'ragnb.llamaindex' in b or 'ragnb.langchain' in b or 'RetrieverQueryEngine' in b]


def test_the_readme_adapter_snippets_run_as_pasted(tmp_path, monkeypatch, capsys):
    "Issue 31.3: the blocks need no network and no LLM package, against the store the README's Use lines build."
    blocks = readme_adapter_blocks()
    assert len(blocks) == 4 and 'llm=MockLLM()' in blocks[1] and 'ContextualCompressionRetriever' in blocks[2]
    assert 'read_tool' in blocks[3] and 'ask_tool' in blocks[3]
    monkeypatch.chdir(tmp_path)
    docs = [bundled_data_dir() / 'docs', bundled_data_dir() / 'code']
    with open_for_indexing('.ragnb/acme', docs) as w:      # as `ragnb index` builds it: its languages' model
        index_paths(w, docs, metadata={'tenant': 'acme'})
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    monkeypatch.delenv('OPENAI_API_KEY', raising=False)
    env = {}
    for b in blocks: exec(b, env)
    top = retrieve(env['store'], env['q'], 3, RetrieveOpts(), {'tenant': 'acme'}).chunks[0].cite
    env['store'].close()
    out = capsys.readouterr().out.splitlines()
    assert len(out) >= 4 and 'docs/es/observabilidad.md' in out[0], out
    assert out[1].startswith('docs/') and 'docs/es/observabilidad.md' in out[2]
    first = out[2].split("'")[1].split(':')[0]                        # the first compressed document's path
    assert out[3].startswith(f'[{first}') and out[4].startswith(('[Doc: ', '# ')), out[2:]   # read: under its cite
    assert out[-1] == f'[{top}]', (out[-1], top)                                     # ask: its first chunk, cited


SHARED_QUESTIONS = [Q_ES, Q_EN, '¿Cuánto duran los logs?', 'How do I rotate an API key?', 'tenant isolation',
                    '¿Quién está de guardia?']


def test_one_store_shared_by_threads_answers_as_it_does_alone(store):
    """A web app's worker threads, LangChain's `batch` (a thread pool) and LlamaIndex's `aretrieve` on one store: the
    answers one thread gets. Before reads took turns, threads crossed on its SQLite connection and a sound store
    said it was corrupt."""
    import asyncio
    import concurrent.futures as cf
    from ragnb.langchain import RagnbRetriever as LangChainRetriever
    from ragnb.llamaindex import RagnbRetriever as LlamaRetriever
    ask = lambda q, trim: [c.id for c in retrieve(store, q, 5, RetrieveOpts(trim=trim)).chunks]
    alone = {(q, trim): ask(q, trim) for q in SHARED_QUESTIONS for trim in (False, True)}
    asked = [(q, trim) for q in SHARED_QUESTIONS for trim in (False, True)] * 8
    with cf.ThreadPoolExecutor(8) as ex: got = list(ex.map(lambda qt: ask(*qt), asked))
    assert got == [alone[qt] for qt in asked]
    batch = LangChainRetriever(store=store, top_k=5).batch(SHARED_QUESTIONS * 4)
    assert [[d.metadata['ragnb_chunk_id'] for d in ds] for ds in batch] == [alone[q, False]
                                                                             for q in SHARED_QUESTIONS * 4]
    async def together(r): return await asyncio.gather(*(r.aretrieve(q) for q in SHARED_QUESTIONS * 4))
    nodes = asyncio.run(together(LlamaRetriever(store, top_k=5)))
    assert [[n.node.metadata['ragnb_chunk_id'] for n in ns] for ns in nodes] == [alone[q, False]
                                                                                 for q in SHARED_QUESTIONS * 4]


def test_a_writer_shared_with_a_reading_thread_waits_for_its_commit(store, tmp_path):
    "Another thread's read during the writer's transaction waits for the commit: it never sees what is staged."
    import shutil, threading
    from ragnb.chunking import chunk_text
    shutil.copytree(store.path, tmp_path / 's')
    with Store.open(tmp_path / 's', embedder=store.embedder) as w:
        seen = []
        read = lambda: seen.append(len(w.search_lexical('zorblax', k=5)))
        read()
        w.add_documents(chunk_text('# Nuevo\n\nEl servicio zorblax se reinicia con faro restart.\n', 'nuevo.md'),
                        commit=False)
        reader = threading.Thread(target=read)
        reader.start()
        reader.join(timeout=1.0)
        assert reader.is_alive() and seen == [0]            # waiting for the commit
        w.commit()
        reader.join(timeout=30)
        assert not reader.is_alive() and seen == [0, 1]
