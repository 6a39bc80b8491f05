"ragnb.trim: a property test of selection and rebuilding, and the stored sentence vectors across updates."
import hashlib, re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ragnb.chunking import Chunk
from ragnb.index import chunk_sentence_spans
from ragnb.sentences import sentence_kind
from ragnb.trim import as_chunk, estimate_tokens, structure_links, trim_agreement, trim_chunks_by_sentence
from ragnb.ingest import index_paths


class HashEmbedder:
    "Deterministic pseudo-random unit vectors per text: arbitrary scores, so selection is exercised everywhere."
    name, dim = 'hash', 16
    def embed_documents(self, texts):
        if not texts: return np.zeros((0, self.dim), np.float32)
        seeds = [int(hashlib.sha1(t.encode()).hexdigest()[:8], 16) for t in texts]
        out = np.stack([np.random.default_rng(s).standard_normal(self.dim) for s in seeds])
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


WORDS = ['datos', 'tenant', 'logs', 'keys', 'Loki', 'RLS', 'backup', 'rollback', 'canary', 'API']
word = st.sampled_from(WORDS)
sentence = st.builds(lambda ws, end: ' '.join([ws[0].capitalize(), *ws[1:]]) + end, st.lists(word, min_size=1,
                                                                                             max_size=6),
                     st.sampled_from('.?!'))
paragraph = st.lists(sentence, min_size=1, max_size=5).map(' '.join)
block = st.one_of(paragraph, paragraph, paragraph,
                  st.lists(word, min_size=1, max_size=3).map(lambda ws: '\n'.join(f'| {w} | 1 |' for w in ws)),
                  st.lists(word, min_size=1, max_size=3).map(lambda ws: '\n'.join(f'- {w} item' for w in ws)),
                  st.just('```\ncode = 1\n```'), st.just('## Sección'))
docs = st.lists(block, min_size=1, max_size=6).map('\n\n'.join)
table = st.lists(word, min_size=1, max_size=4).map(lambda ws: '| nombre | valor |\n|---|---|\n'
                                                   + '\n'.join(f'| {w} | {i} |' for i, w in enumerate(ws)))
intro_fence = word.map(lambda w: f'Ejecute lo siguiente para {w}:\n\n```\nfaroctl {w}\n```')
lead_in_list = st.lists(word, min_size=1, max_size=4).map(lambda ws: 'Opciones:\n\n' + '\n'.join(f'- {w}' for w in ws))
structured_docs = st.lists(st.one_of(block, table, intro_fence, lead_in_list), min_size=1, max_size=8).map('\n\n'.join)
MARK = re.compile(r'(?:^|[ \n])\[\.\.\.\](?:[ \n]|$)')


@settings(max_examples=300, deadline=None)
@given(docs, st.integers(0, 2**31), st.floats(-0.5, 0.9), st.integers(0, 4), st.integers(0, 3), st.booleans())
def test_trimmed_body_is_original_sentences_in_order_plus_markers(body, seed, threshold, min_sentences, window,
                                                                  prefixed):
    emb = HashEmbedder()
    text = ('[Doc: Guía > Sección]\n' + body) if prefixed else body
    chunk = Chunk(text, 'g.md', 'documental', 'Sección', 1, 9, 0, len(body), 'v', {'tenant': 't1'}, id='1', score=0.5)
    q = np.random.default_rng(seed).standard_normal(emb.dim).astype(np.float32)
    q /= np.linalg.norm(q)
    [r] = trim_chunks_by_sentence(q, [chunk], embedder=emb, threshold=threshold, min_sentences=min_sentences,
                                  window=window)
    spans = chunk_sentence_spans(chunk)
    assert r.original_text == text and r.metadata == chunk.metadata and r.id == '1' and r.score == 0.5
    assert r.text.startswith('[Doc: Guía > Sección]\n') == prefixed
    if r.text == text: return                      # nothing cut (or nothing to cut)
    kept = r.kept
    assert kept == sorted(set(kept)) and kept
    scores = np.array(r.sentence_scores)
    passing = set(np.flatnonzero(scores >= threshold).tolist())
    assert passing <= set(kept)
    assert len(kept) >= min(max(min_sentences, 1), len(spans))
    core = passing if len(passing) >= max(min_sentences, 1) else None
    if core: assert all(any(abs(i - j) <= window for j in core) for i in kept)
    # the body is exactly: runs of contiguous kept sentences, copied from the original, separated by markers
    runs = []
    for i in kept:
        if runs and i == runs[-1][1] + 1: runs[-1][1] = i
        else: runs.append([i, i])
    pieces = [p for p in MARK.split(r.text[len(r.text) - len(r.body):]) if p]
    assert pieces == [text[spans[a][0]:spans[b][1]] for a, b in runs]
    assert len(MARK.findall(r.body)) == len(runs) - 1 + (runs[0][0] > 0) + (runs[-1][1] < len(spans) - 1)


