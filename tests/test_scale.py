"Sharded stores, built by `index_paths` and on a real local Ray runtime, against one store built from the same files."
import inspect, json, os, shutil, signal, subprocess, sys
from pathlib import Path

import numpy as np
import pytest

from ragnb.embed import runs_in_bf16
from ragnb.eval import bundled_questions, load_questions
from ragnb.index import ScopedStore, Store, text_key
from ragnb.ingest import bundled_data_dir, index_paths, stored_lookup
from ragnb.retrieve import RetrieveOpts, retrieve
from ragnb.shards import ShardedStore, shard_of
from ragnb.stores import STORE_API, StoreAPI, open_store

ray = pytest.importorskip('ray')
# after the skip: ragnb[ray] is an extra
from ragnb.scale import RayShard, index_with_ray, open_on_ray, ray_session, stored_text_keys  # noqa: E402


def placed_corpus(parent:Path, empty_shard:bool, n:int=4) -> Path:
    """The bundled docs and code copied into the first folder `parent/corpus-<i>` whose `n`-shard split does (or
    does not) leave a shard empty. Source keys are absolute paths, so the split depends on where the corpus lives:
    the test picks its case instead of leaving it to the name of pytest's temp folder."""
    src = bundled_data_dir()
    rel = [p.relative_to(src) for part in CORPUS_PARTS for p in sorted((src / part).rglob('*')) if p.is_file()]
    for i in range(100_000):        # 25 files leave one of 4 shards empty in about 1 folder of 300
        root = (parent / f'corpus-{i}').resolve()
        if (len({shard_of((root / r).as_posix(), n) for r in rel}) < n) == empty_shard: break
    for part in CORPUS_PARTS: shutil.copytree(src / part, root / part)
    return root


CORPUS_PARTS = ('docs', 'code')


@pytest.fixture(scope='module')
def corpus(tmp_path_factory):
    "A copy of the bundled docs and code (tests edit it)."
    return placed_corpus(tmp_path_factory.mktemp('corpus'), empty_shard=False)


@pytest.fixture(scope='module')
def single(corpus, tmp_path_factory):
    "One store of the corpus, built by `index_paths`."
    path = tmp_path_factory.mktemp('single') / 'store'
    with Store.open(path) as s: index_paths(s, [corpus / 'docs', corpus / 'code'])
    return path


@pytest.fixture(scope='module')
def local_ray():
    ray_session(num_cpus=2)
    yield ray
    ray.shutdown()


def questions():
    qs, _ = load_questions(bundled_questions())
    return [q.question for q in qs]


def rankings(s, q, k=20):
    """Dense and lexical scores of the top `k` (as hybrid search asks for them), unfiltered, filtered to the Spanish
    docs and (lexical) scoped to them, and the trimmed top-5's chunks, from the open store `s`."""
    qv, es = s.embedder.embed_query(q), {'source': [x for x in s.chunk_sources() if '/docs/es/' in x]}
    dense = [[x for _, x in s.search_ids(qv, k, f)] for f in (None, es)]
    lexical = [[x for _, x in s.search_lexical(q, k, f)] for f in (None, es)]
    lexical.append([x for _, x in s.search_lexical(q, k, scope=es)])                 # BM25 inside a scope (a pin)
    lexical.append([x for _, x in ScopedStore(s, es).search_lexical(q, k, {'source': es['source'][:2]})])
    top = {(c.cite, c.start_char) for c in retrieve(s, q, top_k=5, opts=RetrieveOpts(trim=True)).chunks}
    return dense, lexical, top


# an exact scan and hnswlib's SIMD round differently (1e-5); where the CPU has bf16, the model runs in bf16 by
# default, and a chunk embedded in another batch (a Ray worker's) moves its cosines by up to about 1e-3
ATOL = 2e-3 if runs_in_bf16('auto') else 1e-5


def same_scores(a, b) -> bool:
    "Lists of score lists, equal up to float rounding (`ATOL`)."
    return all(len(x) == len(y) and np.allclose(x, y, atol=ATOL) for x, y in zip(a, b))


def compare_with_single(single, other) -> dict:
    """Over the bundled questions: where dense or lexical scores differ (they must not: equal scores mean the same
    ranking up to ties), and the mean overlap of the trimmed top-5 (ties broken by chunk id may swap a chunk)."""
    out = dict(dense_differ=[], lexical_differ=[], overlap=[])
    with Store.open(single, readonly=True) as one, open_store(other, readonly=True) as two:
        for q in questions():
            (d1, l1, t1), (d2, l2, t2) = rankings(one, q), rankings(two, q)
            if not same_scores(d1, d2): out['dense_differ'].append((q, d1, d2))
            if not same_scores(l1, l2): out['lexical_differ'].append((q, l1, l2))
            out['overlap'].append(len(t1 & t2) / max(len(t1 | t2), 1))
    out['overlap'] = sum(out['overlap']) / len(out['overlap'])
    return out


