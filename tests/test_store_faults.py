"""The store under faults: kill -9 during `ragnb index`, readers during a writer, byte flips, crafted index files,
a full disk, a long-running reader; and hostile entries in an indexed folder. bench/fault_injection.py runs the
same cases (tests/faults.py) with the full trial counts."""
import errno, os, sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import faults
from faults import HashEmbedder
from ragnb.cli import _index_outcome

from ragnb.chunking import Chunk
from ragnb.index import Store, StoreDiskFullError, StoreError
from ragnb.ingest import index_paths


@pytest.mark.slow
def test_kill9_at_random_moments_of_ragnb_index(tmp_path):
    "Runs alternate `--mode documental` and `--mode jerarquico`: each switches every file to flat chunks or a tree."
    r = faults.kill_during_index(trials=4, seed=1, workdir=tmp_path, modes=('documental', 'jerarquico'))
    assert r['lost'] == 0 and r['final_state_equal'] and r['tree_leaves'] > 0, r


def test_reader_answers_1000_queries_while_a_writer_commits(tmp_path):
    r = faults.readers_during_writer(queries=1000, workdir=tmp_path, min_reloads=11)
    assert r['tried'] >= 1000 and r['lost'] == 0 and r['reloads'] > 10, r


def test_byte_flips_in_every_store_file_never_crash(tmp_path):
    res = faults.fuzz_store_files(flips=30, workdir=tmp_path)
    for name, r in res.items():
        assert r.get('crashed') == 0 and 'signal_or_exit' not in r, (name, r)
    assert res['index-*.hnsw']['detected'] == 30 and res['manifest.json']['changed'] == 0, res
    assert res['sentences-*.f16']['changed'] == 0 and res['chunks.sqlite']['changed'] == 0, res   # checksums


def test_crafted_index_files_raise_instead_of_segfaulting(tmp_path):
    r = faults.crafted_index_files(workdir=tmp_path)
    assert r['lost'] == 0, r['variants']


def test_disk_full_on_a_real_tmpfs_leaves_the_previous_store(tmp_path):
    r = faults.disk_full(workdir=tmp_path)
    if r.get('skipped'): pytest.skip(r['skipped'])
    assert r['tried'] == 3 and r['lost'] == 0 and not r['final_problems'], r


@pytest.mark.parametrize('where', ['index', 'sentences'])
def test_disk_full_while_writing_a_file_says_so_and_rolls_back(tmp_path, monkeypatch, where):
    import ragnb.index as ix
    with Store.open(tmp_path / 's', embedder=HashEmbedder()) as s:
        s.add_documents([Chunk('[Doc: A]\nOne. Two.', 'a.md', 'documental', 'A', 1, 2, 0, 8, 'v')])
        real_fsync = os.fsync
        def full(fd):
            name = os.readlink(f'/proc/self/fd/{fd}')
            if ('.hnsw' in name) == (where == 'index') and ('.f16' in name) == (where == 'sentences'):
                raise OSError(errno.ENOSPC, 'No space left on device')
            return real_fsync(fd)
        monkeypatch.setattr(ix.os, 'fsync', full)
        with pytest.raises(StoreDiskFullError, match='disk full') as e:
            s.add_documents([Chunk('[Doc: B]\nThree. Four.', 'b.md', 'documental', 'B', 1, 2, 0, 8, 'v')])
        assert '\n' not in str(e.value)
        monkeypatch.setattr(ix.os, 'fsync', real_fsync)
        assert s.stats()['chunks'] == 1 and s.verify()['problems'] == []
        s.add_documents([Chunk('[Doc: B]\nThree. Four.', 'b.md', 'documental', 'B', 1, 2, 0, 8, 'v')])
    with Store.open(tmp_path / 's', readonly=True) as r:
        assert r.stats()['chunks'] == 2 and r.verify()['problems'] == []


def test_a_truncated_index_write_is_caught(tmp_path, monkeypatch):
    "hnswlib writes a short file on a full disk without raising: the size check catches it."
    import ragnb.vectors as ix
    with Store.open(tmp_path / 's', embedder=HashEmbedder()) as s:
        s.add_documents([Chunk('[Doc: A]\nOne. Two.', 'a.md', 'documental', 'A', 1, 2, 0, 8, 'v')])
        real_save = ix._save_index
        def short_write(index, f):
            class Short:
                def __getattr__(self, k): return getattr(index, k)
                def save_index(self, p):
                    index.save_index(p)
                    os.truncate(p, 100)
            return real_save(Short(), f)
        monkeypatch.setattr(ix, '_save_index', short_write)
        with pytest.raises(OSError, match='wrote 100 of'):
            s.add_documents([Chunk('[Doc: B]\nThree.', 'b.md', 'documental', 'B', 1, 1, 0, 6, 'v')])
        monkeypatch.setattr(ix, '_save_index', real_save)
        assert s.stats()['chunks'] == 1 and s.verify()['problems'] == []


