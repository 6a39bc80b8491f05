"The package's face: the public names it supports, what `import ragnb` loads, and an import graph without cycles."
import ast, importlib, json, re, subprocess, sys
from pathlib import Path

import ragnb

PKG = Path(ragnb.__file__).parent

PUBLIC = [   # changing this list is an API change: say so in the README and the notebook `00a_api`
    'StoreAPI', 'open_store', 'Store', 'StoreError', 'StoreLockedError', 'StoreMismatchError', 'StoreCorruptedError',
    'ShardedStore', 'Chunk', 'chunk_text', 'chunk_file', 'Document', 'read_document', 'split_sentences', 'Embedder',
    'IndexReport', 'index_paths', 'open_for_indexing', 'open_default_store', 'retrieve', 'RetrieveOpts',
    'RetrievalResult',
    'TrimmedChunk', 'trim_chunks_by_sentence', 'estimate_tokens', 'build_query_vec', 'EvalQuestion', 'EvalReport',
    'load_questions', 'eval_retrieval', 'calibrate', 'RetrievalService', 'ServeLimits', 'open_service',
    'index_with_ray', 'open_on_ray']


def test_the_public_names_are_pinned_and_each_is_its_module_s_own():
    assert ragnb.__all__ == PUBLIC
    for name in PUBLIC:
        obj = getattr(ragnb, name)
        home = f'ragnb.{ragnb._HOME[name]}'
        assert getattr(sys.modules[home], name) is obj, name
    assert callable(ragnb.retrieve) and ragnb.retrieve.__module__ == 'ragnb.retrieve'


def test_an_unknown_name_is_an_attribute_error():
    try: ragnb.UNLINK_ON_THREAD
    except AttributeError as e: assert "has no attribute 'UNLINK_ON_THREAD'" in str(e)
    else: raise AssertionError('an internal name came through the package')


