"""The test VM's bytecode cache for Ansible's zipped module sources (tests/vm/ansiballz_bytecode.py):
the code it gives back is the code compile() makes, named after the zip it came from this time; a
damaged entry is compiled again, never trusted."""

import importlib.util
import marshal
import zipimport
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[1] / "vm" / "ansiballz_bytecode.py"
SOURCE = b"def inner():\n    def deeper():\n        return 1 / 0\n    return deeper\n\nANSWER = 42\n"


@pytest.fixture(scope="module")
def hook():
    spec = importlib.util.spec_from_file_location("ansiballz_bytecode", HOOK)
    module = importlib.util.module_from_spec(spec)
    before = zipimport._compile_source
    spec.loader.exec_module(module)
    # Here, where the guest's cache directory does not exist, importing it changes nothing.
    assert not Path(module.CACHE).exists() and zipimport._compile_source is before
    return module


def counting(calls):
    def compile_source(pathname, source):
        calls.append(pathname)
        return compile(source, pathname, "exec", dont_inherit=True)
    return compile_source


def names(code):
    yield code.co_filename
    for const in code.co_consts:
        if isinstance(const, type(code)):
            yield from names(const)


def test_a_second_payload_is_served_from_the_cache_under_its_own_name(hook, tmp_path):
    calls = []
    compile_source = hook.cached(counting(calls), cache=str(tmp_path))
    first = compile_source("/tmp/ansible_ping_payload_a/payload.zip/m.py", SOURCE)
    second = compile_source("/tmp/ansible_ping_payload_b/payload.zip/m.py", SOURCE)
    assert calls == ["/tmp/ansible_ping_payload_a/payload.zip/m.py"]
    assert set(names(second)) == {"/tmp/ansible_ping_payload_b/payload.zip/m.py"}
    assert second.co_code == first.co_code
    namespace = {}
    exec(second, namespace)
    assert namespace["ANSWER"] == 42
    with pytest.raises(ZeroDivisionError) as raised:
        namespace["inner"]()()
    assert str(raised.traceback[-1].path) == "/tmp/ansible_ping_payload_b/payload.zip/m.py"
    # Other source, another entry.
    compile_source("/tmp/x/payload.zip/m.py", SOURCE + b"OTHER = 1\n")
    assert len(calls) == 2


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", marshal.dumps(42), "cut"])
def test_a_damaged_entry_is_compiled_again_and_replaced(hook, tmp_path, damage):
    calls = []
    compile_source = hook.cached(counting(calls), cache=str(tmp_path))
    compile_source("/a/m.py", SOURCE)
    [entry] = [path for path in tmp_path.rglob("*") if path.is_file()]
    kept = entry.read_bytes()
    entry.write_bytes(kept[: len(kept) // 2] if damage == "cut" else damage)
    code = compile_source("/b/m.py", SOURCE)
    assert calls == ["/a/m.py", "/b/m.py"] and code.co_filename == "/b/m.py"
    assert marshal.loads(entry.read_bytes()).co_code == marshal.loads(kept).co_code == code.co_code


def test_an_unwritable_cache_only_compiles(hook, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    calls = []
    compile_source = hook.cached(counting(calls), cache=str(blocked))
    for _ in range(2):
        assert compile_source("/a/m.py", SOURCE).co_filename == "/a/m.py"
    assert calls == ["/a/m.py", "/a/m.py"]
