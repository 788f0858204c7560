"""contactlab.quiet: native (C-level) output inside the block is dropped, ours before and after kept; loky's
worker-replacement note, warned from its manager thread, is dropped inside the block and no other warning is."""
import subprocess
import sys

CODE = """
import ctypes, os
from contactlab.quiet import native_output_silenced
libc = ctypes.CDLL(None)
print("before", flush=True)
with native_output_silenced(stderr=True):
    libc.printf(b"native stdout inside\\n")
    os.write(2, b"native stderr inside\\n")
libc.printf(b"native after\\n")
libc.fflush(None)
print("after")
"""


def test_native_output_inside_the_block_is_dropped_and_the_rest_kept():
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["before", "native", "after", "after"]
    assert "inside" not in r.stdout + r.stderr


def test_pybullet_and_highs_print_nothing_through_contactlab():
    code = ("from contactlab.quiet import native_output_silenced\n"
            "with native_output_silenced(stderr=True):\n    import pybullet\n"
            "from contactlab.highs import new_highs\nnew_highs().run()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""


def test_loky_replacement_note_from_another_thread_is_dropped_and_other_warnings_kept():
    """The note is warned from loky's manager thread, not the caller's: the block's filter must reach it
    there, and only it (another UserWarning from the same thread still shows, and the note after the block)."""
    code = ("import threading, warnings\n"
            "from contactlab.quiet import loky_worker_replacements_quiet\n"
            "note = 'A worker stopped while some jobs were given to the executor. This can be caused by a memory leak.'\n"
            "def warn(message):\n"
            "    t = threading.Thread(target=lambda: warnings.warn(message, UserWarning)); t.start(); t.join()\n"
            "with loky_worker_replacements_quiet():\n"
            "    warn(note)\n    warn('other inside')\n"
            "warn(note)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "other inside" in r.stderr
    assert r.stderr.count("A worker stopped") == 1
