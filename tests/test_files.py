"""The vocabulary's file helpers: one safe file name and one torn-line check for every folder that needs them."""
from pytest_clawswe.files import ends_with_newline, safe_name


def test_safe_name_keeps_a_file_name_and_replaces_the_rest():
    assert safe_name("django__django-11099") == "django__django-11099"
    assert safe_name("a/b c:d") == "a_b_c_d"
    assert safe_name("../x") == ".._x"  # no slash is left, so it stays inside its folder
    assert safe_name("") == "_"
    assert safe_name("a b", fill="-") == "a-b"


def test_ends_with_newline(tmp_path):
    whole, torn = tmp_path / "whole.jsonl", tmp_path / "torn.jsonl"
    whole.write_bytes(b'{"a": 1}\n')
    torn.write_bytes(b'{"a": 1}\n{"b"')
    assert ends_with_newline(whole)
    assert not ends_with_newline(torn)
