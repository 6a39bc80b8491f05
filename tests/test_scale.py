"Sharded stores, built by `index_paths` and on a real local Ray runtime, against one store built from the same files."
import json, os, shutil, signal, subprocess, sys
from pathlib import Path

import pytest

from ragnb.eval import bundled_questions, load_questions
from ragnb.index import Store
from ragnb.ingest import bundled_data_dir, index_paths
from ragnb.retrieve import RetrieveOpts, retrieve

ray = pytest.importorskip('ray')
from ragnb.scale import index_with_ray, ray_session  # noqa: E402  (after the skip: ragnb[ray] is an extra)


@pytest.fixture(scope='module')
def corpus(tmp_path_factory):
    "A copy of the bundled docs and code (tests edit it)."
    root = tmp_path_factory.mktemp('corpus')
    for part in ('docs', 'code'): shutil.copytree(bundled_data_dir() / part, root / part)
    return root


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


def top_k(path, q, k=5):
    "(source, start, score) of the top `k`, trimmed as a user sees them."
    with Store.open(path, readonly=True) as s:
        r = retrieve(s, q, top_k=k, opts=RetrieveOpts(trim=True))
    return [(c.source, c.start_char, round(c.score, 6), c.text) for c in r.chunks]


def same_up_to_ties(a, b) -> bool:
    "Two rankings agree, except for the order (and, at the cut, the choice) of chunks with equal scores."
    if [x[2] for x in a] != [x[2] for x in b]: return False
    cut = a[-1][2] if a else None
    group = lambda r: sorted(x for x in r if x[2] != cut)
    return group(a) == group(b)


def test_a_4_shard_store_from_index_paths_answers_as_one_store(corpus, single, tmp_path):
    with Store.open(tmp_path / 'four', shards=4) as s:
        rep = index_paths(s, [corpus / 'docs', corpus / 'code'])
        assert [len(x.sources()) > 0 for x in s.shards] == [True] * 4
    with Store.open(single, readonly=True) as one, Store.open(tmp_path / 'four', readonly=True) as four:
        assert four.stats()['chunks'] == one.stats()['chunks'] == rep.chunks
        assert four.verify()['problems'] == []
    qs = questions()
    agree = sum(same_up_to_ties(top_k(single, q), top_k(tmp_path / 'four', q)) for q in qs)
    print(f'4 shards against one store: {agree}/{len(qs)} questions with the same trimmed top-5 (up to ties)')
    assert agree == len(qs)


def test_ray_builds_two_shards_that_answer_as_one_store(corpus, single, local_ray, tmp_path):
    rep = index_with_ray([corpus / 'docs', corpus / 'code'], tmp_path / 'two', shards=2, workers=2)
    with Store.open(single, readonly=True) as one: assert rep.chunks == one.stats()['chunks']
    qs = questions()
    agree = sum(same_up_to_ties(top_k(single, q), top_k(tmp_path / 'two', q)) for q in qs)
    assert agree == len(qs)
    again = index_with_ray([corpus / 'docs', corpus / 'code'], tmp_path / 'two', workers=1)
    assert (again.chunks, again.added, again.updated, len(again.unchanged)) == (0, [], [], len(rep.added))


def test_a_worker_killed_mid_run_is_replaced_and_no_chunk_is_duplicated(corpus, single, local_ray, tmp_path):
    seen = []
    def kill_first_worker(state):
        seen.append(state)
        if len(seen) == 1: os.kill(min(state['workers']), signal.SIGKILL)
    rep = index_with_ray([corpus / 'docs', corpus / 'code'], tmp_path / 'st', shards=2, workers=1, batch_files=1,
                         on_batch=kill_first_worker)
    assert len(seen[-1]['workers']) >= 2, seen[-1]          # the killed actor's batches ran on its replacement
    assert seen[0]['done'] < seen[-1]['files']              # it died with files still to embed
    with Store.open(single, readonly=True) as one, Store.open(tmp_path / 'st', readonly=True) as st:
        assert st.stats()['chunks'] == one.stats()['chunks'] == rep.chunks
        assert st.verify()['problems'] == []
        per_source = {r['path']: r['chunks'] for r in st.list_sources()}
        assert per_source == {r['path']: r['chunks'] for r in one.list_sources()}


def _generation(shard_dir):
    with Store.open(shard_dir, readonly=True) as s:
        with s._snapshot(): return s._meta().get('generation')


def test_reindexing_a_file_touches_only_its_shard(corpus, local_ray, tmp_path):
    work = tmp_path / 'docs'
    shutil.copytree(corpus / 'docs', work)
    index_with_ray([work], tmp_path / 'st', shards=2, workers=1)
    with Store.open(tmp_path / 'st', readonly=True) as s:
        srcs = [set(x.sources()) for x in s.shards]
    edited = Path(sorted(srcs[0])[0])
    edited.write_text(edited.read_text(encoding='utf-8') + '\n\nUna frase nueva sobre cuotas.\n', encoding='utf-8')
    gone = Path(sorted(srcs[0])[1])
    gone.unlink()
    before = [_generation(tmp_path / 'st' / f'shard-00{i}') for i in range(2)]
    rep = index_with_ray([work], tmp_path / 'st', workers=1)
    assert (rep.updated, rep.removed, rep.added) == ([edited.as_posix()], [gone.as_posix()], [])
    after = [_generation(tmp_path / 'st' / f'shard-00{i}') for i in range(2)]
    assert after[1] == before[1] and after[0] != before[0]
    with Store.open(tmp_path / 'st', readonly=True) as s:
        assert gone.as_posix() not in s.sources() and s.verify()['problems'] == []
        hits = s.search_lexical('cuotas frase nueva', k=1)
        assert s.get_chunks([hits[0][0]])[0].source == edited.as_posix()


def ragnb(*args):
    return subprocess.run([sys.executable, '-m', 'ragnb.cli', *args], capture_output=True, text=True)


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