@pytest.mark.parametrize('empty_shard', [False, True], ids=['all shards used', 'one shard empty'])
def test_a_4_shard_store_from_index_paths_answers_as_one_store(single, tmp_path, empty_shard):
    "Wherever the corpus lives: a split that leaves a shard empty answers as one store too."
    corpus = placed_corpus(tmp_path, empty_shard)
    with open_store(tmp_path / 'four', shards=4) as s:
        rep = index_paths(s, [corpus / 'docs', corpus / 'code'])
        assert (0 in [len(x.sources()) for x in s.shards]) == empty_shard
    with Store.open(single, readonly=True) as one, open_store(tmp_path / 'four', readonly=True) as four:
        assert four.stats()['chunks'] == one.stats()['chunks'] == rep.chunks
        assert four.verify()['problems'] == []
    r = compare_with_single(single, tmp_path / 'four')
    print(f"4 shards against one store: trimmed top-5 overlap {r['overlap']:.3f}")
    assert (r['dense_differ'], r['lexical_differ']) == ([], []) and r['overlap'] >= 0.97, r


@pytest.mark.slow
@pytest.mark.usefixtures('local_ray')
def test_ray_builds_two_shards_that_answer_as_one_store(corpus, single, tmp_path):
    rep = index_with_ray([corpus / 'docs', corpus / 'code'], tmp_path / 'two', shards=2, workers=2)
    with Store.open(single, readonly=True) as one: assert rep.chunks == one.stats()['chunks']
    r = compare_with_single(single, tmp_path / 'two')
    print(f"2 shards built on Ray against one store: trimmed top-5 overlap {r['overlap']:.3f}")
    assert (r['dense_differ'], r['lexical_differ']) == ([], []) and r['overlap'] >= 0.97, r
    with Store.open(single, readonly=True) as one, open_on_ray(tmp_path / 'two') as remote:
        check_protocol(one, remote, remote.shards[0])


def check_protocol(store, sharded, ray_shard):
    """`Store`, `ShardedStore` and `RayShard` against `stores.StoreAPI`: every name is there, each method takes the
    protocol's parameters in its order, and a Ray shard forwards each name to its actor and answers as the shard."""
    assert (type(store), type(sharded), type(ray_shard)) == (Store, ShardedStore, RayShard)
    assert all(isinstance(x, StoreAPI) for x in (store, sharded, ray_shard))
    for name in STORE_API:
        want = getattr(StoreAPI, name, None)
        if not inspect.isfunction(want): continue                     # data and properties: isinstance saw them
        params = [p for p in inspect.signature(want).parameters if p not in ('self', 'kw')]
        for cls in (Store, ShardedStore):
            got = [p for p in inspect.signature(getattr(cls, name)).parameters if p != 'self']
            assert got[:len(params)] == params, (cls.__name__, name, got, params)
    local = Store.open(ray_shard.path, readonly=True)
    try:
        assert ray_shard.stats() == local.stats() and ray_shard.list_sources() == local.list_sources()
        assert ray_shard.term_idf(['rollback']) == local.term_idf(['rollback'])
        assert ray_shard.tree.nodes([1, 2, 3]) == local.tree.nodes([1, 2, 3])       # a part, asked in the actor
    finally: local.close()


@pytest.mark.slow
@pytest.mark.usefixtures('local_ray')
def test_a_worker_killed_mid_run_is_replaced_and_no_chunk_is_duplicated(corpus, single, tmp_path):
    seen = []
    def kill_first_worker(state):
        seen.append(state)
        if len(seen) == 1: os.kill(min(state['workers']), signal.SIGKILL)
    rep = index_with_ray([corpus / 'docs', corpus / 'code'], tmp_path / 'st', shards=2, workers=1, batch_files=1,
                         on_batch=kill_first_worker)
    assert len(seen[-1]['workers']) >= 2, seen[-1]          # the killed actor's batches ran on its replacement
    assert seen[0]['done'] < seen[-1]['files']              # it died with files still to embed
    with Store.open(single, readonly=True) as one, open_store(tmp_path / 'st', readonly=True) as st:
        assert st.stats()['chunks'] == one.stats()['chunks'] == rep.chunks
        assert st.verify()['problems'] == []
        per_source = {r['path']: r['chunks'] for r in st.list_sources()}
        assert per_source == {r['path']: r['chunks'] for r in one.list_sources()}


def _generation(shard_dir):
    with Store.open(shard_dir, readonly=True) as s:
        with s._snapshot(): return s._meta().get('generation')


