import pytest

from pytest_clawswe.swe.instance.patch import clean_patch, count_changed_lines, section_path, split_sections


def section(path, body="@@ -1 +1 @@\n-a\n+b\n", header=None):
    header = header or f"diff --git a/{path} b/{path}"
    return f"{header}\nindex 1..2 100644\n--- a/{path}\n+++ b/{path}\n{body}"


def test_keeps_source_changes_and_drops_lockfiles_and_manifests():
    raw = section("src/app.py") + section("Cargo.lock") + section("sub/package-lock.json") + section("go.sum") \
        + section("lib/pyproject.toml")
    clean, dropped = clean_patch(raw)
    assert [section_path(s) for s in split_sections(clean)] == ["src/app.py"]
    # sub/ and lib/ end in b: the released substring rule ("b/<name>" in the header) drops them
    assert sorted(d.split(":")[0] for d in dropped) == ["Cargo.lock", "go.sum", "lib/pyproject.toml",
                                                        "sub/package-lock.json"]


@pytest.mark.parametrize("path, dropped", [
    # the released rule: `a/<name>` or `b/<name>` anywhere in the diff --git line (issue 13 §6)
    ("setup.py", True), ("go.sum", True), ("Cargo.lock", True), ("tox.ini", True), ("yarn.lock", True),
    ("src/pkg/setup.py", False),  # nested: kept
    ("crates/core/Cargo.lock", False), ("pkg/x/go.sum", False),
    ("lib/setup.py", True), ("data/go.sum", True),  # a parent folder ending in a or b: dropped, as released
    ("setup.pyi", True), ("go.sum.orig", True),  # a name starting with a listed one: dropped, as released
    ("setup.cfg", False), ("my_setup.py", False), ("Cargo.toml", False),
])
def test_excluded_files_follow_the_released_rule(path, dropped):
    clean, reasons = clean_patch(section(path))
    assert bool(reasons) == dropped and (clean == "") == dropped


def test_a_kept_patch_is_not_rstripped():
    # the released clean_patch ended with rstrip(): a hunk whose last context line is blank lost it and no
    # longer applied; ours keeps every byte of a kept section
    body = "@@ -1,3 +1,3 @@\n-a\n+b\n c\n \n"
    clean, _ = clean_patch(section("x.py", body))
    assert clean == section("x.py", body)


def test_drops_binary_sections_and_non_ascii_paths():
    binary = "diff --git a/img.png b/img.png\nindex 1..2 100644\nBinary files a/img.png and b/img.png differ\n"
    quoted = section("x", header='diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"')
    clean, dropped = clean_patch(section("ok.py") + binary + quoted)
    assert [section_path(s) for s in split_sections(clean)] == ["ok.py"]
    assert any("binary" in d for d in dropped) and any("non-ASCII" in d for d in dropped)


def test_changed_lines_ignore_file_headers():
    patch = section("a.py", "@@ -1,2 +1,2 @@\n-x\n+y\n context\n")
    assert count_changed_lines(patch) == 2
    assert count_changed_lines("diff --git a/a b/a\nold mode 100644\nnew mode 100755\n") == 0


def test_a_lockfile_named_like_a_directory_is_kept_only_when_nested():
    clean, dropped = clean_patch(section("src/go.sum.d/real.go"))
    assert dropped == [] and "real.go" in clean
    clean, dropped = clean_patch(section("go.sum.d/real.go"))  # "a/go.sum" is in the header: released drops it
    assert dropped == ["go.sum.d/real.go: lockfile or build manifest"]


def test_drops_sections_whose_bytes_are_not_utf8():
    latin1 = section("legacy.c", "@@ -1 +1 @@\n-a\n+caf\ufffd\n")  # how collection decodes a stray byte
    clean, dropped = clean_patch(section("ok.c") + latin1)
    assert [section_path(s) for s in split_sections(clean)] == ["ok.c"]
    assert dropped == ["legacy.c: non-UTF-8 content"]
