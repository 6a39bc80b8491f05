"""Numbered migrations (`ragnb.index.MIGRATIONS`): stores written by older code open, migrate and answer the same.

Two stores are kept as fixtures (`tests/fixtures/stores/`, made by `make_store.py` with the code of the commit each
is named after): 451ecd1's has none of the migrations, ac25a57's has all of them but no recorded version. For each
migration, a store is also taken back to the version before it."""
import shutil, sqlite3
from pathlib import Path

import numpy as np
import pytest

from ragnb import open_store, retrieve
from ragnb.index import _CHUNK_COLS, MIGRATIONS, SCHEMA_VERSION, _columns, _row_crc, schema_version

FIXTURES = Path(__file__).parent / 'fixtures' / 'stores'
QUESTIONS = ['How do I roll back a release?', '¿Cómo vuelvo a la versión anterior?', 'Which regions does Faro run in?']


def user_version(path:Path) -> int:
    with sqlite3.connect(path / 'chunks.sqlite') as db: return db.execute('pragma user_version').fetchone()[0]


def answers(path:Path) -> dict:
    "Per question: the dense hits (id, cosine) and, where the store has a lexical index, hybrid's ranked sources."
    out = {}
    with open_store(path, readonly=True) as s:
        for q in QUESTIONS:
            dense = [(c.id, c.score) for c in s.search(s.embedder.embed_query(q), k=4)]
            hybrid = ([c.source for c in retrieve(s, q, top_k=3).chunks] if s.migrations.has('lexical index') else None)
            out[q] = (dense, hybrid)
    return out


def same_dense(a:dict, b:dict) -> bool:
    return all([i for i, _ in a[q][0]] == [i for i, _ in b[q][0]] and
               np.allclose([x for _, x in a[q][0]], [x for _, x in b[q][0]], atol=1e-6) for q in QUESTIONS)


@pytest.mark.parametrize('commit, before', [('451ecd1', 0), ('ac25a57', 6)])
def test_a_store_written_by_older_code_opens_migrates_and_answers_the_same(tmp_path, commit, before):
    path = tmp_path / commit
    shutil.copytree(FIXTURES / commit, path)
    assert user_version(path) == 0
    with sqlite3.connect(path / 'chunks.sqlite') as db: assert schema_version(db) == before
    old = answers(path)                                              # a reader reads it as it is
    with open_store(path) as s: assert s.schema == SCHEMA_VERSION    # a writer migrates it
    assert user_version(path) == SCHEMA_VERSION
    new = answers(path)
    with open_store(path, readonly=True) as s: assert s.verify()['problems'] == []
    assert same_dense(old, new)
    if old[QUESTIONS[0]][1] is not None: assert {q: v[1] for q, v in old.items()} == {q: v[1] for q, v in new.items()}
    assert all(new[q][1] for q in QUESTIONS)                         # 451ecd1's store searches lexically now
    assert new[QUESTIONS[0]][1][0].endswith('deployment.md')


UNDO = {   # migration number: SQL that takes a database back to the version before it
    1: ['alter table sentences drop column crc'],
    2: ['alter table chunks drop column row_crc'],
    3: ['drop index if exists chunks_shown', 'alter table chunks drop column display'],
    4: ['drop table lexical', "delete from meta where key = 'lexical_version'"],
    5: ['alter table chunks drop column location'],
    6: ['drop table chunk_meta', 'drop table tombstones', "delete from meta where key = 'filter_index'"],
    7: ['drop table tree'],
    8: ["delete from meta where key = 'line_places'"],
}


@pytest.fixture(scope='module')
def current(tmp_path_factory):
    "ac25a57's store migrated to the current version, and its answers."
    path = tmp_path_factory.mktemp('current') / 'store'
    shutil.copytree(FIXTURES / 'ac25a57', path)
    with open_store(path): pass
    return path, answers(path)


def test_every_migration_is_undone_by_the_table(): assert sorted(UNDO) == [m.number for m in MIGRATIONS]


@pytest.mark.parametrize('m', MIGRATIONS, ids=lambda m: f'{m.number}-{m.name}')
def test_each_migration_brings_a_store_of_the_version_before_it_up(current, tmp_path, m):
    path = tmp_path / 'store'
    shutil.copytree(current[0], path)
    with sqlite3.connect(path / 'chunks.sqlite') as db:
        for later in reversed(MIGRATIONS[m.number - 1:]):                # back to version m - 1
            for sql in UNDO[later.number]: db.execute(sql)
        if 'row_crc' in _columns(db, 'chunks') and 'display' not in _columns(db, 'chunks'):   # as that code wrote it
            rows = db.execute(f'select {_CHUNK_COLS} from chunks').fetchall()
            db.executemany('update chunks set row_crc = ? where id = ?', [(_row_crc(r), r[0]) for r in rows])
        db.execute(f'pragma user_version = {m.number - 1}')
    with sqlite3.connect(path / 'chunks.sqlite') as db: assert not m.present(db) and schema_version(db) == m.number - 1
    with open_store(path, readonly=True) as s: assert s.schema == m.number - 1 and s.search(
        s.embedder.embed_query(QUESTIONS[0]), k=1)                      # a reader reads the older version
    with open_store(path) as s: pass                                     # a writer migrates it
    with sqlite3.connect(path / 'chunks.sqlite') as db:
        assert m.present(db) and schema_version(db) == SCHEMA_VERSION == user_version(path)
    assert same_dense(answers(path), current[1])
    assert {q: v[1] for q, v in answers(path).items()} == {q: v[1] for q, v in current[1].items()}
    with open_store(path, readonly=True) as s: assert s.verify()['problems'] == []


def test_an_older_store_keeps_making_the_sentence_vectors_it_holds(tmp_path):
    "A store older than `sentence_pass` keeps making one vector per sentence: it never mixes in late ones."
    from ragnb.chunking import chunk_text
    from ragnb.index import sentence_pass
    from ragnb.sentence_file import chunk_sentence_spans
    path = tmp_path / 'old'
    shutil.copytree(FIXTURES / 'ac25a57', path)
    text = '# Quotas\n\nEach team may run twelve workers. A thirteenth waits in the queue until one of them ends.\n'
    with open_store(path) as s:
        assert 'sentence_pass' not in s.manifest and sentence_pass(s.manifest) == 'sentence'
        c = chunk_text(text, 'quotas.md', source='quotas.md')[0]
        i = s.add_documents([c])[0]
        stored = s.sentence_vectors([i])[str(i)][1].astype(np.float32)
        spans = chunk_sentence_spans(c)
        own = s.embedder.embed_documents([c.text[a:b] for a, b in spans])
        late = s.embedder.embed_late([c.text], [spans])[1]
    assert len(spans) == 3 and np.abs(stored - own).max() < 2e-3    # as the store's other rows were made
    assert np.abs(stored - late).max() > 2e-2                        # which late vectors are not
    with open_store(path, readonly=True) as s: assert s.verify()['problems'] == []   # its fingerprint still holds