def _check_body(r, text, spans):
    "The body is exactly: runs of contiguous kept sentences, copied from the original, separated by markers."
    runs = []
    for i in r.kept:
        if runs and i == runs[-1][1] + 1: runs[-1][1] = i
        else: runs.append([i, i])
    pieces = [p for p in MARK.split(r.text[len(r.text) - len(r.body):]) if p]
    assert pieces == [text[spans[a][0]:spans[b][1]] for a, b in runs]


def _random_chunks(bodies):
    return [Chunk(f'[Doc: Guía > S{i}]\n' + b, f'g{i}.md', 'documental', f'S{i}', 1, 9, 0, len(b), 'v', {},
                  id=str(i), score=0.5) for i, b in enumerate(bodies)]


@settings(max_examples=200, deadline=None)
@given(st.lists(structured_docs, min_size=1, max_size=4), st.integers(0, 2**31), st.floats(-0.5, 0.9), st.integers(0,
                                                                                                                   2))
def test_structured_keeps_structure_and_at_least_one_sentence(bodies, seed, threshold, window):
    emb = HashEmbedder()
    chunks = _random_chunks(bodies)
    q = np.random.default_rng(seed).standard_normal(emb.dim).astype(np.float32)
    q /= np.linalg.norm(q)
    out = trim_chunks_by_sentence(q, chunks, embedder=emb, threshold=threshold, window=window, policy='structured')
    assert [c.id for c in out] == [c.id for c in chunks if c.id in {o.id for o in out}]   # rank order, some dropped
    trimmable = [c for c in chunks if len(chunk_sentence_spans(c)) > 1]
    assert out or not trimmable
    for r in out:
        spans, text = r.sentence_spans, r.original_text
        sents = [text[a:b] for a, b in spans]
        if r.text == text: continue
        links = structure_links(sents)
        for i in r.kept: assert links[i] <= set(r.kept), (sents[i], [sents[j] for j in links[i]])
        for i in r.kept:                              # a table row never comes without its header
            if sentence_kind(sents[i]) != 'row': continue
            j = i
            while j > 0 and sentence_kind(sents[j - 1]) in ('row', 'separator'): j -= 1
            if i > j + 1 and sentence_kind(sents[j + 1]) == 'separator': assert {j, j + 1} <= set(r.kept)
        _check_body(r, text, spans)


@settings(max_examples=200, deadline=None)
@given(st.lists(structured_docs, min_size=1, max_size=4), st.integers(0, 2**31), st.integers(1, 200))
def test_budget_is_never_exceeded_beyond_the_best_unit(bodies, seed, budget):
    emb = HashEmbedder()
    chunks = _random_chunks(bodies)
    q = np.random.default_rng(seed).standard_normal(emb.dim).astype(np.float32)
    q /= np.linalg.norm(q)
    out = trim_chunks_by_sentence(q, chunks, embedder=emb, budget=budget)
    assert out
    units = sum(len(r.kept) > 0 or not r.sentence_scores for r in out)
    assert estimate_tokens(out) <= budget or units == 1
    more = trim_chunks_by_sentence(q, chunks, embedder=emb, budget=budget + 100)
    assert estimate_tokens(more) >= min(estimate_tokens(out), budget)
    for r in out:
        if r.text != r.original_text: _check_body(r, r.original_text, r.sentence_spans)


