"Property tests for ragnb.chunking (hypothesis): size cap, coverage, overlap bound, code line coverage."
import glob, pathlib, re, warnings, zipfile
import pytest
from hypothesis import example, given, settings, strategies as st, HealthCheck

from ragnb.chunking import chunk_markdown, chunk_code, normalize_markdown, normalize_code

WORDS = ['El', 'clúster', 'replica', 'datos.', 'The', 'tenant', 'is', 'isolated.', 'v1.2.3', '¿Cómo?', 'Sr.',
         'RLS', 'x' * 300, 'e.g.', '10.0.0.1']
sentence = st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(lambda ws: ' '.join(ws))
paragraph = st.lists(sentence, min_size=1, max_size=30).map(' '.join)
block = st.one_of(
    paragraph, paragraph,
    st.integers(1, 4).map(lambda n: '#' * n + ' Sección'),
    st.integers(1, 300).map(lambda n: '```sh\n' + '\n'.join(f'echo {i}' for i in range(n)) + '\n```'),
    st.integers(1, 150).map(lambda n: '| a | b |\n|---|---|\n' + '\n'.join(f'| {i} | fila |' for i in range(n))),
    st.integers(1, 30).map(lambda n: '\n'.join(f'- item {i}' for i in range(n))),
    st.integers(2500, 9000).map(lambda n: ('y' * 97 + ' ') * (n // 98)),     # a giant line with spaces
    st.integers(2500, 6000).map(lambda n: 'z' * n),                           # a giant line with none
)
documents = st.lists(block, min_size=1, max_size=14).map(lambda bs: '\n\n'.join(bs))
SETTINGS = dict(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(**SETTINGS)
@given(documents)
def test_markdown_size_coverage_overlap(doc):
    norm, _ = normalize_markdown(doc)
    chunks = chunk_markdown(doc)
    assert chunks
    for c in chunks:
        assert len(c.body) <= 2200                                    # no chunk over max_chars (prefix aside)
        assert norm[c.start_char:c.end_char] == c.body                # bodies are slices of the normalised text
        assert c.overlap <= 200                                       # overlap <= 200 characters
        assert c.start_line <= c.end_line
    # full coverage: the bodies without their overlaps, in order, give back the text (up to the whitespace between)
    pos = 0
    for c in chunks:
        own = c.start_char + c.overlap
        assert own >= pos and not norm[pos:own].strip(), (pos, own, norm[pos:own][:80])
        pos = c.end_char
    assert not norm[pos:].strip()
    joined = ''.join(c.body[c.overlap:] for c in chunks)
    assert re.sub(r'\s', '', joined) == re.sub(r'\s', '', norm)


SHORT_PIECE = ('El\n\n```sh\n' + ''.join(f'echo {i}\n' for i in range(134)) + '```\n\n'   # found by CI: a piece
               + ''.join(f'- item {i}\n' for i in range(21)) + '\n'                       # shorter than the overlap,
               + ''.join(f'- item {i}\n' for i in range(20)) + '\n| a | b |\n|---|---|\n'  # which reached past it
               + ''.join(f'| {i} | fila |\n' for i in range(93)))


@settings(**SETTINGS)
@given(documents)
@example(SHORT_PIECE)
def test_overlap_only_within_section_and_at_boundaries(doc):
    norm, _ = normalize_markdown(doc)
    chunks = chunk_markdown(doc)
    for a, b in zip(chunks, chunks[1:]):
        if b.overlap:
            assert a.section_title == b.section_title
            assert a.body.endswith(b.body[:b.overlap]) or a.body[-b.overlap:].strip() == b.body[:b.overlap].strip()
            s = b.start_char
            assert s == 0 or norm[s - 1].isspace()                    # never mid-word


py_block = st.one_of(
    st.integers(0, 40).map(lambda i: f'def f{i}(x):\n    """Doc {i}."""\n    return x + {i}\n'),
    st.integers(0, 40).map(lambda i: f'@decorator\nclass C{i}:\n' +
                           ''.join(f'    def m{j}(self):\n        return {j}\n' for j in range(i * 4))),
    st.integers(0, 9).map(lambda i: f'import mod{i}\nCONST_{i} = {i}\n'),
    st.integers(0, 9).map(lambda i: f'# comment {i}\nprint({i})\n'),
)
ts_block = st.one_of(
    st.integers(0, 40).map(lambda i: f'/** JSDoc {i} */\n'
                                     f'export function f{i}(x: number): number {{\n  return x + {i};\n}}\n'),
    st.integers(0, 40).map(lambda i: f'export class C{i} {{\n' +
                           ''.join(f'  m{j}(): number {{ return {j}; }}\n' for j in range(i * 6)) + '}\n'),
    st.integers(0, 9).map(lambda i: f'import {{ a{i} }} from "./a{i}";\nconsole.log({i});\n'),
    st.integers(0, 9).map(lambda i: f'export interface I{i} {{ a: number }}\nexport type T{i} = string;\n'),
)


def check_code(src, language):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        chunks = chunk_code(src, language=language)
    lines = normalize_code(src)[0].split('\n')
    covered = set()
    prev_end = 0
    for c in chunks:
        assert len(c.body) <= 2200
        assert c.start_line >= prev_end or (c.start_line == prev_end and c.start_line == c.end_line), \
            'line ranges overlap'
        covered.update(range(c.start_line, c.end_line + 1))
        prev_end = c.end_line
    nonblank = {i + 1 for i, l in enumerate(lines) if l.strip()}
    assert nonblank <= covered, sorted(nonblank - covered)[:5]


@settings(**SETTINGS)
@given(st.lists(py_block, min_size=1, max_size=12).map('\n\n'.join))
def test_python_line_ranges_cover_everything(src): check_code(src, 'python')


@settings(**SETTINGS)
@given(st.lists(ts_block, min_size=1, max_size=12).map('\n'.join))
def test_typescript_line_ranges_cover_everything(src): check_code(src, 'typescript')


@settings(**SETTINGS)
@given(st.lists(ts_block, min_size=1, max_size=6).map('\n'.join), st.integers(0, 200))
def test_broken_code_falls_back_without_loss(src, cut):
    check_code(src[:cut] + ' {{ ((( ' + src[cut:], 'typescript')


go_block = st.one_of(
    st.integers(0, 40).map(lambda i: f'// F{i} adds.\nfunc F{i}(x int) int {{\n\treturn x + {i}\n}}\n'),
    st.integers(0, 40).map(lambda i: f'type S{i} struct {{\n' + ''.join(f'\tA{j} int\n' for j in range(i * 8))
                           + '}\n'),
    st.integers(0, 40).map(lambda i: f'func (s *S) M{i}() {{\n' + ''.join(f'\ts.n += {j}\n' for j in range(i * 9))
                           + '}\n'),
    st.integers(0, 9).map(lambda i: f'const C{i} = {i}\nvar v{i} = "x"\n'),
)
java_block = st.one_of(
    st.integers(0, 40).map(lambda i: f'/** Class {i}. */\npublic class C{i} {{\n' +
                           ''.join(f'  /** M{j}. */\n  int m{j}() {{\n    return {j};\n  }}\n'
                                   for j in range(i * 3)) +
                           ''.join(f'  static class N{j} {{\n    int k() {{ return {j}; }}\n  }}\n'
                                   for j in range(i % 4))
                           + '}\n'),
    st.integers(0, 9).map(lambda i: f'interface I{i} {{\n  void a();\n  void b();\n}}\n'),
)
c_block = st.one_of(
    st.integers(0, 40).map(lambda i: f'/* f{i} */\nstatic int f{i}(int x)\n{{\n' +
                           ''.join(f'    x += {j};\n' for j in range(i * 5)) + '    return x;\n}\n'),
    st.integers(0, 9).map(lambda i: f'#define M{i}(a) ((a) + {i})\nint p{i}(int);\n'),
    st.integers(0, 9).map(lambda i: f'typedef struct s{i} {{\n  int a;\n  int b;\n}} s{i}_t;\n'),
    st.integers(0, 4).map(lambda i: f'#ifdef __cplusplus\nextern "C" {{\n#endif\nvoid g{i}(void);\n'),
)
CODE_SHAPES = {  # language: (a class's head, a method, its end; a function's head, a statement, its end; loose lines)
    'php': ('/** C{i}. */\nclass C{i} extends B {{\n    const K = {i};\n',
            '    public function m{j}() {{\n        return {j};\n    }}\n', '}}\n',
            'function f{i}($x) {{\n', '    $x += {j};\n', '    return $x;\n}}\n',
            'namespace N{i};\nuse A\\B{i};\n$v{i} = {i};\n'),
    'ruby': ('# C{i}.\nclass C{i} < B\n', '  def m{j}\n    {j}\n  end\n', 'end\n',
             'def f{i}(x)\n', '  x += {j}\n', '  x\nend\n', 'require "r{i}"\nV{i} = {i}\n'),
    'kotlin': ('/** C{i}. */\nclass C{i} {{\n', '    fun m{j}(): Int {{\n        return {j}\n    }}\n', '}}\n',
               'fun f{i}(x: Int): Int {{\n', '    val y{j} = x + {j}\n', '    return x\n}}\n',
               'import a.b{i}\nval v{i} = {i}\n'),
    'perl': ('package P{i} {{\n', '    sub m{j} {{ return {j}; }}\n', '}}\n',
             '=head2 f{i}\n\nDoes {i}.\n\n=cut\n\nsub f{i} {{\n', '    my $x{j} = {j};\n', '    return 1;\n}}\n',
             'package Q{i};\nuse strict;\nour $v{i} = {i};\n'),
    'sql': ('-- T{i}.\nCREATE TABLE t{i} (\n  id int,\n', '  c{j} text,\n', '  z int\n);\n',
            'CREATE FUNCTION f{i}(x int) RETURNS int AS $$\nBEGIN\n', '  x := x + {j}; -- {j};\n',
            '  RETURN x;\nEND;\n$$ LANGUAGE plpgsql;\n',
            "GRANT SELECT ON t{i} TO r;\nINSERT INTO t VALUES ({i}, 'a;b');\n")}


def shaped_blocks(cls, method, cls_end, fn, stmt, fn_end, loose):
    "Random code of one language: classes of methods, functions of statements, loose lines."
    many = lambda i, k, line: ''.join(line.format(j=j) for j in range(i * k))
    return st.one_of(st.integers(0, 40).map(lambda i: cls.format(i=i) + many(i, 3, method) + cls_end.format()),
                     st.integers(0, 40).map(lambda i: fn.format(i=i) + many(i, 9, stmt) + fn_end.format()),
                     st.integers(0, 9).map(lambda i: loose.format(i=i)))


GRAMMAR_BLOCKS = [('go', go_block), ('java', java_block), ('c', c_block), ('cpp', c_block),
                  *((language, shaped_blocks(*shape)) for language, shape in CODE_SHAPES.items())]


@pytest.mark.parametrize('language,blocks', GRAMMAR_BLOCKS)
def test_grammar_line_ranges_cover_everything(language, blocks):
    head = '<?php\n' if language == 'php' else ''
    @settings(**SETTINGS)
    @given(st.lists(blocks, min_size=1, max_size=10).map('\n'.join), st.integers(0, 400), st.booleans())
    def check(src, cut, broken):                     # broken: garbage in the middle, what a grammar cannot read
        check_code(head + (src[:cut] + ' {{ ((( ' + src[cut:] if broken else src), language)
    check()


def test_a_name_that_a_parse_error_runs_on_stays_one_line():   # found by the test above on another machine
    src = ('typedef s {{ ((( truct s0 {\n  int a;\n  int b;\n} s0_t;\n\n/* f15 */\nstatic int f15(int x)\n{\n'
           + ''.join(f'    x += {j};\n' for j in range(75))
           + '    return x;\n}\n\n#define M0(a) ((a) + 0)\nint p0(int);\n')
    for language in ('c', 'cpp'): check_code(src, language)


def installed_code() -> list[tuple[str, str, str]]:
    """(name, text, language) of real code installed here: C headers, zlib's examples, a JDK's sources, PostgreSQL's
    SQL; [] without."""
    out = [(p, pathlib.Path(p).read_text(errors='replace'), 'cpp') for p in sorted(glob.glob('/usr/include/*.h'))[:40]]
    out += [(p, pathlib.Path(p).read_text(errors='replace'), 'c')
            for p in sorted(glob.glob('/usr/share/doc/zlib1g-dev/examples/*.c'))]
    out += [(p, pathlib.Path(p).read_text(errors='replace'), 'go')
            for p in sorted(glob.glob('/usr/share/doc/git/contrib/persistent-https/*.go'))]
    out += [(p, pathlib.Path(p).read_text(errors='replace'), 'sql')
            for p in sorted(glob.glob('/usr/share/postgresql/*/extension/*.sql'))[:30]]
    for src in [p for p in sorted(glob.glob('/usr/lib/jvm/*/lib/src.zip')) if pathlib.Path(p).is_file()][:1]:
        with zipfile.ZipFile(src) as z:
            names = sorted(n for n in z.namelist() if n.startswith('java.base/java/util/concurrent/'))[:25]
            out += [(n, z.read(n).decode('utf-8', 'replace'), 'java') for n in names if n.endswith('.java')]
    return out


def test_installed_code_is_covered_by_declarations():
    files = installed_code()
    if not files: pytest.skip('no C headers, zlib examples, Go or JDK sources installed here')
    titled = 0
    for name, text, language in files:
        check_code(text, language)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            titled += sum(bool(c.section_title) for c in chunk_code(text, language=language, source=name))
    assert titled >= len(files)                   # declarations are found, not only line windows


def test_ten_megabyte_single_line():
    line = ('palabra ' * 1_310_720)[:10_485_760]
    chunks = chunk_markdown(line)
    assert all(len(c.body) <= 2200 for c in chunks)
    assert ''.join(c.body[c.overlap:] for c in chunks).replace(' ', '') == line.replace(' ', '')


spaced = st.lists(st.tuples(block, st.integers(2, 6)), min_size=1, max_size=12).map(   # blank-line runs of any length
    lambda bs: ''.join(b + '\n' * k for b, k in bs))


@settings(**SETTINGS)
@given(spaced, st.sampled_from(['documental-v2', 'documental_jerarquico-v1']), st.data())
def test_each_body_line_cites_its_source_line(doc, chunker, data):
    "`Chunk.line_runs` put each line of a chunk's body on the source line it was read from; `place` cites any part."
    import ragnb.hierarchy  # noqa: F401  (registers the tree's chunker)
    from ragnb.chunking import chunk_text
    src = doc.split('\n')
    for c in chunk_text(doc, 'doc.md', strategies={'documental': chunker}):
        body = c.body.split('\n')
        for i, line in enumerate(body):
            at = c.place(sum(len(x) + 1 for x in body[:i]), sum(len(x) + 1 for x in body[:i]) + len(line))
            got = src[at['start_line'] - 1]
            edge = i in (0, len(body) - 1)             # a chunk may start or end inside a long line
            assert (line in got if edge else got == line or not line.strip() and not got.strip()), (i, line)
        assert c.place(0, len(c.body)) == dict(start_line=c.start_line, end_line=c.end_line)
        a = data.draw(st.integers(0, len(c.body)))
        b = data.draw(st.integers(a, len(c.body)))
        part = c.place(a, b)
        assert c.start_line <= part['start_line'] <= part['end_line'] <= c.end_line


MARKUP_LINES = ['Title', '=====', '-----', '', '   ', 'Run this::', '::', '   code line', '      deeper code',
                '.. note::', '.. versionadded:: 3.13', '.. code-block:: bash', '   :caption: x', '.. toctree::',
                '.. _label:', '.. a comment', '.. function:: f(x)', 'See :ref:`the guide <guide>` and ``x``.',
                ':func:`os.path.join` and `text <https://x.org>`_', 'a :ref:`split', 'role <target>` here',
                '[[Page|alias]] and ![[p.png]]', '> [!NOTE]', ':::tip Title', ':::', '!!! note "T"', '    body',
                '%% hidden %%', '%%', '```', '~~~', 'plain words ^id', '* item', '    indented']
markup = st.lists(st.sampled_from(MARKUP_LINES), min_size=1, max_size=60).map('\n'.join)


@settings(**SETTINGS)
@given(markup)
def test_markup_rewrites_keep_each_line_in_place(text):
    "reStructuredText's and wikis' rewrites are line for line, whatever the mix: citations' lines stay right."
    from ragnb.chunking import rst_as_markdown
    from ragnb.readers import markdown_extensions
    assert rst_as_markdown(text).count('\n') == text.count('\n')
    assert markdown_extensions(text).count('\n') == text.count('\n')
    assert rst_as_markdown(rst_as_markdown(text)).count('\n') == text.count('\n')
