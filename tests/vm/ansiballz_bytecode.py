"""Installed in the test VM's image only (tests/vm/image.sh), never on a benchmark host: a bytecode
cache for the Python that Ansible sends with every task.

Ansible ships each module as a zip of sources (AnsiballZ) that the host's Python imports from the
zip, which keeps no bytecode: every task compiles ansible.module_utils afresh. Under TCG that
compile is over a second of each task's ~5 (measured in the guest: a ping's payload 3.7-4.2 s as
shipped, 2.7 s with bytecode), and a VM play runs hundreds of tasks. This hook, imported at every
Python start by a .pth file, keeps the code compiled from a zip's source keyed by the source's
SHA-256 and this Python's magic number, one directory per user; the code object is the one
compile() makes, with its file names set back to the zip's path, so tracebacks read as without it.
Any trouble with the cache (unreadable, unwritable, a damaged entry) falls back to compiling."""

import os
import zipimport

# Made by tests/vm/image.sh (mode 1777, each user's entries in a 0700 directory of their own):
# where it is missing, importing this module changes nothing.
CACHE = "/var/cache/innomatrix-vm-bytecode"


def _with_filename(code, filename):
    consts = tuple(_with_filename(const, filename) if isinstance(const, type(code)) else const
                   for const in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def cached(compile_source, cache=CACHE):
    """compile_source (zipimport's: (pathname, source bytes) -> code), its results kept in cache."""
    def cached_compile_source(pathname, source):
        import hashlib
        import importlib.util
        import marshal

        directory = os.path.join(cache, str(os.getuid()))
        entry = os.path.join(directory, importlib.util.MAGIC_NUMBER.hex() + hashlib.sha256(source).hexdigest())
        try:
            with open(entry, "rb") as kept:
                return _with_filename(marshal.loads(kept.read()), pathname)
        except Exception:  # missing, unreadable or damaged (not even a code object): compiled as without it
            pass
        code = compile_source(pathname, source)
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            partial = f"{entry}.{os.getpid()}"
            with open(partial, "wb") as out:
                out.write(marshal.dumps(code))
            os.replace(partial, entry)
        except OSError:
            pass
        return code

    return cached_compile_source


if os.path.isdir(CACHE) and hasattr(zipimport, "_compile_source"):
    zipimport._compile_source = cached(zipimport._compile_source)
