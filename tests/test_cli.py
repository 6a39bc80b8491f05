"The `ragnb` console command, run as a user runs it: a real subprocess."
import json, subprocess, sys


def ragnb(*args, input=None):
    return subprocess.run([sys.executable, '-m', 'ragnb.cli', *args], input=input, capture_output=True)


def test_sentences_stdin_plain_and_json():
    doc = '## Despliegue\nEl Sr. Pérez instaló la v1.2.3. ¿Funciona?\n\n| a | b |\n'.encode()
    r = ragnb('sentences', '-', input=doc)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == ['## Despliegue', 'El Sr. Pérez instaló la v1.2.3.', '¿Funciona?', '| a | b |']
    r = ragnb('sentences', '--json', '-', input=doc)
    rows = [json.loads(l) for l in r.stdout.decode().splitlines()]
    text = doc.decode()
    assert [text[x['start']:x['end']] for x in rows] == [x['text'] for x in rows]


def test_sentences_bad_input(tmp_path):
    (tmp_path / 'latin1.md').write_bytes('Canción. Ñandú.'.encode('latin-1'))
    r = ragnb('sentences', str(tmp_path / 'latin1.md'))
    assert r.returncode == 2 and b'not valid UTF-8' in r.stderr and b'latin1.md' in r.stderr
    r = ragnb('sentences', str(tmp_path / 'missing.md'))
    assert r.returncode == 2 and b'no such file' in r.stderr
    r = ragnb('sentences', '-', input=b'')
    assert r.returncode == 0 and r.stdout == b''