def test_import_ragnb_loads_no_model_runtime_server_or_cluster_code():
    code = ('import sys, json, ragnb; print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in '
            '("torch", "transformers", "onnxruntime", "mcp", "ray", "py3langid", "uvicorn") '
            'or m in ("ragnb.serve", "ragnb.eval", "ragnb.scale", "ragnb.ingest"))))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def ragnb_imports(path:Path) -> set[str]:
    "The ragnb modules one file imports, at any depth (imports inside functions count: they are still arrows)."
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ''
            if node.level: out.add(mod.split('.')[0] if mod else '__init__')
            elif mod.split('.')[0] == 'ragnb': out.add(mod.split('.')[1] if '.' in mod else '__init__')
        elif isinstance(node, ast.Import):
            out |= {a.name.split('.')[1] for a in node.names if a.name.startswith('ragnb.')}
    return out - {path.stem}


def test_the_package_import_graph_has_no_cycle():
    graph = {p.stem: ragnb_imports(p) for p in PKG.glob('*.py') if p.stem != '_modidx'}
    graph['__init__'] = set()   # the package face imports down (retrieve, lazily the rest): never part of a cycle
    assert graph['index'] >= {'embed', 'vectors', 'lexical_index', 'filters', 'sentence_file', 'storage'}
    assert 'shards' not in graph['index']
    for part in ('storage', 'vectors', 'lexical_index', 'filters', 'sentence_file'):      # the store's parts: below it
        assert not graph[part] & {'index', 'shards', 'stores', 'ingest', 'retrieve', 'scale'}, (part, graph[part])
    state, cycles = {}, []

    def visit(m, trail):
        state[m] = 'open'
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 'open': cycles.append(trail[trail.index(n):] + [n])
            elif n not in state: visit(n, trail + [n])
        state[m] = 'done'

    for m in sorted(graph):
        if m not in state: visit(m, [m])
    assert cycles == [], cycles


def test_no_class_has_more_than_thirty_methods():
    "A class that grows past 30 methods (functions, properties, class and static methods) is split into parts."
    import importlib, inspect
    sizes = {}
    for p in PKG.glob('*.py'):
        if p.stem in ('_modidx', '__init__'): continue
        mod = importlib.import_module(f'ragnb.{p.stem}')
        for name, cls in vars(mod).items():
            if inspect.isclass(cls) and cls.__module__ == mod.__name__:
                sizes[f'{p.stem}.{name}'] = sum(inspect.isfunction(v) or isinstance(v, (property, classmethod,
                                                staticmethod)) for v in vars(cls).values())
    assert sizes['index.Store'] > 20 and sizes['shards.ShardedStore'] > 20            # the walk saw them
    assert {k: n for k, n in sizes.items() if n > 30} == {}


NBS = Path(__file__).resolve().parent.parent / 'nbs'


def exported_runs(nb:Path) -> list[tuple[int, int]]:
    "(length, first cell) of each run of exported cells with no demo or test among them; prose does not break one."
    runs, n, start = [], 0, None
    for i, c in enumerate(json.loads(nb.read_text(encoding='utf-8'))['cells']):
        src = ''.join(c['source'])
        if c['cell_type'] != 'code' or src.startswith(('#| hide', '#| default_exp')) or not src.strip(): continue
        if src.startswith('#| export'):
            n, start = n + 1, start if n else i
        else:
            if n: runs.append((n, start))
            n = 0
    return runs + [(n, start)] * bool(n)


def test_notebooks_show_each_exported_cell_within_three():
    "fastcore's rhythm: no more than three exported cells in a row before a demo or a test."
    long = {nb.name: [r for r in exported_runs(nb) if r[0] > 3] for nb in sorted(NBS.glob('*.ipynb'))}
    assert {k: v for k, v in long.items() if v} == {}
    assert exported_runs(NBS / '09_cli.ipynb') and exported_runs(NBS / '03_index.ipynb')   # the walk saw them


BENCH = PKG.parent / 'bench'

IMPORT_CASES = [   # (a script, the names it imports from ragnb)
    ('from ragnb.index import Store\n', [(1, 'ragnb.index', 'Store')]),
    ('def f():\n    from ragnb.index import sentence_texts, Store as S\n',
     [(2, 'ragnb.index', 'sentence_texts'), (2, 'ragnb.index', 'Store')]),
    ('import numpy\nfrom corpus import corpus_dir\nfrom . import x\n', []),
]


def names_from_ragnb(source:str) -> list[tuple[int, str, str]]:
    "Every `from ragnb... import name` in a script, at any depth (benchmarks import inside functions)."
    return [(node.lineno, node.module, alias.name) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and (node.module or '').split('.')[0] == 'ragnb'
            for alias in node.names]


def missing_names(imports:list) -> list[str]:
    "The `(line, module, name)` imports whose module lacks the name."
    return [f'{line}: {module}.{name}' for line, module, name in imports
            if not hasattr(importlib.import_module(module), name)]


def test_every_name_a_benchmark_imports_from_ragnb_exists():
    """A benchmark imports inside the function that needs it, so a name moved between modules shows only when a run
    gets there, minutes in: `bench_embed_settings.py` imported `sentence_texts` from `ragnb.index` long after it
    moved to `ragnb.sentence_file`. CI runs no benchmark; this reads them all."""
    for source, expected in IMPORT_CASES: assert names_from_ragnb(source) == expected, source
    assert missing_names(IMPORT_CASES[1][1]) == ['2: ragnb.index.sentence_texts']
    missing = [f'{f.name}:{m}' for f in sorted(BENCH.glob('*.py'))
               for m in missing_names(names_from_ragnb(f.read_text()))]
    assert missing == []


PRIVATE_CASES = [  # (a script, the private attributes it uses that neither it nor ragnb defines)
    ('s._rebuild_lexical()\n', ['_rebuild_lexical']),                 # a method that became `s.lexical.rebuild()`
    ('enc._session = onnx\n', ['_session']),                           # set, and never read again
    ('class E:\n    def __init__(self, e): self._emb = e\n    def f(self): return self._emb\n', []),   # its own
    ('store._snapshot()\nx.__class__\n', []),                          # ragnb's, and a dunder
]
THIRD_PARTY_PRIVATE = {'_p'}   # python-docx's paragraph element, which bench_office writes content controls into
RAGNB_SOURCE = '\n'.join(f.read_text() for f in sorted(PKG.glob('*.py')))


def defines(source:str, name:str) -> bool:
    "Whether `source` defines `name`: a def or class, a module-level name, or an attribute of `self`."
    return re.search(rf'\b(def|class)\s+{name}\b|^{name}\s*[:=]|\bself\.{name}\b', source, re.M) is not None


def unknown_private(source:str) -> list[str]:
    "The `x._name` a script uses (not dunders) that neither it, ragnb nor a library it drives defines."
    used = {n.attr for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Attribute) and n.attr.startswith('_') and not n.attr.startswith('__')}
    return sorted(n for n in used - THIRD_PARTY_PRIVATE if not defines(source, n) and not defines(RAGNB_SOURCE, n))


def test_every_private_attribute_a_benchmark_uses_exists():
    """A benchmark that reaches into ragnb (`Store._snapshot`, an encoder's sessions) breaks, or worse measures the
    wrong thing, when the inside changes: `bench_runtimes.py` set `enc._session`, which the encoder had stopped
    reading, so its int8 and OpenVINO rows ran fp32 ONNX Runtime."""
    assert [unknown_private(src) for src, _ in PRIVATE_CASES] == [want for _, want in PRIVATE_CASES]
    assert {f.name: u for f in sorted(BENCH.glob('*.py')) if (u := unknown_private(f.read_text()))} == {}
