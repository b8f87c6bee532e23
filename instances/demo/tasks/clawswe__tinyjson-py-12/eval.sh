#!/bin/bash
set -uxo pipefail
# one output stream: docker reads stdout and stderr through separate pipes and can
# splice a stderr chunk (cargo's progress, this script's trace) into a half-read line
exec 2>&1
cd /testbed
git config --global --add safe.directory /testbed
git status
git show --stat HEAD
git -c core.fileMode=false diff 60da45b6b6277489a69c8e4cbfb2958bc47bff23
git checkout 60da45b6b6277489a69c8e4cbfb2958bc47bff23 -- tests/test_decoder.py tests/test_encoder.py tests/test_roundtrip.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_decoder.py b/tests/test_decoder.py
index 0f8778a..f620f23 100644
--- a/tests/test_decoder.py
+++ b/tests/test_decoder.py
@@ -39,6 +39,17 @@ def test_unicode_escape_bmp():
     assert tinyjson.loads(r'"caf\u00e9 \u20AC"') == "café €"
 
 
+def test_surrogate_pair_escape():
+    assert tinyjson.loads(r'"I \ud83d\udc99 JSON"') == "I \U0001F499 JSON"
+    assert tinyjson.loads(r'["\uD834\uDD1E"]') == ["\U0001D11E"]
+
+
+def test_unpaired_surrogates_kept():
+    assert tinyjson.loads(r'"\ud83d"') == "\ud83d"
+    assert tinyjson.loads(r'"\ud83dA\udc99"') == "\ud83dA\udc99"
+    assert tinyjson.loads(r'"\ud83d\u0041"') == "\ud83dA"
+
+
 def test_raw_non_ascii_passes_through():
     assert tinyjson.loads('"Grüße 💙"') == "Grüße 💙"
 
diff --git a/tests/test_encoder.py b/tests/test_encoder.py
index bf0fbfd..b2658cf 100644
--- a/tests/test_encoder.py
+++ b/tests/test_encoder.py
@@ -30,6 +30,10 @@ def test_ascii_only_bmp():
     assert tinyjson.dumps("naïve €", ascii_only=True) == r'"na\u00efve \u20ac"'
 
 
+def test_ascii_only_astral_character():
+    assert tinyjson.dumps("I \U0001F499", ascii_only=True) == r'"I \ud83d\udc99"'
+
+
 def test_ascii_only_keys():
     assert tinyjson.dumps({"é": 1}, ascii_only=True) == r'{"\u00e9":1}'
 
diff --git a/tests/test_roundtrip.py b/tests/test_roundtrip.py
index 221c3e9..f2b7d7f 100644
--- a/tests/test_roundtrip.py
+++ b/tests/test_roundtrip.py
@@ -10,6 +10,7 @@ DOCUMENTS = {
     "escapes": ["tab\there", "quote\"", "back\\slash", "\x01"],
     "non-ascii": {"city": "Zürich", "price": "12 €"},
     "big-int": [2**70, -(2**70)],
+    "astral": {"emoji": "I \U0001F499 JSON", "\U0001D11E": "clef"},
 }
 
 
EOF_114329324912
: '>>>>> Start Test Output'
python3 -m pytest -rA -p no:cacheprovider tests
: '>>>>> End Test Output'
git checkout 60da45b6b6277489a69c8e4cbfb2958bc47bff23 -- tests/test_decoder.py tests/test_encoder.py tests/test_roundtrip.py