def test_overlap_sentences_are_kept_once():
    emb = HashEmbedder()
    a = Chunk('[Doc: G]\nUno va aquí.\nDos va aquí.\nTres va aquí.', 'g.md', 'documental', 'G', 1, 3, 0, 40, 'v',
              id='1')
    b = Chunk('[Doc: G]\nTres va aquí.\nCuatro va aquí.\nUno va aquí.', 'g.md', 'documental', 'G', 3, 5, 30, 70, 'v',
              overlap=len('Tres va aquí.\n'), id='2')
    q = np.ones(emb.dim, np.float32) / np.sqrt(emb.dim)
    ra, rb = trim_chunks_by_sentence(q, [a, b], embedder=emb, threshold=-1, policy='structured')
    assert ra.text == a.text                                     # everything passes -1
    assert rb.text == '[Doc: G]\n[...]\nCuatro va aquí.\nUno va aquí.'  # line 3 was in a; 'Uno' at line 5 is new
    ra, rb = trim_chunks_by_sentence(q, [a, b], embedder=emb, threshold=-1, policy='fixed')
    assert rb.text == b.text                                     # the first rule is unchanged


def strip_ids(chunks):
    return [as_chunk(c, id=None) for c in chunks]


@pytest.fixture(scope='module')
def emb():
    from ragnb.embed import Embedder
    return Embedder.from_pretrained()


def test_stored_vectors_follow_updates_and_match_on_the_fly(tmp_path, emb):
    from ragnb.index import Store
    docs = tmp_path / 'docs'
    docs.mkdir()
    (docs / 'logs.md').write_text('# Logs\n\nApplication logs are kept for 14 days in Loki. '
                                  'Traces are kept for 7 days. Audit logs are kept for two years.\n\n'
                                  'Nothing else is stored.', encoding='utf-8')
    (docs / 'keys.md').write_text('# Keys\n\nRotate API keys every 90 days. A rotated key keeps working for one hour. '
                                  'Keys are scoped to one tenant.', encoding='utf-8')
    store = Store.open(tmp_path / 'store', embedder=emb)
    index_paths(store, [docs])
    q = emb.embed_query('How long are audit logs kept?')

    def agree():
        hits = store.search(q, k=10)
        cached = store.sentence_vectors([c.id for c in hits])
        assert sorted(cached) == sorted(c.id for c in hits)
        for c in hits: assert cached[c.id][0] == chunk_sentence_spans(c)
        a = trim_chunks_by_sentence(q, hits, store=store, threshold=0.3)
        b = trim_chunks_by_sentence(q, strip_ids(hits), embedder=emb, threshold=0.3)
        r = trim_agreement(a, b, 0.3)            # equal but for ties within SCORE_TOLERANCE of the threshold
        assert r['unexplained'] == 0 and r['rate'] >= 0.99, r
        assert store.stats()['sentence_vectors'] == sum(len(v[0]) for v in cached.values())
        return a

    first = agree()
    assert any('Audit logs are kept for two years.' in c.text and '[...]' in c.text for c in first)
    (docs / 'logs.md').write_text('# Logs\n\nAudit logs are kept for five years now. Traces are gone.',
                                  encoding='utf-8')
    assert index_paths(store, [docs]).counts()['updated'] == 1
    second = agree()
    assert not any('two years' in c.original_text for c in second)
    (docs / 'keys.md').unlink()
    assert index_paths(store, [docs]).counts()['removed'] == 1
    agree()
    store.close()
    with Store.open(tmp_path / 'store', readonly=True) as ro:               # a reader maps the committed file
        hits = ro.search(q, k=3)
        assert ro.sentence_vectors([c.id for c in hits]).keys() == {c.id for c in hits}


def test_store_without_sentence_vectors_trims_on_the_fly(tmp_path, emb):
    from ragnb.index import Store
    (tmp_path / 'a.md').write_text('# A\n\nLogs are kept for 14 days. Keys rotate every 90 days. Backups run nightly.',
                                   encoding='utf-8')
    with Store.open(tmp_path / 's', embedder=emb, sentence_vectors=False) as s:
        index_paths(s, [tmp_path / 'a.md'])
        assert s.manifest['sentence_vectors'] is False and s.stats()['sentence_vectors'] == 0
        assert not list((tmp_path / 's').glob('sentences-*'))
        q = emb.embed_query('When do backups run?')
        [r] = trim_chunks_by_sentence(q, s.search(q, k=1), store=s, threshold=0.5)
        assert 'Backups run nightly.' in r.text and 'Keys rotate' not in r.text


