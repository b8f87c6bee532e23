#!/bin/bash
set -uxo pipefail
exec 2>&1
cd /testbed
git config --global --add safe.directory /testbed
git status
git show --stat HEAD
git -c core.fileMode=false diff e7881ae444c6413097fb3dd1f1fbbfa1375f76db
git checkout e7881ae444c6413097fb3dd1f1fbbfa1375f76db -- tests/test_stats.py
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
git checkout e7881ae444c6413097fb3dd1f1fbbfa1375f76db -- tests/test_stats.py