@pytest.mark.slow
@pytest.mark.usefixtures('local_ray')
def test_reindexing_a_file_touches_only_its_shard(corpus, tmp_path):
    work = tmp_path / 'docs'
    shutil.copytree(corpus / 'docs', work)
    (work / 'site').mkdir()
    for name, text in (('a.html', 'Uno.'), ('b.html', 'Dos.')):      # a theme that gives every page one address
        (work / 'site' / name).write_text(f'<link rel="canonical" href="https://docs.acme.es/"><p>{text}</p>')
    rep = index_with_ray([work], tmp_path / 'st', shards=2, workers=1)
    assert [(u, sorted(Path(p).name for p in ps)) for u, ps in rep.shared_urls] == [('https://docs.acme.es/',
                                                                                       ['a.html', 'b.html'])]
    with open_store(tmp_path / 'st', readonly=True) as s:
        srcs = [{k for k in x.sources() if k.endswith('.md')} for x in s.shards]
    edited = Path(sorted(srcs[0])[0])
    edited.write_text(edited.read_text(encoding='utf-8') + '\n\nUna frase nueva sobre cuotas.\n', encoding='utf-8')
    gone = Path(sorted(srcs[0])[1])
    gone.unlink()
    before = [_generation(tmp_path / 'st' / f'shard-00{i}') for i in range(2)]
    with open_store(tmp_path / 'st', readonly=True) as s: held = set(stored_text_keys(s).tolist())
    rep = index_with_ray([work], tmp_path / 'st', workers=1)
    assert (rep.updated, rep.removed, rep.added) == ([edited.as_posix()], [gone.as_posix()], [])
    assert len(rep.unchanged) == len(list(work.rglob('*.*'))) - 1             # skipped before any embedding
    assert rep.shared_urls == []                                            # no page with an address written
    with open_store(tmp_path / 'st', readonly=True) as s:
        assert rep.chunks == s.sources()[edited.as_posix()].n_chunks
        texts = stored_lookup(s)([edited.as_posix()], [])                      # the edited file's texts now
    assert rep.reused == sum(text_key(h) in held for h in texts) >= rep.chunks - 2   # only new text embedded
    assert rep.sentences_kept >= 1                         # the changed last chunk's former sentences: not embedded
    after = [_generation(tmp_path / 'st' / f'shard-00{i}') for i in range(2)]
    assert after[1] == before[1] and after[0] != before[0]
    with open_store(tmp_path / 'st', readonly=True) as s:
        assert gone.as_posix() not in s.sources() and s.verify()['problems'] == []
        hits = s.search_lexical('cuotas frase nueva', k=1)
        assert s.get_chunks([hits[0][0]])[0].source == edited.as_posix()


def ragnb(*args):
    return subprocess.run([sys.executable, '-m', 'ragnb.cli', *args], capture_output=True, text=True)


@pytest.mark.slow
def test_cli_index_ray_then_ask_and_check(corpus, tmp_path):
    store = tmp_path / 'st'
    r = ragnb('index', str(corpus / 'docs'), '--store', str(store), '--ray', '--shards', '2', '--workers', '1',
              '--quiet')
    assert r.returncode == 0, r.stderr
    assert 'added ' in r.stdout and json.loads((store / 'shards.json').read_text())['shards'] == 2
    r = ragnb('ask', 'how do I roll back a production deployment?', '--store', str(store), '--json')
    assert r.returncode == 0, r.stderr
    assert any('deploy' in c['source'] for c in json.loads(r.stdout)['chunks'])
    r = ragnb('check', '--store', str(store))
    assert r.returncode == 0, r.stdout + r.stderr
    r = ragnb('index', str(corpus / 'docs'), '--store', str(store), '--shards', '3', '--quiet')
    assert r.returncode == 2 and 'a store of 2 shards, not 3' in r.stderr


def test_lexical_candidates_count_terms_as_fts5_does(single):
    "The term frequencies and lengths that sharded BM25 rescoring uses are FTS5's own, row by row."
    from collections import Counter
    with Store.open(single, readonly=True) as s:
        s.db.execute('create virtual table temp.instances using fts5vocab(main, lexical, instance)')
        fts = {}
        for term, doc in s.db.execute('select term, doc from temp.instances'): fts.setdefault(doc, Counter())[term] += 1
        rows = dict(s.db.execute('select rowid, terms from lexical'))
        terms = sorted({t for c in fts.values() for t in c})
        got = {i: (dl, tf) for i, dl, tf in s.lexical.candidates(terms, len(rows))}
    assert set(got) == set(rows) == set(fts)
    assert all(got[i] == (sum(fts[i].values()), dict(fts[i])) for i in rows)