@pytest.mark.parametrize('shards', [None, 4])
def test_a_store_of_code_only_trims(tmp_path, emb, shards):
    "Code chunks have no sentences: the sentence file stays empty, and `ask --trim` returns the code whole."
    from ragnb.ingest import bundled_data_dir
    from ragnb.retrieve import RetrieveOpts, retrieve
    from ragnb.stores import open_store
    with open_store(tmp_path / 's', embedder=emb, shards=shards) as s:
        index_paths(s, [bundled_data_dir() / 'code'])
    with open_store(tmp_path / 's', readonly=True, embedder=emb) as s:
        assert s.stats()['chunks'] > 4 and s.stats()['sentence_vectors'] == 0
        res = retrieve(s, 'how is the retry backoff computed?', opts=RetrieveOpts(trim=True))
        assert res.chunks and all(c.text == c.original_text and '[...]' not in c.text for c in res.chunks)
        assert s.sentence_vectors([c.id for c in res.chunks]) == {}


def test_truncated_sentence_file_is_detected(tmp_path, emb):
    from ragnb.index import Store, StoreCorruptedError
    (tmp_path / 'a.md').write_text('# A\n\nOne sentence here. Another one there.', encoding='utf-8')
    with Store.open(tmp_path / 's', embedder=emb) as s: index_paths(s, [tmp_path / 'a.md'])
    f = next((tmp_path / 's').glob('sentences-*.f16'))
    f.write_bytes(f.read_bytes()[:100])
    with pytest.raises(StoreCorruptedError, match='sentence vector file truncated'):
        Store.open(tmp_path / 's', readonly=True)


def _write_docs(d, n, words):
    d.mkdir(exist_ok=True)
    for i in range(n):
        body = ' '.join(f'Sentence {j} of page {i} is about {words}.' for j in range(6))
        (d / f'p{i}.md').write_text(f'# Page {i}\n\n{body}', encoding='utf-8')


def test_crash_between_sentence_file_and_commit_leaves_the_previous_store(tmp_path, emb, monkeypatch):
    import ragnb.index as ix
    from ragnb.index import Store, chunk_sentence_spans
    _write_docs(tmp_path / 'docs', 2, 'logs')
    with Store.open(tmp_path / 's', embedder=emb) as s: index_paths(s, [tmp_path / 'docs'])
    f = next((tmp_path / 's').glob('sentences-*.f16'))
    size = f.stat().st_size
    s = Store.open(tmp_path / 's', embedder=emb)
    extra = Chunk('[Doc: X]\nOne more sentence. And another one.', 'x.md', 'documental', 'X', 1, 2, 0, 30, 'v')
    s.add_documents([extra], commit=False)
    def crash(_db): raise RuntimeError('simulated crash between writing the index and committing')
    with monkeypatch.context() as m:
        m.setattr(ix, '_commit_db', crash)
        with pytest.raises(RuntimeError, match='simulated crash'):
            s.commit()
    assert f.stat().st_size > size                      # the rows reached the file, but the database never counted them
    s.close()
    with Store.open(tmp_path / 's', readonly=True) as ro:
        assert ro.stats()['chunks'] == 2 and ro.stats()['sentence_vectors'] == 14     # a heading and 6 sentences each
    with Store.open(tmp_path / 's', embedder=emb) as s:     # the next commit overwrites the uncounted rows
        [cid] = s.add_documents([extra])
        spans, vecs, _ = s.sentence_vectors([cid])[str(cid)]
        assert spans == chunk_sentence_spans(extra)
        assert np.abs(vecs.astype(np.float32) - emb.embed_documents([extra.text[a:b] for a, b in spans])).max() < 2e-3
    assert f.stat().st_size == 16 * emb.dim * 2