def test_reader_memory_and_descriptors_stay_flat_over_2000_queries(tmp_path):
    r = faults.reader_resources(queries=2000, workdir=tmp_path)
    assert r['rss_growth_mb'] < 20 and r['fds_after'] <= r['fds_before'], r
    assert r['store_fds_before'] > 0 and r['store_fds_after'] == r['store_fds_before'], r


def test_a_killed_first_run_and_an_empty_database_give_one_clear_line(tmp_path):
    (tmp_path / 's').mkdir()
    (tmp_path / 's' / 'chunks.sqlite').write_bytes(b'')
    (tmp_path / 's' / 'manifest.json').write_text('{"format_version": 1, "model": "m", "dim": 32, "M": 32, '
                                                  '"ef_construction": 200, "ef": 128}')
    with pytest.raises(StoreError, match='nothing committed yet'):
        Store.open(tmp_path / 's', readonly=True)
    with Store.open(tmp_path / 's', embedder=type('E', (HashEmbedder,), {'name': 'm'})()) as s:
        assert s.stats()['chunks'] == 0                      # a writer creates the tables and goes on


# --- hostile entries in an indexed folder ---------------------------------------------------------------------

@pytest.fixture
def docs(tmp_path):
    d = tmp_path / 'docs'
    (d / 'sub').mkdir(parents=True)
    (d / 'a.md').write_text('# A\n\nAlpha text. More alpha.', encoding='utf-8')
    (d / 'sub' / 'b.md').write_text('# B\n\nBeta text. More beta.', encoding='utf-8')
    return d


def _index(tmp_path, docs, **kw):
    with Store.open(tmp_path / 'store', embedder=HashEmbedder()) as s:
        return index_paths(s, [docs], **kw), s.stats()['chunks']


def test_fifo_device_link_and_outside_link_are_skipped_with_a_reason(tmp_path, docs):
    os.mkfifo(docs / 'pipe.md')
    os.symlink('/dev/zero', docs / 'zero.md')
    outside = tmp_path / 'secret.md'
    outside.write_text('# Secret\n\nDo not index me.', encoding='utf-8')
    os.symlink(outside, docs / 'secret.md')
    rep, n = _index(tmp_path, docs)
    reasons = dict((Path(p).name, why) for p, why in rep.skipped)
    assert 'not a regular file' in reasons['pipe.md'] and 'not a regular file' in reasons['zero.md']
    assert 'leaves the indexed folder' in reasons['secret.md']
    assert sorted(rep.added) == [(docs / f).resolve().as_posix() for f in ('a.md', 'sub/b.md')]


def test_size_cap_and_utf16(tmp_path, docs):
    (docs / 'big.md').write_text('word ' * 1000, encoding='utf-8')
    (docs / 'wide.md').write_text('# Ancho\n\nTexto en UTF-16. Se lee bien.', encoding='utf-16')
    rep, _ = _index(tmp_path, docs, max_bytes=2000)
    assert any('over the 0 MB limit' in why or 'limit' in why for p, why in rep.skipped if p.endswith('big.md'))
    assert (docs / 'wide.md').resolve().as_posix() in rep.added


def test_non_utf8_file_name_is_skipped_not_fatal(tmp_path, docs):
    (docs / os.fsdecode(b'caf\xe9.md')).write_text('# C\n\nCafe.', encoding='utf-8')
    rep, _ = _index(tmp_path, docs)
    assert any('not valid UTF-8' in why for _, why in rep.skipped) and len(rep.added) == 2


@pytest.mark.parametrize('bad', [b'\\', b'\xff\xfe\x00bad', 'dir'])
def test_a_broken_ragnbignore_skips_its_folder_and_says_why(tmp_path, docs, bad):
    _index(tmp_path, docs)
    ign = docs / 'sub' / '.ragnbignore'
    if bad == 'dir': ign.mkdir()
    else: ign.write_bytes(bad)
    rep, n = _index(tmp_path, docs)
    assert any('.ragnbignore' in why for _, why in rep.skipped), rep.skipped
    assert rep.removed == [] and n == 2                     # its files stay indexed
    assert [f for f, _ in rep.refused] == [str(docs / 'sub')] and _index_outcome(rep, [docs]) == 1   # exit 1


def test_an_unreadable_folder_keeps_its_sources(tmp_path, docs, monkeypatch):
    _index(tmp_path, docs)
    real = os.scandir
    def scandir(p='.'):
        if Path(p).name == 'sub': raise PermissionError(errno.EACCES, 'Permission denied', str(p))
        return real(p)
    monkeypatch.setattr(os, 'scandir', scandir)
    rep, n = _index(tmp_path, docs)
    assert rep.removed == [] and n == 2, rep
    assert [why for f, why in rep.skipped if f.endswith('sub')] == [
        'cannot list this folder (Permission denied); what was indexed under it is kept']


def test_missing_path_creates_nothing(tmp_path):
    from ragnb.cli import main
    assert main(['index', str(tmp_path / 'nope'), '--store', str(tmp_path / 'store')]) == 2
    assert not (tmp_path / 'store').exists()


