"""Fault injection against ragnb stores: kill -9 during `ragnb index`, readers during a writer, byte flips in every
store file, crafted hnswlib files, a full disk, and a long-running reader's memory and descriptors.

Each case returns a dict with `tried`, `survived` and `lost` (and details). tests/test_store_faults.py runs them with
few trials; bench/fault_injection.py runs them with the full counts and prints one table.
Run as a script, this file is the writer process of `readers_during_writer`.
"""
import gc, gzip, hashlib, json, os, random, shutil, signal, struct, subprocess, sys, tempfile, time
from pathlib import Path

import numpy as np
from ragnb.ingest import index_paths

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / 'data'


class HashEmbedder:
    "Deterministic pseudo-random unit vectors per text: a model-free embedder for fast store tests."
    name, pooling, query_instruction = 'test/hash-embedder', 'mean', ''

    def __init__(self, dim=32): self.dim = dim

    def embed_documents(self, texts, progress=None):  # noqa: ARG002 (the interface takes it)
        if not texts: return np.zeros((0, self.dim), np.float32)
        seeds = [int(hashlib.sha1(t.encode()).hexdigest()[:8], 16) for t in texts]
        out = np.stack([np.random.default_rng(s).standard_normal(self.dim) for s in seeds])
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)

    def embed_query(self, q): return self.embed_documents([q])[0]


def unit(rng, dim):
    v = rng.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


class VecOnly:
    "An embedder stand-in for stores fed with precomputed 32-d vectors (it embeds nothing)."
    name, dim, pooling, query_instruction = 'test/random-32', 32, 'cls', ''


def unit_rows(rng, n, dim=32):
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def copy_corpus(dst):
    "The bundled docs and code, copied (tests edit them)."
    dst = Path(dst)
    shutil.copytree(DATA / 'docs', dst / 'docs')
    shutil.copytree(DATA / 'code', dst / 'code')
    return dst


def store_state(path):
    """What a store holds, comparable across runs: per source, its hash and its chunk texts; each tree leaf's place
    (issue 36), by its text; plus `verify()`."""
    from ragnb.index import Store
    with Store.open(path, readonly=True) as s:
        rows = s.db.execute('select source, content_hash from sources order by source').fetchall()
        texts = sorted(r[0] for r in s.db.execute('select text from chunks'))
        tree = sorted(s.db.execute('select t.source, t.section, t.block, t.position, c.text from tree t '
                                   'left join chunks c on c.id = t.id').fetchall())
        return dict(sources=rows, texts=texts, tree=tree, problems=s.verify()['problems'])


# --- kill -9 at random moments of `ragnb index` ---------------------------------------------------------------

def _index_cmd(store, corpus, mode=None):
    return [sys.executable, '-m', 'ragnb.cli', 'index', str(corpus / 'docs'), str(corpus / 'code'),
            '--store', str(store), '--quiet', *(['--mode', mode] if mode else [])]


def _edit_corpus(corpus, rng):
    "Change the corpus so that the next run adds, updates and removes sources."
    docs = sorted((corpus / 'docs').rglob('*.md'))
    for f in rng.sample(docs, 3): f.write_text(f.read_text(encoding='utf-8') + '\n\nUna frase nueva. A new line.\n',
                                               encoding='utf-8')
    rng.choice(docs).unlink()
    (corpus / 'docs' / f'new-{rng.randrange(10**6)}.md').write_text('# New\n\nA new page. It has two sentences.\n')


def kill_during_index(trials=20, seed=0, workdir=None, modes=(None,)):
    """Build a store, edit the corpus, then run `ragnb index` and kill -9 it at a random moment, `trials` times.
    After each kill the store must open with no problems; a final uninterrupted run must reach the state of a
    reference store built once from the same files. Trial i runs with `--mode modes[i % len(modes)]` (None: no
    `--mode`, so the store's recorded one). With `('documental', 'jerarquico')` every run switches every file between
    flat chunks and a tree; the first build, the final run and the reference use the last trial's mode."""
    rng = random.Random(seed)
    work = Path(workdir or tempfile.mkdtemp())
    corpus, store = copy_corpus(work / 'corpus'), work / 'store'
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    last = modes[(trials - 1) % len(modes)]
    t0 = time.perf_counter()
    subprocess.run(_index_cmd(store, corpus, last), check=True, capture_output=True, env=env)
    full = time.perf_counter() - t0
    survived, failures, phases = 0, [], []
    for i in range(trials):
        _edit_corpus(corpus, rng)
        at = rng.uniform(0.2, full)
        p = subprocess.Popen(_index_cmd(store, corpus, modes[i % len(modes)]), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env)
        time.sleep(at)
        p.send_signal(signal.SIGKILL)
        p.communicate()
        phases.append(round(at, 2))
        try:
            problems = store_state(store)['problems']
            if problems: failures.append((i, at, problems))
            else: survived += 1
        except Exception as e:
            failures.append((i, at, f'{type(e).__name__}: {e}'))
    r = subprocess.run(_index_cmd(store, corpus, last), capture_output=True, text=True, env=env)
    ref = work / 'reference'
    subprocess.run(_index_cmd(ref, corpus, last), check=True, capture_output=True, env=env)
    final = store_state(store)
    final_same = r.returncode == 0 and final == store_state(ref)
    if not final_same: failures.append(('final', r.stderr[-500:]))
    shutil.rmtree(work, ignore_errors=True)
    return dict(tried=trials, survived=survived, lost=trials - survived, final_state_equal=final_same,
                kill_times_s=phases, full_run_s=round(full, 1), failures=failures, tree_leaves=len(final['tree']))