def test_reader_survives_a_compaction_by_the_writer(tmp_path, emb):
    from ragnb.index import Store
    _write_docs(tmp_path / 'docs', 4, 'backups')
    with Store.open(tmp_path / 's', embedder=emb) as s: index_paths(s, [tmp_path / 'docs'])
    reader = Store.open(tmp_path / 's', readonly=True)
    q = emb.embed_query('Which page is about backups?')
    before = {c.id: c.text for c in reader.search(q, k=4)}
    assert len(reader.sentence_vectors(list(before))) == 4            # the reader has mapped the first file
    with Store.open(tmp_path / 's', embedder=emb, compact_min_rows=0) as w:
        old = {f.name for f in (tmp_path / 's').glob('sentences-*.f16')}
        for i in range(3): w.remove_source((tmp_path / 'docs' / f'p{i}.md').resolve().as_posix())
        assert w._meta()['sent_file'] not in old                                    # compacted into a new file
        assert old <= {f.name for f in (tmp_path / 's').glob('sentences-*.f16')}     # the old one kept for readers
    hits = reader.search(q, k=4)
    assert [c.display_path for c in hits] == ['docs/p3.md']
    a = trim_chunks_by_sentence(q, hits, store=reader, threshold=0.3)
    b = trim_chunks_by_sentence(q, strip_ids(hits), embedder=emb, threshold=0.3)
    assert trim_agreement(a, b, 0.3)['unexplained'] == 0 and reader.sentence_vectors([hits[0].id])
    reader.close()


def test_a_table_cut_across_chunks_keeps_its_header(tmp_path, emb):
    "A kept row of a table that started in an earlier chunk comes with that table's header, then `[...]`."
    from ragnb.index import Store
    from ragnb.trim import headless_rows
    rows = '\n'.join(f'| pkg{i:02d} | checks item {i} of the installed files with a long description |'
                     for i in range(90))
    (tmp_path / 'docs').mkdir()
    table = f'| package | what it does |\n|---|---|\n{rows}\n'
    (tmp_path / 'docs' / 'pkgs.md').write_text(f'# Packages\n\nThe packages:\n\n{table}', encoding='utf-8')
    with Store.open(tmp_path / 's', embedder=emb) as store:
        index_paths(store, [tmp_path / 'docs'], progress=False)
        chunks = store.get_chunks([r[0] for r in store.db.execute('select id from chunks order by start_char')])
        later = [c for c in chunks if headless_rows([c.text[a:b] for a, b in chunk_sentence_spans(c)])]
        assert len(chunks) >= 3 and later, [c.text[:80] for c in chunks]
        for c in later:
            q = emb.embed_query('pkg80 checks item 80')
            [t] = trim_chunks_by_sentence(q, [c], store=store, policy='structured', query='pkg80', threshold=0.99)
            assert t.body.startswith('| package | what it does |\n|---|---|\n[...]\n'), t.body[:120]
            [f] = trim_chunks_by_sentence(q, [c], store=store, policy='fixed', threshold=0.99)
            assert 'what it does' not in f.text                           # the first rule is unchanged
        [t] = trim_chunks_by_sentence(q, [as_chunk(later[0], id=None)], embedder=emb, policy='structured',
                                      threshold=0.99)
        assert 'what it does' not in t.text                               # without the store, no earlier chunk


def test_lexical_evidence_only_where_it_can_decide_is_exact(tmp_path, emb):
    "Scoring lexical overlap only for sentences it could lift over their cut keeps exactly what full scoring keeps."
    import ragnb.trim as T
    from ragnb.eval import bundled_questions, load_questions
    from ragnb.index import Store
    from ragnb.ingest import default_corpus
    from ragnb.retrieve import retrieve
    with Store.open(tmp_path / 's', embedder=emb) as store:
        index_paths(store, default_corpus(), progress=False)
        qs, _ = load_questions(bundled_questions())
        d = T.store_trim_defaults(store)
        for q in qs:
            chunks, qv = retrieve(store, q.question, 5).chunks, emb.embed_query(q.question)
            fast = T._plans(qv, chunks, None, store)
            T._select_structured(fast, d.structured, d.rank_step, 1, 0, store, q.question, d.lexical_weight)
            full = T._plans(qv, chunks, None, store)
            T._lexical_boost(full, store, q.question, d.lexical_weight)           # every sentence scored first
            T._select_structured(full, d.structured, d.rank_step, 1, 0, store, q.question, 0.0)
            assert [p.kept for p in fast] == [p.kept for p in full], q.question