def test_the_index_file_stays_bounded_over_many_updates(tmp_path):
    import ragnb.vectors as vx
    corpus = faults.copy_corpus(tmp_path / 'corpus')
    with Store.open(tmp_path / 's', embedder=HashEmbedder(), compact_min_rows=0) as s:
        index_paths(s, [corpus / 'docs'])
        ids0 = {r[0] for r in s.db.execute('select id from chunks')}
        gen = s._meta()['generation']
        assert index_paths(s, [corpus / 'docs']).counts()['unchanged'] and s._meta()['generation'] == gen  # no-op
        for i in range(25):
            for f in sorted((corpus / 'docs').rglob('*.md')): f.write_text(f.read_text() + f'\nEdit {i}.\n')
            index_paths(s, [corpus / 'docs'])
        index_file = tmp_path / 's' / s._meta()['index_file']
        info = vx.check_hnsw_file(index_file, 32)
        assert info['count'] < 3 * len(ids0) and s.verify()['problems'] == []
        new_ids = {r[0] for r in s.db.execute('select id from chunks')}
        assert min(new_ids) > max(ids0)                      # labels are never reused after a compaction
        assert len(s.search(np.ones(32, np.float32) / 32 ** .5, k=5)) == 5


def test_the_bench_cases_for_hostile_entries_and_hyde_pass(tmp_path):
    for r in (faults.hostile_entries(workdir=tmp_path), faults.hostile_hyde()):
        assert r['lost'] == 0, r


def test_a_pinned_client_asking_with_another_tenants_words_gets_its_own_stores_answers(tmp_path):
    "Issue 32.2: 60 questions of globex's words (and unknown ones) under an acme pin, each answered as acme's store."
    r = faults.pinned_tenant_oracle(questions=60, workdir=tmp_path)
    assert r['lost'] == 0 and r['tried'] == 60, r


def test_a_folder_that_cannot_be_read_keeps_its_sources_and_says_so():
    "Issue 32.1: 644/600 (listable, not searchable), 000 and 311: nothing under it is removed, and each run says why."
    r = faults.unreadable_folders()
    if r.get('skipped'): pytest.skip(r['skipped'])
    assert r['lost'] == 0, r['cases']
    assert all('is kept' in c['said'][0] for c in r['cases'].values())


def test_silent_bit_rot_is_refused_and_a_crafted_vector_reported(tmp_path):
    "Issue 32.3: 4-byte flips with the mtime set back are refused; a 1e30 vector in a re-sealed file is reported."
    r = faults.silent_bit_rot(workdir=tmp_path, flips=3)
    assert r['lost'] == 0, r['failed']


def test_an_index_file_is_hashed_once_after_a_copy_and_not_when_its_commit_left_it(tmp_path, monkeypatch):
    import shutil
    import ragnb.vectors as vx
    faults.build_fake_store(tmp_path / 'a', faults.copy_corpus(tmp_path / 'corpus'))
    hashed, real = [], vx.sha256_file
    monkeypatch.setattr(vx, 'sha256_file', lambda p: hashed.append(p.name) or real(p))
    q = faults.unit(np.random.default_rng(0), 32)
    def hits(path):
        with Store.open(path, readonly=True) as s: return len(s.search_ids(q, 3))
    assert hits(tmp_path / 'a') == 3 and hashed == []                # the file as its commit left it: no hashing
    shutil.copytree(tmp_path / 'a', tmp_path / 'b')                  # same mtimes, new ctimes
    assert hits(tmp_path / 'b') == hits(tmp_path / 'b') == 3 and len(hashed) == 1   # hashed once, then sealed
    assert [p.name for p in (tmp_path / 'b').glob('index-*.hnsw.ok')] == [hashed[0] + '.ok']


def test_check_never_raises_a_false_alarm_while_a_writer_commits(tmp_path):
    "Issue 32.5: each check slowed to 0.3 s after mapping its generation, so several commits land during each."
    r = faults.check_during_writer(runs=12, workdir=tmp_path, slow_s=0.3)
    assert r['lost'] == 0 and r['generations'] > 3, r


def test_a_file_swapped_for_a_fifo_or_growing_while_read_never_hangs_the_run(tmp_path):
    r = faults.entries_that_change_while_read(workdir=tmp_path, wait_s=60)
    assert r['lost'] == 0, r


def test_a_damaged_write_ahead_log_opens_sound_or_is_refused_in_one_line(tmp_path):
    "Issue 32.10: a killed writer's -wal, cut, emptied or flipped: sound, or one StoreError line; nothing else."
    r = faults.wal_damage(workdir=tmp_path, commits=20)
    assert r['lost'] == 0 and r['wal_bytes'] > 0, r['outcomes']


def test_the_mcp_tools_answer_while_a_writer_churns(tmp_path, caplog):
    r = faults.server_during_writer(calls=80, clients=4, workdir=tmp_path)
    assert r['lost'] == 0 and r['generations'] > 1, (r, [m.getMessage()[:300] for m in caplog.records][:3])


def test_a_disk_that_fills_during_the_commit_leaves_the_previous_commit(tmp_path):
    r = faults.disk_full_at_commit(workdir=tmp_path, levels=8)
    if r.get('skipped'): pytest.skip(r['skipped'])
    assert r['lost'] == 0 and r['full'] >= 3, r