def kill_during_ray_index(trials=3, seed=0, workdir=None, shards=2):
    """Issue 32.10: `ragnb index --ray --shards 2` killed with kill -9 (its whole process group, Ray's processes too)
    at a random moment after an edit. Each shard commits on its own, so after a kill every shard must be as it was
    before the run or as a clean build of the edited corpus makes it, and sound; a last run must reach the clean
    build. Ray takes seconds to start and each trial builds a reference, so the bench runs it, not the tests."""
    from ragnb.shards import shard_dirs
    rng, work = random.Random(seed), Path(workdir or tempfile.mkdtemp())
    corpus, store = copy_corpus(work / 'corpus'), work / 'store'
    ray_cmd = lambda st: [*_index_cmd(st, corpus), '--ray', '--shards', str(shards), '--workers', '1']
    shard_states = lambda st: [store_state(d) for d in shard_dirs(st, shards)]
    t0 = time.perf_counter()
    subprocess.run(ray_cmd(store), check=True, capture_output=True)
    full, res = time.perf_counter() - t0, []
    for i in range(trials):
        _edit_corpus(corpus, rng)
        ref = work / f'reference-{i}'
        subprocess.run([*_index_cmd(ref, corpus), '--shards', str(shards)], check=True, capture_output=True)
        before, want = shard_states(store), shard_states(ref)
        p = subprocess.Popen(ray_cmd(store), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        at = rng.uniform(1.0, full)
        time.sleep(at)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        try: res.append(all(s in (b, w) and not s['problems'] for s, b, w in zip(shard_states(store), before, want)))
        except Exception as e: res.append(f'{type(e).__name__}: {e}')
    final = subprocess.run(ray_cmd(store), capture_output=True, text=True)
    same = final.returncode == 0 and shard_states(store) == shard_states(work / f'reference-{trials - 1}')
    shutil.rmtree(work, ignore_errors=True)
    ok = sum(r is True for r in res)
    return dict(tried=trials, survived=ok, lost=trials - ok, final_state_equal=same, full_run_s=round(full, 1),
                failures=[r for r in res if r is not True])


# --- readers during a writer ------------------------------------------------------------------------------------

def build_fake_store(path, corpus, dim=32):
    from ragnb.index import Store
    with Store.open(path, embedder=HashEmbedder(dim)) as s: index_paths(s, [corpus / 'docs', corpus / 'code'])


def writer_loop(store, corpus, seconds):
    "Re-index edited files and remove sources in a loop, as fast as it goes, for `seconds`."
    from ragnb.index import Store
    rng, t_end, commits = random.Random(1), time.time() + seconds, 0
    with Store.open(store, embedder=HashEmbedder()) as s:
        while time.time() < t_end:
            _edit_corpus(corpus, rng)
            index_paths(s, [corpus / 'docs', corpus / 'code'])
            srcs = [r[0] for r in s.db.execute('select source from sources')]
            s.remove_source(rng.choice(srcs))
            commits += 2
    print(commits)


def readers_during_writer(queries=1000, workdir=None, min_reloads=0, max_seconds=300):
    """A long-lived read-only Store answers `queries` searches (with filters, chunk reads and sentence vectors) while
    another process re-indexes and removes sources in a loop. Counts exceptions and short or stale results. It goes
    on past `queries` until it has seen `min_reloads` new generations (or `max_seconds` pass), so what it covers does
    not depend on how fast this machine commits."""
    from ragnb.index import Store
    work = Path(workdir or tempfile.mkdtemp())
    corpus, store = copy_corpus(work / 'corpus'), work / 'store'
    build_fake_store(store, corpus)
    w = subprocess.Popen([sys.executable, __file__, 'writer', str(store), str(corpus), '600'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rng, errors, short, reloads = np.random.default_rng(0), [], 0, 0
    reader = Store.open(store, readonly=True)
    time.sleep(1.0)
    i, t_end = -1, time.time() + max_seconds
    while (i + 1 < queries or reloads < min_reloads) and time.time() < t_end:
        i += 1
        try:
            reloads += reader.refresh()
            filters = {'source': [r for r in ['docs/en/faq.md', 'docs/es/faq.md']]} if i % 3 == 0 else None
            hits = reader.search(unit(rng, 32), k=5, filters=filters)
            live = reader.stats()['chunks']
            want = 5 if filters is None else None
            if want and live >= want and len(hits) != want: short += 1
            reader.sentence_vectors([c.id for c in hits])
        except Exception as e:
            errors.append(f'{type(e).__name__}: {e}')
        if w.poll() is not None: break
        time.sleep(0.002)
    w.kill()
    out, err = w.communicate()
    reader.close()
    shutil.rmtree(work, ignore_errors=True)
    n = i + 1
    return dict(tried=n, survived=n - len(errors) - short, lost=len(errors) + short, exceptions=errors[:5],
                short_results=short, reloads=reloads, writer_stderr=err[-300:] if w.returncode not in (0, -9) else '')


def check_during_writer(runs=30, workdir=None, slow_s=0.0, min_generations=4):
    """Issue 32.5: `Store.verify` (what `ragnb check` runs), `runs` times, on a store that another process re-indexes
    and prunes in a loop. The store is sound all along, so any problem reported is a false alarm. `slow_s` makes each
    check spend that long after it has mapped its files, as hashing a large index does, so commits land meanwhile."""
    import ragnb.vectors as ix
    from ragnb.index import Store
    real = ix._vector_problems
    if slow_s: ix._vector_problems = lambda *a, **kw: time.sleep(slow_s) or real(*a, **kw)
    work = Path(workdir or tempfile.mkdtemp())
    corpus, store = copy_corpus(work / 'corpus'), work / 'store'
    build_fake_store(store, corpus)
    w = subprocess.Popen([sys.executable, __file__, 'writer', str(store), str(corpus), '600'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_commits(store, 1)
    alarms, errors, generations, t_end, done = [], [], set(), time.time() + 300, 0
    while (done < runs or len(generations) < min_generations) and time.time() < t_end:   # however fast it commits
        done += 1
        try:
            with Store.open(store, readonly=True) as s:
                v = s.verify()
                generations.add(s.gen.generation)
            if v['problems']: alarms.append(v['problems'][:2])
        except Exception as e: errors.append(f'{type(e).__name__}: {e}')
        if w.poll() is not None: break
    ix._vector_problems = real
    w.kill()
    w.communicate()
    shutil.rmtree(work, ignore_errors=True)
    lost = len(alarms) + len(errors)
    return dict(tried=done, survived=done - lost, lost=lost, alarms=alarms[:3], errors=errors[:3],
                generations=len(generations))


# --- byte flips and crafted files -----------------------------------------------------------------------------

def _probe(store, qs):
    "What a reader returns for a few queries: ids, sources, texts, and which chunks have sentence vectors."
    from ragnb.index import Store
    with Store.open(store, readonly=True) as s:
        out = []
        for q in qs:
            hits = s.search(q, k=5)
            sv = s.sentence_vectors([c.id for c in hits])
            out.append([(c.id, c.source, c.text, c.metadata, c.id in sv and sv[c.id][1].tobytes()) for c in hits])
        return out


def _classify(store, qs, base):
    "'same' results; 'detected' when they differ but `verify` reports the damage; else a silent 'changed'."
    from ragnb.index import Store
    if _probe(store, qs) == base: return 'same'
    with Store.open(store, readonly=True) as s: return 'detected' if s.verify()['problems'] else 'changed'


def fuzz_file_main(store, pattern, flips, seed):
    "Child process: `flips` single-byte flips of the store file matching `pattern`; print the outcome counts."
    from ragnb.index import StoreError
    store, rng = Path(store), random.Random(seed)
    qs = [unit(np.random.default_rng(i), 32) for i in range(3)]
    base = _probe(store, qs)
    target = next(store.glob(pattern)).name
    counts, examples = dict(detected=0, same=0, changed=0, crashed=0), []
    for _ in range(flips):
        d = Path(tempfile.mkdtemp())
        shutil.copytree(store, d / 's')
        f = d / 's' / target
        b = bytearray(f.read_bytes())
        pos = rng.randrange(len(b))
        b[pos] ^= rng.randrange(1, 256)
        f.write_bytes(b)
        try: counts[_classify(d / 's', qs, base)] += 1
        except StoreError: counts['detected'] += 1
        except Exception as e:
            counts['crashed'] += 1
            examples.append(f'byte {pos}: {type(e).__name__}: {e}'[:200])
        shutil.rmtree(d)
    print(json.dumps(dict(counts, examples=examples[:3])))


def fuzz_store_files(flips=200, workdir=None):
    "`flips` byte flips in each store file, each file in its own child process (a segfault would show as a signal)."
    work = Path(workdir or tempfile.mkdtemp())
    corpus, store = copy_corpus(work / 'corpus'), work / 'store'
    build_fake_store(store, corpus)
    res = {}
    for pattern in ('manifest.json', 'chunks.sqlite', 'index-*.hnsw', 'sentences-*.f16'):
        p = subprocess.run([sys.executable, __file__, 'fuzz', str(store), pattern, str(flips), '0'],
                           capture_output=True, text=True)
        if p.returncode != 0: res[pattern] = dict(tried=flips, signal_or_exit=p.returncode, stderr=p.stderr[-300:])
        else: res[pattern] = dict(tried=flips, **json.loads(p.stdout.strip().splitlines()[-1]))
    shutil.rmtree(work, ignore_errors=True)
    return res


def crafted_index_files(workdir=None):
    """Index files crafted so that hnswlib would read out of bounds (links to huge ids, entry point out of range,
    counts, link-list sizes), with the database's size and SHA-256 updated to match. Each is opened in a child
    process; `survived` counts clean `StoreCorruptedError`s."""
    from ragnb.index import Store
    from ragnb.vectors import _HNSW_HEADER
    work = Path(workdir or tempfile.mkdtemp())
    corpus, store = copy_corpus(work / 'corpus'), work / 'store'
    build_fake_store(store, corpus)
    with Store.open(store, readonly=True) as s: meta = s._meta()
    f = store / meta['index_file']
    good = f.read_bytes()
    n, per = _HNSW_HEADER.unpack_from(good)[2], _HNSW_HEADER.unpack_from(good)[3]
    H = _HNSW_HEADER.size
    variants = {'level-0 link to a huge id': (H + 4, '<I', 10**9), 'entry point out of range': (52, '<I', n + 5),
                'count beyond the records': (16, '<Q', n + 1), 'link-list size overruns': (H + n * per, '<I', 2**31),
                'level-0 link count too large': (H, '<H', 65000), 'maxlevel too high': (48, '<i', 40),
                'record size wrong': (24, '<Q', per + 8), 'link to the element count': (H + per + 4, '<I', n)}
    res = {}
    for name, (off, fmt, val) in variants.items():
        b = bytearray(good)
        struct.pack_into(fmt, b, off, val)
        f.write_bytes(b)
        _reseal(store, bytes(b))
        code = ('import sys, numpy as np; from ragnb.index import Store, StoreCorruptedError\n'
                'try:\n with Store.open(sys.argv[1], readonly=True) as s:\n'
                '  s.search(np.ones(32, np.float32) / 32**.5, k=5)\n'
                'except StoreCorruptedError as e: print("detected:", e)')
        p = subprocess.run([sys.executable, '-c', code, str(store)], capture_output=True, text=True)
        ok = p.returncode == 0 and 'detected:' in p.stdout
        res[name] = 'detected' if ok else f'rc={p.returncode} {p.stderr[-200:]}'
    shutil.rmtree(work, ignore_errors=True)
    ok = sum(v == 'detected' for v in res.values())
    return dict(tried=len(res), survived=ok, lost=len(res) - ok, variants=res)


def _reseal(store:Path, data:bytes):
    "Write the database's size and SHA-256 for an index file whose bytes are now `data` (a crafted file)."
    import sqlite3
    db = sqlite3.connect(store / 'chunks.sqlite')
    db.executemany('update meta set value=? where key=?', [(str(len(data)), 'index_size'),
                                                           (hashlib.sha256(data).hexdigest(), 'index_sha256')])
    db.commit()
    db.close()


def silent_bit_rot(workdir=None, flips=5):
    """Issue 32.3: 4 bytes flipped in place in the middle of the index file, with its mtime set back, `flips` times:
    a reader must refuse to serve (it has not verified the file since it was written), then serve again once the
    bytes are back. And a vector set to 1e30 in a re-sealed file: `verify` (`ragnb check`) must report it."""
    from ragnb.index import Store, StoreCorruptedError
    from ragnb.vectors import check_hnsw_file
    work = Path(workdir or tempfile.mkdtemp())
    corpus, store = copy_corpus(work / 'corpus'), work / 'store'
    build_fake_store(store, corpus)
    with Store.open(store, readonly=True) as s: meta = s._meta()
    f, q = store / meta['index_file'], np.ones(32, np.float32) / 32 ** .5
    good, st = f.read_bytes(), f.stat()
    def served():
        try:
            with Store.open(store, readonly=True) as s: return [i for i, _ in s.search_ids(q, 5)]
        except StoreCorruptedError: return None
    want, res = served(), {}
    for k in range(flips):
        off = len(good) * (3 + k) // (3 + flips + 3)
        with open(f, 'r+b') as fh:
            fh.seek(off)
            fh.write(bytes(x ^ 0xFF for x in good[off:off + 4]))
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
        refused = served() is None
        with open(f, 'r+b') as fh:
            fh.seek(off)
            fh.write(good[off:off + 4])
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
        res[f'4 bytes at {off} of {len(good)}, mtime set back'] = refused and served() == want
    vec = np.asarray(check_hnsw_file(f, 32)['vectors'][0]).tobytes()
    b = bytearray(good)
    b[good.find(vec):good.find(vec) + 4] = struct.pack('<f', 1e30)
    f.write_bytes(b)
    _reseal(store, bytes(b))
    with Store.open(store, readonly=True) as s: problems = s.verify()['problems']
    res['a vector set to 1e30, re-sealed'] = any('not finite unit vectors' in p for p in problems)
    shutil.rmtree(work, ignore_errors=True)
    ok = sum(res.values())
    return dict(tried=len(res), survived=ok, lost=len(res) - ok, failed=[k for k, v in res.items() if not v])


# --- a full disk ------------------------------------------------------------------------------------------------

def _mount_tmpfs(d, size):
    d.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={size}', 'tmpfs', str(d)], capture_output=True)
    return r.returncode == 0


def disk_full(workdir=None):
    """A store on a small tmpfs: index more and more until a commit runs out of space. The commit must fail with
    one 'disk full' line, and the store must still open with the previous commit's contents and no problems."""
    from ragnb.index import Store, StoreDiskFullError
    from ragnb.chunking import Chunk
    work = Path(workdir or tempfile.mkdtemp())
    mnt = work / 'tmpfs'
    if not _mount_tmpfs(mnt, '3m'): return dict(tried=0, survived=0, lost=0, skipped='cannot mount a tmpfs (not root?)')
    tried = survived = 0
    msgs = []
    try:
        rng = np.random.default_rng(0)
        with Store.open(mnt / 'store', embedder=HashEmbedder(384)) as s:
            for i in range(400):
                chunks = [Chunk(f'[Doc: D{i}]\n' + ' '.join(f'Sentence {j} of batch {i}, part {k}.' for j in range(30)),
                                f'd{i}-{k}.md', 'documental', f'D{i}', 1, 2, 0, 10, 'v') for k in range(20)]
                before = s.stats()['chunks']
                try: s.add_documents(chunks)
                except StoreDiskFullError as e:
                    tried += 1
                    msgs.append(str(e))
                    ok = '\n' not in str(e) and 'disk full' in str(e) and s.stats()['chunks'] == before
                    with Store.open(mnt / 'store', readonly=True) as r:
                        ok = ok and r.stats()['chunks'] == before and not r.verify()['problems']
                        ok = ok and len(r.search(unit(rng, 384), k=3)) == 3
                    survived += ok
                    if tried == 3: break
        with Store.open(mnt / 'store', readonly=True) as r: final = r.verify()['problems']
    finally:
        subprocess.run(['umount', str(mnt)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    return dict(tried=tried, survived=survived, lost=tried - survived, message=msgs[:1], final_problems=final)


def disk_full_at_commit(workdir=None, levels=16):
    """Issue 32.10: the disk fills during the commit itself. Before each commit a filler leaves `free` bytes on a
    tmpfs, `free` swept from 0 to a little more than the commit writes, so the space runs out at each step of it
    (sentence file, index file, its fsync, SQLite's log). Each failed commit must be one 'disk full' line, with the
    store still at the previous commit and sound; a commit that fits must be sound too."""
    from ragnb.index import Store, StoreDiskFullError
    from ragnb.chunking import Chunk
    work = Path(workdir or tempfile.mkdtemp())
    mnt = work / 'tmpfs'
    if not _mount_tmpfs(mnt, '16m'):
        return dict(tried=0, survived=0, lost=0, skipped='cannot mount a tmpfs (not root?)')
    batch = lambda i: [Chunk(f'[Doc: D{i}]\n' + ' '.join(f'Sentence {j} of batch {i}, part {k}.' for j in range(20)),
                             f'd{i}-{k}.md', 'documental', f'D{i}', 1, 2, 0, 10, 'v') for k in range(10)]
    free = lambda: os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
    outcomes, filler = [], mnt / 'filler'
    try:
        with Store.open(mnt / 'store', embedder=HashEmbedder(384)) as s:
            for i in range(3): s.add_documents(batch(i))
            before = free()
            s.add_documents(batch(3))
            need = before - free()
            for n, left in enumerate(np.linspace(0, need * 1.3, levels).astype(int)):
                filler.write_bytes(b'\0' * max(free() - int(left), 0))
                chunks = s.stats()['chunks']
                try:
                    s.add_documents(batch(10 + n))
                    ok = s.stats()['chunks'] == chunks + 10
                    kind = 'fitted'
                except StoreDiskFullError as e:
                    ok = '\n' not in str(e) and 'disk full' in str(e) and s.stats()['chunks'] == chunks
                    kind = 'disk full'
                except Exception as e: ok, kind = False, f'{type(e).__name__}: {e}'
                filler.unlink()
                with Store.open(mnt / 'store', readonly=True) as r:
                    ok = ok and r.stats()['chunks'] == s.stats()['chunks'] and not r.verify()['problems']
                outcomes.append((int(left), kind, ok))
    finally:
        subprocess.run(['umount', str(mnt)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    ok = sum(o for *_, o in outcomes)
    return dict(tried=len(outcomes), survived=ok, lost=len(outcomes) - ok, commit_bytes=need,
                full=sum(k == 'disk full' for _, k, _ in outcomes), failed=[o for o in outcomes if not o[2]])


def wait_for_commits(store:Path, n:int, max_seconds:float=300) -> int:
    "Wait until the writer has committed `n` generations more than now (or `max_seconds` pass); how many it did."
    import sqlite3
    def generation():
        try:
            with sqlite3.connect(f'file:{store / "chunks.sqlite"}?mode=ro', uri=True, timeout=5) as db:
                return int(db.execute("select value from meta where key = 'generation'").fetchone()[0])
        except (sqlite3.Error, TypeError): return 0
    g0, t_end = generation(), time.time() + max_seconds
    while generation() < g0 + n and time.time() < t_end: time.sleep(0.05)
    return generation() - g0


def wal_damage(workdir=None, commits=20):
    """Issue 32.10: a writer is killed after `commits` commits, leaving SQLite's `-wal` log; copies of the store get
    that log truncated, emptied or flipped. Each copy must, for a reader and then a writer, either open sound (verify
    clean, searches answer) or refuse with one `StoreError` line: never another exception, never a wrong store."""
    from ragnb.index import Store, StoreError
    work = Path(workdir or tempfile.mkdtemp())
    corpus, store = copy_corpus(work / 'corpus'), work / 'store'
    build_fake_store(store, corpus)
    w = subprocess.Popen([sys.executable, __file__, 'writer', str(store), str(corpus), '600'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_commits(store, commits)                 # killed while it churns, however fast this machine is
    w.kill()
    w.communicate()
    wal = store / 'chunks.sqlite-wal'
    size = wal.stat().st_size if wal.exists() else 0
    def flip(b):
        mid = len(b) // 2
        return b[:mid] + bytes(x ^ 0x5A for x in b[mid:mid + 64]) + b[mid + 64:]
    damage = {'cut to half': lambda b: b[:len(b) // 2], 'cut mid-frame': lambda b: b[:max(len(b) - 1000, 0)],
              'emptied': lambda _b: b'', '64 bytes flipped mid-log': flip,
              'header overwritten': lambda b: bytes(32) + b[32:]}
    res, q = {}, unit(np.random.default_rng(0), 32)
    for name, hurt in damage.items():
        copy = work / f'copy-{len(res)}'
        shutil.copytree(store, copy)
        if (copy / 'chunks.sqlite-wal').exists():
            (copy / 'chunks.sqlite-wal').write_bytes(hurt((copy / 'chunks.sqlite-wal').read_bytes()))
        outcome = []
        for kw in (dict(readonly=True), dict(embedder=HashEmbedder())):
            try:
                with Store.open(copy, **kw) as st:
                    sound = not st.verify()['problems'] and len(st.search(q, k=3)) == 3
                    outcome.append('sound' if sound else 'PROBLEMS')
            except StoreError as e: outcome.append('refused' if '\n' not in str(e) else 'MULTILINE')
            except Exception as e: outcome.append(f'{type(e).__name__}: {str(e)[:80]}')
        res[name] = outcome
    shutil.rmtree(work, ignore_errors=True)
    ok = [k for k, v in res.items() if all(o in ('sound', 'refused') for o in v)]
    return dict(tried=len(res), survived=len(ok), lost=len(res) - len(ok), wal_bytes=size, outcomes=res)


def server_during_writer(calls=200, clients=4, workdir=None, min_generations=3):
    """Issue 32.10: the MCP tools, called by `clients` concurrent clients through the SDK's own client, over a store
    that another process re-indexes and prunes in a loop. Every call must answer without an error, with `k` chunks
    when the store holds that many, and the server must see new generations without a restart."""
    import anyio
    from mcp.client.client import Client
    from ragnb.index import Store
    from ragnb.serve import RetrievalService, build_mcp_server
    work = Path(workdir or tempfile.mkdtemp())
    corpus, store = copy_corpus(work / 'corpus'), work / 'store'
    build_fake_store(store, corpus)
    w = subprocess.Popen([sys.executable, __file__, 'writer', str(store), str(corpus), '600'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    s = Store.open(store, embedder=HashEmbedder(), readonly=True)
    server, errors, short, generations, done = build_mcp_server(RetrievalService(s)), [], 0, set(), [0]
    questions = ['deploy rollback', 'logs retention', 'api keys', 'tenant isolation', 'backups']
    async def client(n):
        nonlocal short
        async with Client(server) as c:
            i, t_end = -1, time.time() + 300
            while (i + 1 < n or len(generations) < min_generations) and time.time() < t_end:   # however fast
                i += 1
                tool, args = [('ask', {'question': questions[i % 5], 'k': 3}), ('sources', {}),
                              ('ask', {'question': questions[i % 5], 'mode': 'lexical', 'trim': True})][i % 3]
                r = await c.call_tool(tool, args)
                done[0] += 1
                if r.is_error: errors.append(r.content[0].text[:120])
                elif args.get('k') == 3 and len(r.structured_content['chunks']) != 3: short += 1   # untrimmed
                generations.add(s.gen.generation)
    async def run():
        async with anyio.create_task_group() as tg:
            for _ in range(clients): tg.start_soon(client, calls // clients)
    wait_for_commits(store, 1)
    try: anyio.run(run)
    finally:
        w.kill()
        w.communicate()
        s.close()
        shutil.rmtree(work, ignore_errors=True)
    lost, tried = len(errors) + short, max(calls, done[0])
    return dict(tried=tried, survived=tried - lost, lost=lost, errors=errors[:3], short=short,
                generations=len(generations))


# --- memory and descriptors -----------------------------------------------------------------------------------

def _rss_mb():
    for line in Path('/proc/self/status').read_text().splitlines():
        if line.startswith('VmRSS:'): return int(line.split()[1]) / 1024


def _fds(under=None):
    "Open descriptors of this process; with `under`, only those on files below that folder."
    fds = []
    for fd in os.listdir('/proc/self/fd'):
        try: fds.append(os.readlink(f'/proc/self/fd/{fd}'))
        except OSError: pass                          # closed while listing (the listing's own fd)
    root = str(Path(under).resolve()) if under else None
    return len([t for t in fds if root is None or t.startswith(root)])


def reader_resources(queries=2000, workdir=None):
    "One reader answers `queries` searches, filtered searches and sentence-vector reads: RSS growth and open fds."
    from ragnb.index import Store
    work = Path(workdir or tempfile.mkdtemp())
    corpus, store = copy_corpus(work / 'corpus'), work / 'store'
    build_fake_store(store, corpus)
    rng = np.random.default_rng(0)
    with Store.open(store, readonly=True) as r:
        def one(i):
            hits = r.search(unit(rng, 32), k=5, filters={'source': 'docs/en/faq.md'} if i % 2 else None)
            r.sentence_vectors([c.id for c in hits])
        for i in range(200): one(i)                   # warm up caches and the allocator
        gc.collect()                                  # objects left by earlier tests may close their fds meanwhile
        rss0, fds0, store_fds0 = _rss_mb(), _fds(), _fds(under=store)
        for i in range(queries): one(i)
        gc.collect()
        rss1, fds1, store_fds1 = _rss_mb(), _fds(), _fds(under=store)
    shutil.rmtree(work, ignore_errors=True)
    ok = rss1 - rss0 < 20 and fds1 <= fds0 and store_fds1 == store_fds0
    return dict(tried=queries, survived=queries if ok else 0, lost=0 if ok else queries,
                rss_growth_mb=round(rss1 - rss0, 2), fds_before=fds0, fds_after=fds1,
                store_fds_before=store_fds0, store_fds_after=store_fds1)


# --- folders that cannot be read, as an unprivileged user ----------------------------------------------------

NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']


def index_main(store, docs):
    "`index_paths` with the model-free embedder, printing the report as JSON: the process `unreadable_folders` runs."
    from ragnb.index import Store
    with Store.open(store, embedder=HashEmbedder()) as s:
        rep = index_paths(s, [Path(docs)])
        print(json.dumps(dict(removed=rep.removed, skipped=rep.skipped, sources=sorted(s.sources()))))


def reachable_by_all(folder) -> bool:
    "Whether any user may pass through `folder` and each folder above it (their `x` bit for others)."
    p = Path(folder).resolve()
    return all(q.stat().st_mode & 0o001 for q in (p, *p.parents))


def unreadable_folders(workdir=None):
    """Issue 32.1, for real: as `nobody` (root reads through any mode), index `docs/sub/one.md`, make `sub` listable
    but not searchable (644 and 600), then not listable (000 and 311), and index again each time. Each run must
    remove nothing under `sub` and say what it could not read. Its files go in `workdir`, else the temporary folder,
    else `/tmp`: the first that `nobody` can reach (`.ci/run`'s `TMPDIR` is 1777; one made by `mktemp -d` is 700)."""
    if os.geteuid() != 0 or not shutil.which('setpriv'):
        return dict(tried=0, survived=0, lost=0, skipped='needs root and setpriv to run as nobody')
    base = next((d for d in (workdir, tempfile.gettempdir(), '/tmp') if d and reachable_by_all(d)), None)
    if base is None: return dict(tried=0, survived=0, lost=0, skipped='no temporary folder that nobody can reach')
    work = Path(tempfile.mkdtemp(dir=base))
    docs, store = work / 'docs', work / 'store'
    (docs / 'sub').mkdir(parents=True)
    (docs / 'top.md').write_text('# Top\n\nThe top page.', encoding='utf-8')
    (docs / 'sub' / 'one.md').write_text('# One\n\nA page in a folder that will become unreadable.', encoding='utf-8')
    for p in (work, *work.rglob('*')): os.chown(p, 65534, 65534)
    os.chmod(work, 0o755)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent), HOME=str(work))
    run = lambda: json.loads(subprocess.run([*NOBODY, sys.executable, __file__, 'index', str(store), str(docs)],
                                            capture_output=True, text=True, env=env, check=True).stdout)
    one = (docs / 'sub' / 'one.md').resolve().as_posix()
    first, cases = run(), {}
    for mode in (0o644, 0o600, 0o000, 0o311):
        os.chmod(docs / 'sub', mode)
        r = run()
        said = [why for f, why in r['skipped'] if f.startswith(str(docs / 'sub'))]
        cases[f'{mode:03o}'] = dict(kept=one in r['sources'] and not r['removed'], said=said)
        os.chmod(docs / 'sub', 0o755)
    shutil.rmtree(work, ignore_errors=True)
    ok = [m for m, c in cases.items() if c['kept'] and c['said']]
    return dict(tried=len(cases), survived=len(ok), lost=len(cases) - len(ok), indexed_first=first['sources'],
                cases=cases)


if __name__ == '__main__':
    if sys.argv[1] == 'writer': writer_loop(Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4]))
    elif sys.argv[1] == 'fuzz': fuzz_file_main(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == 'index': index_main(sys.argv[2], sys.argv[3])


# --- hostile entries in an indexed folder, and a hostile HyDE endpoint ----------------------------------------

def pinned_tenant_oracle(questions=200, seed=0, workdir=None):
    """Issue 32.2: a client pinned to tenant acme asks questions made of words from tenant globex's files (and a few
    found nowhere): each whole answer (lexical and hybrid, trimmed or not) must equal the answer of a store holding
    only acme's files, so nothing in it tells whether globex's files hold those words. `lost`: answers that differ."""
    import re
    from ragnb.index import Store
    from ragnb.ingest import bundled_data_dir, index_paths
    from ragnb.serve import RetrievalService
    work = Path(workdir or tempfile.mkdtemp())
    docs = bundled_data_dir() / 'docs'
    with Store.open(work / 'shared', embedder=HashEmbedder()) as w:
        index_paths(w, [docs / 'es'], metadata={'tenant': 'acme'})
        index_paths(w, [docs / 'en'], metadata={'tenant': 'globex'})
    with Store.open(work / 'own', embedder=HashEmbedder()) as w:
        index_paths(w, [docs / 'es'], metadata={'tenant': 'acme'})
    theirs = sorted({w.lower() for f in (docs / 'en').glob('*.md') for w in re.findall(r'[A-Za-z]{4,}', f.read_text())})
    rng = random.Random(seed)
    lost, tried = [], 0
    with Store.open(work / 'shared', readonly=True, embedder=HashEmbedder()) as shared, \
            Store.open(work / 'own', readonly=True, embedder=HashEmbedder()) as own:
        pinned, alone = RetrievalService(shared, pins={'tenant': ['acme']}), RetrievalService(own)
        for i in range(questions):
            words = rng.sample(theirs, 2) + ([f'zzq{i}'] if i % 5 == 0 else []) + [rng.choice(['rollback', 'logs'])]
            q = ' '.join(words)
            mode, trim = ('lexical', 'hybrid')[i % 2], bool(i // 2 % 2)
            tried += 1
            a = pinned.ask(q, k=5, mode=mode, trim=trim)
            b = alone.ask(q, k=5, mode=mode, trim=trim)
            same = [(c['cite'], c['text'], round(c['score'], 6)) for c in a['chunks']] == \
                   [(c['cite'], c['text'], round(c['score'], 6)) for c in b['chunks']]
            if not same: lost.append(q)
    shutil.rmtree(work, ignore_errors=True)
    return dict(tried=tried, survived=tried - len(lost), lost=len(lost), differ=lost[:5], words=len(theirs))


def pdf_listing_one_page(n:int) -> bytes:
    "A valid PDF whose page tree lists one small page object `n` times (issue 32.7: 800 KB, 100,000 pages)."
    objs = ['<< /Type /Catalog /Pages 2 0 R >>', '<< /Type /Pages /Kids [' + '3 0 R ' * n + f'] /Count {n} >>',
            '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R '
            '/Resources << /Font << /F1 5 0 R >> >> >>', None, '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>']
    stream = b'BT /F1 12 Tf 72 720 Td (The same page, listed again and again.) Tj ET'
    out, offsets = bytearray(b'%PDF-1.4\n'), []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        body = f'<< /Length {len(stream)} >>\nstream\n'.encode() + stream + b'\nendstream' if o is None else o.encode()
        out += f'{i} 0 obj\n'.encode() + body + b'\nendobj\n'
    xref = len(out)
    out += f'xref\n0 {len(objs) + 1}\n0000000000 65535 f \n'.encode()
    out += b''.join(f'{o:010d} 00000 n \n'.encode() for o in offsets)
    out += f'trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n'.encode()
    return bytes(out)


def hostile_entries(workdir=None):
    """One `index_paths` run over a folder holding, besides two good files, each kind of bad entry. `survived`
    counts entries that were reported (or, for UTF-16, read) while the run went on and indexed the good files."""
    import threading
    from ragnb.index import Store
    work = Path(workdir or tempfile.mkdtemp())
    d = work / 'docs'
    (d / 'sub').mkdir(parents=True)
    (d / 'good.md').write_text('# Good\n\nA good file. It is indexed.', encoding='utf-8')
    (d / 'sub' / 'good2.md').write_text('# Good too\n\nAnother good file.', encoding='utf-8')
    (work / 'outside.md').write_text('# Secret\n\nOutside the folder.', encoding='utf-8')
    entries = {'fifo pipe.md': lambda: os.mkfifo(d / 'pipe.md'),
               'link to /dev/zero': lambda: os.symlink('/dev/zero', d / 'zero.md'),
               'link out of the folder': lambda: os.symlink(work / 'outside.md', d / 'outside.md'),
               'non-UTF-8 file name': lambda: (d / os.fsdecode(b'caf\xe9.md')).write_text('# C\n\nx.'),
               'Shift-JIS file': lambda: (d / 'sjis.md').write_bytes('ファイルです。'.encode('shift_jis')),
               'Latin-1 file (read)': lambda: (d / 'latin1.md').write_bytes('Canción.'.encode('latin-1')),
               'UTF-16 file (read)': lambda: (d / 'wide.md').write_text('# Ancho\n\nUTF-16.', encoding='utf-16'),
               'file over the size cap': lambda: (d / 'big.md').write_text('word ' * 300_000),
               'bad .ragnbignore (stray \\)': lambda: (d / 'sub' / '.ragnbignore').write_bytes(b'\\'),
               'binary by extension': lambda: (d / 'logo.png').write_bytes(b'\x89PNG\r\n\x1a\n' + bytes(99)),
               'binary by content': lambda: (d / 'blob.xyz').write_bytes(b'\x00\x01\x02'),
               'PDF listing one page 100,000 times':
                   lambda: (d / 'pages.pdf').write_bytes(pdf_listing_one_page(100_000)),
               'PDF listing one page 1,000 times (under the cap)':
                   lambda: (d / 'loop.pdf').write_bytes(pdf_listing_one_page(1_000)),
               'an SVG drawing': lambda: (d / 'net.svg').write_text('<?xml version="1.0"?><svg><text>x</text></svg>')}
    for make in entries.values(): make()
    out = {}
    def run():
        with Store.open(work / 'store', embedder=HashEmbedder()) as s:
            out['rep'] = index_paths(s, [d], max_bytes=1_000_000)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive(): return dict(tried=len(entries), survived=0, lost=len(entries), note='the run hung')
    rep = out['rep']
    said = ' '.join(f'{p} {why}' for p, why in rep.skipped) + ' '.join(p for p, _ in rep.binary)
    checks = {'fifo pipe.md': 'pipe.md', 'link to /dev/zero': 'zero.md', 'link out of the folder': 'outside.md',
              'non-UTF-8 file name': 'not valid UTF-8; rename', 'Shift-JIS file': 'sjis.md: not valid UTF-8',
              'file over the size cap': 'big.md', 'bad .ragnbignore (stray \\)': '.ragnbignore',
              'binary by extension': 'logo.png', 'binary by content': 'blob.xyz',
              'PDF listing one page 100,000 times': 'pages.pdf: 100000 pages, over the 5000-page cap',
              'PDF listing one page 1,000 times (under the cap)': 'loop.pdf: 1000 pages, of which 999 repeat',
              'an SVG drawing': 'net.svg'}
    res = {k: (v in said) for k, v in checks.items()}
    res['UTF-16 file (read)'] = any(s.endswith('/docs/wide.md') for s in rep.added)
    res['Latin-1 file (read)'] = any(s.endswith('/docs/latin1.md') for s in rep.added) and rep.recoded == [
        str(d / 'latin1.md')]
    good = any(s.endswith('/docs/good.md') for s in rep.added)
    shutil.rmtree(work, ignore_errors=True)
    ok = sum(res.values()) if good else 0
    return dict(tried=len(entries), survived=ok, lost=len(entries) - ok, failed=[k for k, v in res.items() if not v])


def entries_that_change_while_read(workdir=None, wait_s=30):
    """Issue 32.10: a file swapped for a FIFO right after the listing checked it (the worst moment), and a file that
    keeps growing while the run reads it. The run must finish, skip the FIFO with its reason, index the rest."""
    import threading
    from ragnb import ingest
    from ragnb.index import Store
    work = Path(workdir or tempfile.mkdtemp())
    d = work / 'docs'
    d.mkdir(parents=True)
    (d / 'good.md').write_text('# Good\n\nA good file.', encoding='utf-8')
    (d / 'swap.md').write_text('# Swap\n\nBecomes a FIFO.', encoding='utf-8')
    (d / 'grow.md').write_text('# Grow\n\n' + 'A line that repeats.\n' * 1000, encoding='utf-8')
    checked = ingest.unreadable_reason
    def swap_after_check(f, root, *a):
        why = checked(f, root, *a)
        if f.name == 'swap.md' and why is None:
            f.unlink()
            os.mkfifo(f)
        return why
    stop, out = threading.Event(), {}
    def grow():                                            # about 10 MB/s, as long as the run lasts
        with open(d / 'grow.md', 'a', encoding='utf-8') as fh:
            while not stop.wait(0.005):
                fh.write('More text appended while the run reads the file.\n' * 1000)
                fh.flush()
    def run():
        with Store.open(work / 'store', embedder=HashEmbedder()) as s:
            out['rep'] = index_paths(s, [d], max_bytes=2_000_000)
    ingest.unreadable_reason = swap_after_check
    grower, runner = threading.Thread(target=grow, daemon=True), threading.Thread(target=run, daemon=True)
    try:
        grower.start()
        runner.start()
        runner.join(wait_s)
    finally:
        ingest.unreadable_reason = checked
        stop.set()
    res = {'swapped for a FIFO after the listing': False, 'growing while read': False}
    if not runner.is_alive():
        rep = out['rep']
        res['swapped for a FIFO after the listing'] = any(
            p.endswith('swap.md') and 'not a regular file' in why for p, why in rep.skipped)
        res['growing while read'] = any(s.endswith('/grow.md') for s in rep.added) or any(   # read, or refused
            p.endswith('grow.md') and 'limit (it grew after it was listed)' in why for p, why in rep.skipped)
    shutil.rmtree(work, ignore_errors=True)
    ok = sum(res.values())
    return dict(tried=len(res), survived=ok, lost=len(res) - ok, failed=[k for k, v in res.items() if not v],
                hung=runner.is_alive())


def hostile_hyde():
    "A loopback Gemini that redirects off-origin, drips, answers 2 MB, or echoes the key in an error."
    sys.path.insert(0, str(Path(__file__).parent))
    import threading
    from test_hyde import FakeGemini, answer, KEY
    from ragnb.hyde import HydeError, HydeTimeout, generate_hyde
    srv, other = FakeGemini(), FakeGemini()
    for s in (srv, other): threading.Thread(target=s.serve_forever, daemon=True).start()
    os.environ['GEMINI_API_KEY'] = KEY
    cases = {}
    def case(name, setup, want, check=lambda _e: True, timeout_s=5):
        srv.drip, srv.chunked = 0.0, 0
        setup()
        t = time.perf_counter()
        try:
            generate_hyde('how to rotate keys', base_url=srv.url, timeout_s=timeout_s)
            cases[name] = False
        except want as e:
            cases[name] = KEY not in str(e) and e.__context__ is None and check(e) and time.perf_counter() - t < 10
    case('cross-origin redirect', lambda: setattr(srv, 'reply', lambda _n: (307, {}, {'Location': other.url + '/x'})),
         HydeError, lambda _e: not other.requests)
    case('1 byte every 0.5 s', lambda: (setattr(srv, 'drip', 0.5),
                                         setattr(srv, 'reply', lambda _n: answer('{"passage": "' + 'x' * 40 + '"}'))),
         HydeTimeout, timeout_s=1.5)
    case('2 MB answer', lambda: setattr(srv, 'reply', lambda _n: answer('{"passage": "' + 'y' * 2_000_000 + '"}')),
         HydeError)
    big = answer('{"passage": "' + 'z' * 5_000_000 + '"}')
    case('5 MB chunked, no length', lambda: (setattr(srv, 'chunked', 65536), setattr(srv, 'reply', lambda _n: big)),
         HydeError)
    bomb = gzip.compress(json.dumps(big[1]).encode(), 9)
    gzipped = lambda _n: (200, bomb, {'Content-Encoding': 'gzip'})
    case('gzip bomb (5 MB from 5 KB)', lambda: setattr(srv, 'reply', gzipped), HydeError)
    case('error that echoes the key', lambda: setattr(srv, 'reply', lambda _n: (500, {'error': {'code': 500,
         'message': f'bad key {KEY}', 'status': 'X'}})), HydeError)
    del os.environ['GEMINI_API_KEY']
    for s in (srv, other):
        s.shutdown()
        s.server_close()
    ok = sum(cases.values())
    return dict(tried=len(cases), survived=ok, lost=len(cases) - ok, failed=[k for k, v in cases.items() if not v])
