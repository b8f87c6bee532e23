#!/bin/bash
set -uxo pipefail
exec 2>&1
cd /testbed
git config --global --add safe.directory /testbed
git status
git show --stat HEAD
git -c core.fileMode=false diff 00b987e0f8a1f99c6dd04aac2121e6f83c09180c
git checkout 00b987e0f8a1f99c6dd04aac2121e6f83c09180c -- tests/test_stats.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_stats.py b/tests/test_stats.py
index 55eaa8c..5cdb597 100644
--- a/tests/test_stats.py
+++ b/tests/test_stats.py
@@ -27,3 +27,8 @@ def test_clamp_inside():
 
 def test_clamp_below_and_above():
     assert (clamp(-1, 0, 10), clamp(11, 0, 10)) == (0, 10)
+
+
+def test_median_even_count():
+    assert median([4, 1, 3, 2]) == 2.5
+    assert median([1, 2]) == 1.5
EOF_114329324912
: '>>>>> Start Test Output'
python3 -m pytest -rA -p no:cacheprovider tests
: '>>>>> End Test Output'
git checkout 00b987e0f8a1f99c6dd04aac2121e6f83c09180c -- tests/test_stats.py
