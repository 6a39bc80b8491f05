"""The `ragnb` command run by `ragnb.cli.main` in the test's own process: the same parsing, output and exit codes as
a subprocess, without a fresh interpreter, torch import and model load for every call."""
import contextlib, io
from types import SimpleNamespace

from ragnb.cli import main


def ragnb_main(*args, text:bool=False) -> SimpleNamespace:
    "`ragnb ARGS`: `returncode`, and `stdout` and `stderr` as bytes (as `subprocess.run` gives them), or str if `text`."
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try: rc = main([str(a) for a in args])
        except SystemExit as e: rc = e.code            # argparse refuses a bad flag by exiting
    got = (out.getvalue(), err.getvalue()) if text else (out.getvalue().encode(), err.getvalue().encode())
    return SimpleNamespace(returncode=rc, stdout=got[0], stderr=got[1])
