"Property tests for ragnb.sentences: spans are ordered, disjoint, non-empty, stripped, and cover all text."
import re
from hypothesis import given, settings, strategies as st

from ragnb.sentences import sentence_spans, split_sentences, split_chunk_prefix

# Text built from the pieces that matter to the splitter: words, terminators, abbreviations, markdown markers,
# fences, numbers, quotes and every kind of whitespace.
PIECES = ['Hola', 'world', 'Sr.', 'e.g.', 'U.S.', 'v1.2.3', '3.14', '192.168.1.1', 'config.yaml', '. ', '? ', '! ',
          '...', ' . . . ', '¿', '¡', '"', "'", '«', '»', '(', ')', '[...]', '\n', '\n\n', '  ', '\t', '# ', '## ',
          '| a | b |', '- ', '* ', '1. ', '2) ', 'a. ', '> ', '```', '~~~', '`code. X`', 'El', 'The', 'f.3022',
          '•', '⁃9. ', 'x', 'ñandú', '\r\n', '2. 2', 'Fin.']
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), max_size=60).map(''.join)


def check_spans(text, lang=None):
    spans = sentence_spans(text, lang)
    prefix, body = split_chunk_prefix(text)
    start = len(text) - len(body)
    prev = start
    for s, e in spans:
        assert start <= prev <= s < e <= len(text), (spans, text)
        unit = text[s:e]
        assert unit == unit.strip() and unit
        assert not text[prev:s].strip(), f'lost characters {text[prev:s]!r} in {text!r}'
        prev = e
    assert not text[prev:].strip(), f'lost tail {text[prev:]!r}'
    assert split_sentences(text, lang) == [text[s:e] for s, e in spans]


@settings(max_examples=400, deadline=None)
@given(texts, st.sampled_from([None, 'es', 'en']))
def test_spans_cover_ordered_disjoint(text, lang):
    check_spans(text, lang)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=40).filter(lambda t: '\n' not in t and ']' not in t), texts)
def test_prefix_is_kept_apart(title, body):
    text = f'[Doc: {title}]\n{body}'
    prefix, rest = split_chunk_prefix(text)
    assert prefix == f'[Doc: {title}]' and rest == body
    for s, e in sentence_spans(text): assert s >= len(prefix) + 1
    check_spans(text)


def test_adversarial_inputs_are_linear():
    "Inputs that make pysbd hang (its issue #76) come back as one unit; a slow regex would time the test out."
    for text in ['f.3022' * 50_000, '.' * 300_000, '. ' * 150_000, 'a' * 300_000, '?' * 100_000 + ' A']:
        units = split_sentences(text)
        assert len(units) <= 2 and re.sub(r'\s', '', ''.join(units)) == re.sub(r'\s', '', text)
